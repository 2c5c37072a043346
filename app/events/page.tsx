import type { Metadata } from 'next';
import { currentActor } from '@/server/http/server-caller';
import { listEventsInput } from '@/server/trpc/routers/events.schema';
import { InvalidLink, PageHeading } from '../_components/invalid-link';
import { inputFromSearch, issuesOf, type SearchRecord } from '../_components/search-params';
import { HydrateClient, getQueryClient, trpc } from '../_trpc/server';
import { EventsView } from './events-view';
import { EVENT_SEARCH, type ListEventsInput } from './search';

export const dynamic = 'force-dynamic';
export const metadata: Metadata = { title: 'Events' };

export default async function EventsPage({ searchParams }: { searchParams: Promise<SearchRecord> }) {
  const input = inputFromSearch(await searchParams, EVENT_SEARCH);
  const parsed = listEventsInput.safeParse(input);
  const actor = await currentActor();
  if (parsed.success) await getQueryClient().prefetchQuery(trpc.events.list.queryOptions(input as ListEventsInput));
  return (
    <HydrateClient>
      <div className="mx-auto max-w-[1600px] space-y-3 px-6 py-5">
        <PageHeading title="Events">
          Tracked events, newest first: whether each was dispatched, and which executions it started or resumed. Operators redrive dead letters here.
        </PageHeading>
        {parsed.success ? <EventsView role={actor?.role ?? 'VIEWER'} /> : <InvalidLink issues={issuesOf(parsed.error)} href="/events" />}
      </div>
    </HydrateClient>
  );
}
