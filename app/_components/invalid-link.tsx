import Link from 'next/link';

/** A link whose filters the API refuses: say which and offer the unfiltered page. */
export function InvalidLink({ issues, href }: { issues: string[]; href: string }) {
  return (
    <div role="alert" className="rounded-md border border-red-200 bg-red-50 px-4 py-3 text-red-800">
      <p className="font-medium">This link&apos;s filters are not valid, so nothing was loaded.</p>
      <ul className="mt-1 list-disc pl-5 font-mono text-xs">
        {issues.map((issue) => (
          <li key={issue}>{issue}</li>
        ))}
      </ul>
      <Link href={href} className="mt-2 inline-block font-medium text-red-900 underline">
        Show everything instead
      </Link>
    </div>
  );
}

export function PageHeading({ title, children }: { title: string; children?: React.ReactNode }) {
  return (
    <div>
      <h1 className="text-lg font-semibold tracking-tight">{title}</h1>
      {children && <p className="text-zinc-500">{children}</p>}
    </div>
  );
}
