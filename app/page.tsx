import type { Metadata } from 'next';
import { InvariantPanel } from './_components/invariant-panel';
import { RECENT_FAILURES_INPUT, THROUGHPUT_INPUT } from './_components/overview-inputs';
import { RecentFailuresPanel } from './_components/recent-failures-panel';
import { StuckPanel } from './_components/stuck-panel';
import { ThroughputPanel } from './_components/throughput-panel';
import { ExecutionTotals, WorkflowTable } from './_components/workflow-table';
import { HydrateClient, getQueryClient, trpc } from './_trpc/server';

// Rendered per request from the live database (and never at build time, which has none).
export const dynamic = 'force-dynamic';

export const metadata: Metadata = { title: 'Overview' };

export default async function OverviewPage() {
  const queryClient = getQueryClient();
  await Promise.all([
    queryClient.prefetchQuery(trpc.health.invariants.queryOptions()),
    queryClient.prefetchQuery(trpc.workflows.list.queryOptions()),
    queryClient.prefetchQuery(trpc.executions.stats.queryOptions({})),
    queryClient.prefetchQuery(trpc.overview.throughput.queryOptions(THROUGHPUT_INPUT)),
    queryClient.prefetchQuery(trpc.overview.recentFailures.queryOptions(RECENT_FAILURES_INPUT)),
  ]);
  return (
    <HydrateClient>
      <div className="mx-auto max-w-[1400px] space-y-4 px-6 py-5">
        <div>
          <h1 className="text-lg font-semibold tracking-tight">Overview</h1>
          <p className="text-zinc-500">The engine&apos;s guarantees and where every workflow&apos;s executions stand, refreshed live.</p>
        </div>
        <ExecutionTotals />
        <div className="grid items-start gap-4 lg:grid-cols-2">
          <ThroughputPanel />
          <RecentFailuresPanel />
        </div>
        <InvariantPanel />
        <StuckPanel />
        <WorkflowTable />
      </div>
    </HydrateClient>
  );
}
