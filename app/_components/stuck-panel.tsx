'use client';

import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { SELF_HEALING, STUCK_DESCRIPTIONS, STUCK_REASONS, type StuckReason } from '@/server/common/stuck-reasons';
import { useTRPC } from '../_trpc/client';
import { Freshness, LIVE_REFRESH_MS, LoadError, Panel } from './panel';

/** Where a reason's items are listed: events on the events page, the rest in the executions table. */
function listHref(reason: StuckReason): string {
  if (reason === 'EVENT_DEAD') return '/events?state=dead';
  if (reason === 'EVENT_PENDING') return '/events?state=pending&state=retrying';
  return `/executions?stuck=${reason}`;
}

/**
 * What is not moving, and why (docs/stuck-and-repair.md), live: each stuck reason with its
 * count, what it means, and whether the workers clear it by themselves or it waits for
 * an operator. The counts are the same predicates repair.stuck lists ("as of" when the
 * project is too large to count on every refresh).
 */
export function StuckPanel() {
  const trpc = useTRPC();
  const { data, error, dataUpdatedAt, isFetching } = useQuery(
    trpc.executions.stats.queryOptions({}, { refetchInterval: LIVE_REFRESH_MS }),
  );
  const total = data ? STUCK_REASONS.reduce((sum, r) => sum + (data.byStuckReason[r] ?? 0), 0) : 0;

  return (
    <Panel
      title="Stuck"
      labelledBy="stuck-heading"
      summary={
        data &&
        (total === 0 ? (
          <span className="rounded-full bg-emerald-50 px-2 py-0.5 text-xs font-medium text-emerald-700 ring-1 ring-emerald-200 ring-inset">
            Nothing stuck
          </span>
        ) : (
          <span className="rounded-full bg-amber-50 px-2 py-0.5 text-xs font-medium text-amber-800 ring-1 ring-amber-200 ring-inset">
            {total.toLocaleString()} stuck
          </span>
        ))
      }
      aside={
        <>
          {data && <Freshness updatedAt={dataUpdatedAt} fetching={isFetching} asOf={data.asOf} />}
          <Link href="/stuck" className="font-medium text-sky-700 hover:underline">
            Grouped by cause →
          </Link>
        </>
      }
    >
      {error && <LoadError what="the stuck executions" message={error.message} />}
      {data && (
        <table className="w-full text-left">
          <thead className="bg-zinc-50 text-[11px] font-medium uppercase tracking-wide text-zinc-500">
            <tr>
              <th scope="col" className="w-56 px-4 py-1.5 font-medium">
                Reason
              </th>
              <th scope="col" className="px-2 py-1.5 font-medium">
                Means
              </th>
              <th scope="col" className="w-44 px-2 py-1.5 font-medium">
                Cleared by
              </th>
              <th scope="col" className="w-28 px-4 py-1.5 text-right font-medium">
                Now
              </th>
            </tr>
          </thead>
          <tbody className="divide-y divide-zinc-100">
            {STUCK_REASONS.map((reason) => {
              const count = data.byStuckReason[reason] ?? 0;
              return (
                <tr key={reason} data-testid={`stuck-${reason}`} className={count > 0 ? 'bg-amber-50/50' : undefined}>
                  <td className="px-4 py-2 align-baseline font-mono text-xs font-semibold text-zinc-600">
                    {count > 0 ? (
                      <Link href={`/stuck?reason=${reason}`} className="text-sky-700 hover:underline">
                        {reason}
                      </Link>
                    ) : (
                      reason
                    )}
                  </td>
                  <td className="px-2 py-2 align-baseline text-zinc-600">{STUCK_DESCRIPTIONS[reason]}</td>
                  <td className="px-2 py-2 align-baseline text-xs text-zinc-500">
                    {SELF_HEALING.includes(reason) ? 'the workers, once running' : 'an operator'}
                  </td>
                  <td className="px-4 py-2 text-right align-baseline tabular-nums">
                    {count === 0 ? (
                      <span className="text-zinc-400">0</span>
                    ) : (
                      <Link
                        href={listHref(reason)}
                        title={`List them (${reason})`}
                        className="rounded bg-amber-500 px-1.5 py-0.5 text-xs font-semibold text-white hover:bg-amber-600 focus:ring-2 focus:ring-amber-300 focus:outline-none"
                      >
                        {count.toLocaleString()}
                      </Link>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </Panel>
  );
}
