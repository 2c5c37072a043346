'use client';

import { useQuery } from '@tanstack/react-query';
import { useTRPC } from '../_trpc/client';
import { Freshness, LIVE_REFRESH_MS, LoadError, Panel } from './panel';

/** The invariants of docs/architecture.md ("Invariants"), live: each invariant's violation count, zero being the only healthy answer. */
export function InvariantPanel() {
  const trpc = useTRPC();
  const { data, error, dataUpdatedAt, isFetching } = useQuery(
    trpc.health.invariants.queryOptions(undefined, { refetchInterval: LIVE_REFRESH_MS }),
  );
  const broken = data?.filter((inv) => inv.violations > 0).length ?? 0;

  return (
    <Panel
      title="Invariants"
      labelledBy="invariants-heading"
      summary={
        data &&
        (broken === 0 ? (
          <span className="rounded-full bg-emerald-50 px-2 py-0.5 text-xs font-medium text-emerald-700 ring-1 ring-emerald-200 ring-inset">
            All {data.length} hold
          </span>
        ) : (
          <span className="rounded-full bg-red-50 px-2 py-0.5 text-xs font-medium text-red-700 ring-1 ring-red-200 ring-inset">
            {broken} violated
          </span>
        ))
      }
      aside={data && <Freshness updatedAt={dataUpdatedAt} fetching={isFetching} asOf={data[0]?.asOf} />}
    >
      {error && <LoadError what="the invariants" message={error.message} />}
      {data && (
        <table className="w-full text-left">
          <thead className="bg-zinc-50 text-[11px] font-medium uppercase tracking-wide text-zinc-500">
            <tr>
              <th scope="col" className="w-14 px-4 py-1.5 font-medium">
                Id
              </th>
              <th scope="col" className="w-[34%] px-2 py-1.5 font-medium">
                Guarantee
              </th>
              <th scope="col" className="px-2 py-1.5 font-medium">
                A violation is
              </th>
              <th scope="col" className="w-36 px-4 py-1.5 text-right font-medium">
                Violations
              </th>
            </tr>
          </thead>
          <tbody className="divide-y divide-zinc-100">
            {data.map((inv) => (
              <tr key={inv.id} data-testid={`invariant-${inv.id}`} className={inv.violations > 0 ? 'bg-red-50/60' : undefined}>
                <td className="px-4 py-2 align-baseline font-mono text-xs font-semibold text-zinc-500">{inv.id}</td>
                <td className="px-2 py-2 align-baseline font-medium">{inv.title}</td>
                <td className="px-2 py-2 align-baseline text-zinc-500">{inv.violation}</td>
                <td className="px-4 py-2 text-right align-baseline">
                  <ViolationCount count={inv.violations} />
                  {inv.provenBy && (
                    <div className="mt-0.5 whitespace-nowrap text-[11px] text-zinc-400" title={`PostgreSQL's unique index ${inv.provenBy} is in place and valid, so no row can break this: the check reads the catalog instead of counting.`}>
                      held by a unique index
                    </div>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Panel>
  );
}

function ViolationCount({ count }: { count: number }) {
  const label = `${count.toLocaleString()} ${count === 1 ? 'violation' : 'violations'}`;
  return count === 0 ? (
    <span className="inline-flex items-center gap-1.5 whitespace-nowrap text-xs font-medium text-emerald-700">
      <span className="size-1.5 rounded-full bg-emerald-500" aria-hidden />
      {label}
    </span>
  ) : (
    <span className="inline-flex items-center gap-1.5 whitespace-nowrap rounded bg-red-600 px-1.5 py-0.5 text-xs font-semibold text-white">
      {label}
    </span>
  );
}
