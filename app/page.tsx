import type { Metadata } from 'next';
import { InvariantPanel } from './_components/invariant-panel';
import { StuckPanel } from './_components/stuck-panel';
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
  ]);
  return (
    <HydrateClient>
      <div className="mx-auto max-w-[1400px] space-y-4 px-6 py-5">
        <div>
          <h1 className="text-lg font-semibold tracking-tight">Overview</h1>
          <p className="text-zinc-500">The engine&apos;s guarantees and where every workflow&apos;s executions stand, refreshed live.</p>
        </div>
        <ExecutionTotals />
        <InvariantPanel />
        <StuckPanel />
        <WorkflowTable />
      </div>
    </HydrateClient>
  );
}
