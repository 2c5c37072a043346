import type { Metadata } from 'next';
import { currentActor } from '@/server/http/server-caller';
import { getWorkflowInput } from '@/server/trpc/routers/workflows.schema';
import { Breadcrumb } from '../../_components/breadcrumb';
import { InvalidLink } from '../../_components/invalid-link';
import { issuesOf } from '../../_components/search-params';
import { HydrateClient, getQueryClient, trpc } from '../../_trpc/server';
import { mayWriteWorkflows } from '../_components/roles';
import { WorkflowDetailView } from './workflow-detail';

export const dynamic = 'force-dynamic';
export const metadata: Metadata = { title: 'Workflow' };

export default async function WorkflowPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  const parsed = getWorkflowInput.safeParse({ id });
  const actor = await currentActor();
  if (parsed.success) await getQueryClient().prefetchQuery(trpc.workflows.get.queryOptions({ id }));
  return (
    <HydrateClient>
      <div className="mx-auto max-w-[1600px] space-y-3 px-6 py-5">
        <Breadcrumb section="Workflows" href="/workflows">
          <span className="font-mono">{id.slice(0, 8)}</span>
        </Breadcrumb>
        {parsed.success ? (
          <WorkflowDetailView id={id} mayWrite={mayWriteWorkflows(actor?.role)} />
        ) : (
          <InvalidLink issues={issuesOf(parsed.error)} href="/workflows" />
        )}
      </div>
    </HydrateClient>
  );
}
