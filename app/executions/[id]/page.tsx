import type { Metadata } from 'next';
import { currentActor } from '@/server/http/server-caller';
import { getExecutionInput } from '@/server/trpc/routers/executions.schema';
import { Breadcrumb } from '../../_components/breadcrumb';
import { InvalidLink } from '../../_components/invalid-link';
import { issuesOf } from '../../_components/search-params';
import { HydrateClient, getQueryClient, trpc } from '../../_trpc/server';
import { ExecutionDetail } from './execution-detail';
import { atLeast } from '@/server/common/roles';

export const dynamic = 'force-dynamic';
export const metadata: Metadata = { title: 'Execution' };

export default async function ExecutionPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  const parsed = getExecutionInput.safeParse({ id });
  const actor = await currentActor();
  const mayRepair = actor != null && atLeast(actor.role, 'OPERATOR');
  if (parsed.success) {
    // The repair panel's options arrive with the page for those who may repair.
    await Promise.all([
      getQueryClient().prefetchQuery(trpc.executions.get.queryOptions({ id })),
      mayRepair ? getQueryClient().prefetchQuery(trpc.repair.options.queryOptions({ executionId: id })) : null,
    ]);
  }
  return (
    <HydrateClient>
      <div className="mx-auto max-w-[1600px] space-y-4 px-6 py-5">
        <Breadcrumb section="Executions" href="/executions">
          <span className="font-mono">{id.slice(0, 8)}</span>
        </Breadcrumb>
        {parsed.success ? (
          <ExecutionDetail id={id} role={actor?.role ?? 'VIEWER'} />
        ) : (
          <InvalidLink issues={issuesOf(parsed.error)} href="/executions" />
        )}
      </div>
    </HydrateClient>
  );
}
