import type { Metadata } from 'next';
import { atLeast } from '@/server/common/roles';
import { currentActor } from '@/server/http/server-caller';
import { getWorkflowInput } from '@/server/trpc/routers/workflows.schema';
import { Breadcrumb } from '../../_components/breadcrumb';
import { InvalidLink } from '../../_components/invalid-link';
import { issuesOf, type SearchRecord } from '../../_components/search-params';
import { HydrateClient, getQueryClient, trpc } from '../../_trpc/server';
import { mayWriteWorkflows } from '../_components/roles';
import { versionOfSearch } from './version-param';
import { WorkflowDetailView } from './workflow-detail';

export const dynamic = 'force-dynamic';
export const metadata: Metadata = { title: 'Workflow' };

export default async function WorkflowPage({ params, searchParams }: { params: Promise<{ id: string }>; searchParams: Promise<SearchRecord> }) {
  const { id } = await params;
  // ?version=N shows version N (read-only); none, the latest.
  const version = versionOfSearch(new URLSearchParams(Object.entries(await searchParams).flatMap(([k, v]) => (typeof v === 'string' ? [[k, v]] : [])) as [string, string][]));
  const parsed = getWorkflowInput.safeParse({ id, ...(version.value !== undefined ? { version: version.value } : {}) });
  const actor = await currentActor();
  if (parsed.success && !version.error) {
    await Promise.all([
      getQueryClient().prefetchQuery(trpc.workflows.get.queryOptions(parsed.data)),
      getQueryClient().prefetchQuery(trpc.workflows.versions.queryOptions({ workflowId: id })),
    ]);
  }
  return (
    <HydrateClient>
      <div className="mx-auto max-w-[1600px] space-y-3 px-6 py-5">
        <Breadcrumb section="Workflows" href="/workflows">
          <span className="font-mono">{id.slice(0, 8)}</span>
        </Breadcrumb>
        {parsed.success && !version.error ? (
          <WorkflowDetailView id={id} mayWrite={mayWriteWorkflows(actor?.role)} mayRepair={actor != null && atLeast(actor.role, 'OPERATOR')} />
        ) : (
          <InvalidLink issues={version.error ? [version.error] : parsed.success ? [] : issuesOf(parsed.error)} href={parsed.success || version.error ? `/workflows/${id}` : '/workflows'} />
        )}
      </div>
    </HydrateClient>
  );
}
