import type { Metadata } from 'next';
import { currentActor } from '@/server/http/server-caller';
import { listContactsInput } from '@/server/trpc/routers/contacts.schema';
import { InvalidLink, PageHeading } from '../_components/invalid-link';
import { inputFromSearch, issuesOf, type SearchRecord } from '../_components/search-params';
import { HydrateClient, getQueryClient, trpc } from '../_trpc/server';
import { ContactsView } from './contacts-view';
import { CONTACT_SEARCH, type ListContactsInput } from './search';

export const dynamic = 'force-dynamic';
export const metadata: Metadata = { title: 'Contacts' };

/** The URL is parsed with contacts.list's own input and exactly that input is prefetched. */
export default async function ContactsPage({ searchParams }: { searchParams: Promise<SearchRecord> }) {
  const input = inputFromSearch(await searchParams, CONTACT_SEARCH);
  const parsed = listContactsInput.safeParse(input);
  const actor = await currentActor();
  if (parsed.success) await getQueryClient().prefetchQuery(trpc.contacts.list.queryOptions(input as ListContactsInput));
  return (
    <HydrateClient>
      <div className="mx-auto max-w-[1600px] space-y-3 px-6 py-5">
        <PageHeading title="Contacts">
          The people your workflows run for, newest first: search by the start of an email or by a data field; open one for its journey across workflows.
        </PageHeading>
        {parsed.success ? <ContactsView role={actor?.role ?? 'VIEWER'} /> : <InvalidLink issues={issuesOf(parsed.error)} href="/contacts" />}
      </div>
    </HydrateClient>
  );
}
