import type { Metadata } from 'next';
import { currentActor } from '@/server/http/server-caller';
import { stuckGroupsInput } from '@/server/trpc/routers/repair.schema';
import { InvalidLink, PageHeading } from '../_components/invalid-link';
import { inputFromSearch, issuesOf, type SearchRecord } from '../_components/search-params';
import { HydrateClient, getQueryClient, trpc } from '../_trpc/server';
import { STUCK_SEARCH, type StuckGroupsInput } from './search';
import { StuckView } from './stuck-view';

export const dynamic = 'force-dynamic';
export const metadata: Metadata = { title: 'Stuck' };

/** The URL is parsed with repair.stuckGroups' own input and exactly that input is prefetched. */
export default async function StuckPage({ searchParams }: { searchParams: Promise<SearchRecord> }) {
  const input = inputFromSearch(await searchParams, STUCK_SEARCH);
  const parsed = stuckGroupsInput.safeParse(input);
  const actor = await currentActor();
  const queryClient = getQueryClient();
  if (parsed.success) {
    await Promise.all([
      queryClient.prefetchQuery(trpc.repair.stuckGroups.queryOptions(input as StuckGroupsInput)),
      queryClient.prefetchQuery(trpc.workflows.list.queryOptions()),
    ]);
  }
  return (
    <HydrateClient>
      <div className="mx-auto max-w-[1600px] space-y-3 px-6 py-5">
        <PageHeading title="Stuck">
          Every stuck execution, event and email, grouped by cause: the same reason, workflow, step and error (numbers, ids and quoted values
          aside) is one incident. Repair a group at once, or open its sample.
        </PageHeading>
        {parsed.success ? <StuckView role={actor?.role ?? 'VIEWER'} /> : <InvalidLink issues={issuesOf(parsed.error)} href="/stuck" />}
      </div>
    </HydrateClient>
  );
}
