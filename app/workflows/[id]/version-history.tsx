'use client';

import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { LIVE_REFRESH_MS, LoadError } from '../../_components/panel';
import { absoluteTime, RelativeTime } from '../../_components/time';
import { useTRPC } from '../../_trpc/client';

// A workflow's published versions, newest first: who published each and when, its step
// count, how many executions are active on it now. A click shows that version's graph
// (read-only, ?version=N); the latest is the page without a version.

export function VersionHistory({ id, shown, hrefFor }: { id: string; shown: number | null; hrefFor: (version: number, latest: boolean) => string }) {
  const trpc = useTRPC();
  const { data, error, isPending } = useQuery(trpc.workflows.versions.queryOptions({ workflowId: id }, { refetchInterval: LIVE_REFRESH_MS }));
  return (
    <section aria-labelledby="versions-heading" data-testid="version-history" className="overflow-hidden rounded-md border border-zinc-200 bg-white shadow-xs">
      <header className="flex items-center gap-3 border-b border-zinc-200 px-4 py-2.5">
        <h2 id="versions-heading" className="text-[13px] font-semibold">
          Version history
        </h2>
        {data && <span className="text-xs text-zinc-500">{data.items.length} published</span>}
      </header>
      {error && !data && <LoadError what="the versions" message={error.message} />}
      {isPending && (
        <p role="status" className="px-4 py-4 text-center text-xs text-zinc-500">
          Loading the versions…
        </p>
      )}
      {data && data.items.length === 0 && <p className="px-4 py-4 text-center text-xs text-zinc-500">No version published yet.</p>}
      {data && data.items.length > 0 && (
        <ol className="max-h-[22rem] divide-y divide-zinc-100 overflow-y-auto">
          {data.items.map((v) => {
            const latest = v.number === data.latestVersion;
            const current = v.number === shown;
            return (
              <li key={v.number}>
                <Link
                  href={hrefFor(v.number, latest)}
                  aria-current={current ? 'page' : undefined}
                  data-testid={`version-${v.number}`}
                  className={`block px-4 py-1.5 hover:bg-zinc-50 focus-visible:outline-2 focus-visible:-outline-offset-2 focus-visible:outline-sky-600 ${current ? 'bg-sky-50/70' : ''}`}
                >
                  <span className="flex items-baseline gap-1.5">
                    <span className={`text-[13px] font-semibold ${current ? 'text-sky-900' : 'text-zinc-900'}`}>Version {v.number}</span>
                    {latest && <span className="rounded bg-emerald-50 px-1 text-[10.5px] font-semibold text-emerald-800 ring-1 ring-emerald-200">latest</span>}
                    {current && <span className="rounded bg-sky-100 px-1 text-[10.5px] font-semibold text-sky-800 ring-1 ring-sky-200">shown</span>}
                    <span className={`ml-auto text-xs tabular-nums ${v.active > 0 ? 'font-medium text-sky-800' : 'text-zinc-400'}`} title="Executions running or waiting on this version now">
                      {v.active.toLocaleString()} active
                    </span>
                  </span>
                  <span className="flex min-w-0 items-baseline gap-1.5 text-xs text-zinc-500">
                    <span className="min-w-0 truncate" title={v.publishedBy}>
                      {v.publishedBy}
                    </span>
                    <span aria-hidden>·</span>
                    <span className="shrink-0" title={absoluteTime(v.publishedAt)}>
                      <RelativeTime at={v.publishedAt} />
                    </span>
                    <span className="ml-auto shrink-0 tabular-nums">
                      {v.stepCount} steps{v.basedOn !== null && v.basedOn !== v.number - 1 ? ` · from v${v.basedOn}` : ''}
                    </span>
                  </span>
                </Link>
              </li>
            );
          })}
        </ol>
      )}
    </section>
  );
}
