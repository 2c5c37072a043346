/**
 * The whole page when the database cannot be reached on a full page load (the layout
 * could not read the session): what is wrong, that nothing needs doing, and a reload
 * every RETRY_SECONDS (the API's Retry-After) that brings the console back by itself.
 * A page already open keeps its content and shows DatabaseBanner instead.
 */
const RETRY_SECONDS = 5;

export function DatabaseUnavailableDocument() {
  return (
    <html lang="en">
      <head>
        <meta httpEquiv="refresh" content={String(RETRY_SECONDS)} />
        <title>Database unreachable · Waypost</title>
      </head>
      <body className="min-h-screen bg-zinc-100">
        <main className="mx-auto mt-24 max-w-lg rounded-md border border-amber-300 bg-amber-50 px-6 py-5 text-amber-950" role="alert" data-testid="database-unavailable">
          <h1 className="text-base font-semibold">Database unreachable, retrying</h1>
          <p className="mt-2">
            The console cannot reach its PostgreSQL database right now, so this page cannot be shown. Nothing is lost:
            workers pause and resume by themselves, and this page reloads every {RETRY_SECONDS} s until the database is
            back.
          </p>
          <p className="mt-2 text-amber-800">If this lasts, check that PostgreSQL is running and that DATABASE_URL points at it.</p>
        </main>
      </body>
    </html>
  );
}
