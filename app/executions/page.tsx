import type { Metadata } from 'next';
import { currentActor } from '@/server/http/server-caller';
import { EVENT_REASONS, STUCK_REASONS } from '@/server/common/stuck-reasons';
import { listExecutionsInput } from '@/server/trpc/routers/executions.schema';
import { InvalidLink, PageHeading } from '../_components/invalid-link';
import { inputFromSearch, issuesOf, type SearchRecord } from '../_components/search-params';
import { HydrateClient, getQueryClient, trpc } from '../_trpc/server';
import { ExecutionsView } from './executions-view';
import { EXECUTION_SEARCH, olderVersionsWithActive, type ListExecutionsInput } from './search';

export const dynamic = 'force-dynamic';
export const metadata: Metadata = { title: 'Executions' };

/**
 * The URL is parsed with executions.list's own input schema and exactly that input is
 * prefetched, so the first paint has the rows a shared link names.
 */
export default async function ExecutionsPage({ searchParams }: { searchParams: Promise<SearchRecord> }) {
  const input = inputFromSearch(await searchParams, EXECUTION_SEARCH);
  const actor = await currentActor();
  const parsed = listExecutionsInput.safeParse(input);
  const executionReasons = STUCK_REASONS.filter((r) => !EVENT_REASONS.includes(r));
  const queryClient = getQueryClient();
  if (parsed.success) {
    const workflowId = typeof input.workflowId === 'string' ? input.workflowId : undefined;
    await Promise.all([
      queryClient.prefetchQuery(trpc.executions.list.queryOptions(input as ListExecutionsInput)),
      queryClient.prefetchQuery(trpc.executions.stats.queryOptions(workflowId ? { workflowId } : {})),
      queryClient.prefetchQuery(trpc.workflows.list.queryOptions()),
      workflowId ? queryClient.prefetchQuery(trpc.workflows.get.queryOptions({ id: workflowId })) : null,
      workflowId ? prefetchOlderSteps(queryClient, workflowId) : null,
    ]);
  }
  return (
    <HydrateClient>
      <div className="mx-auto max-w-[1600px] space-y-3 px-6 py-5">
        <PageHeading title="Executions">
          Every contact&apos;s trip through a workflow, newest first. Filters live in the address bar: share it to share this view.
        </PageHeading>
        {parsed.success ? <ExecutionsView executionReasons={[...executionReasons]} role={actor?.role ?? 'VIEWER'} /> : <InvalidLink issues={issuesOf(parsed.error)} href="/executions" />}
      </div>
    </HydrateClient>
  );
}

/** The step filter's older versions (those still in use), so a link to a step of one paints with it selected. */
async function prefetchOlderSteps(queryClient: ReturnType<typeof getQueryClient>, workflowId: string): Promise<void> {
  const versions = await queryClient.fetchQuery(trpc.workflows.versions.queryOptions({ workflowId })).catch(() => undefined);
  await Promise.all(olderVersionsWithActive(versions).map((version) => queryClient.prefetchQuery(trpc.workflows.get.queryOptions({ id: workflowId, version }))));
}
