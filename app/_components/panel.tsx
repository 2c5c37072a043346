import type { ReactNode } from 'react';

/** A titled card: the console's unit of layout. */
export function Panel({
  title,
  summary,
  aside,
  children,
  labelledBy,
}: {
  title: string;
  summary?: ReactNode;
  aside?: ReactNode;
  children: ReactNode;
  labelledBy: string;
}) {
  return (
    <section aria-labelledby={labelledBy} className="overflow-hidden rounded-md border border-zinc-200 bg-white shadow-xs">
      <header className="flex items-center gap-3 border-b border-zinc-200 px-4 py-2.5">
        <h2 id={labelledBy} className="text-[13px] font-semibold">
          {title}
        </h2>
        {summary}
        <div className="ml-auto flex items-center gap-3 text-xs text-zinc-500">{aside}</div>
      </header>
      {children}
    </section>
  );
}

/** When the shown data was read; refreshed data shows a pulse while in flight. */
/**
 * When a panel's data was read. `asOf` (a large project's counts, served as last computed:
 * server/read/figures.ts) says when they were counted instead, so a stored count never
 * passes for a live one; the server recounts them in the background and the next
 * refresh shows the new figures.
 */
export function Freshness({ updatedAt, fetching, asOf }: { updatedAt: number; fetching: boolean; asOf?: Date | null }) {
  return (
    <span className="flex items-center gap-1.5 tabular-nums">
      <span className={`size-1.5 rounded-full ${fetching ? 'animate-pulse bg-sky-500' : asOf ? 'bg-amber-400' : 'bg-zinc-300'}`} aria-hidden />
      {/* Server and browser may format the time in different zones; the browser's wins. */}
      {asOf ? (
        <span
          suppressHydrationWarning
          data-testid="figures-as-of"
          className="text-amber-800"
          title={`Counted at ${asOf.toLocaleTimeString()}, not live: this project is too large to count on every refresh, so the counts are recounted in the background and update by themselves (checked ${new Date(updatedAt).toLocaleTimeString()}).`}
        >
          as of {asOf.toLocaleTimeString()}
        </span>
      ) : (
        <span suppressHydrationWarning>checked {new Date(updatedAt).toLocaleTimeString()}</span>
      )}
    </span>
  );
}

export function LoadError({ what, message }: { what: string; message: string }) {
  return (
    <p role="alert" className="px-4 py-3 text-red-700">
      Could not load {what}: {message}
    </p>
  );
}

/** A list's first read: its error, or a line while it loads; nothing once its data is in. */
export function LoadState({ what, loading, error, pending }: { what: string; loading: string; error: { message: string } | null; pending: boolean }) {
  if (error) return <LoadError what={what} message={error.message} />;
  if (!pending) return null;
  return (
    <p role="status" className="px-4 py-8 text-center text-zinc-500">
      {loading}
    </p>
  );
}

/** How often live panels re-read: often enough to watch a drill, cheap for the database. */
export const LIVE_REFRESH_MS = 5_000;
