import type { Metadata } from 'next';
import { currentActor } from '@/server/http/server-caller';
import { getContactInput } from '@/server/trpc/routers/contacts.schema';
import { Breadcrumb } from '../../_components/breadcrumb';
import { InvalidLink } from '../../_components/invalid-link';
import { issuesOf } from '../../_components/search-params';
import { HydrateClient, getQueryClient, trpc } from '../../_trpc/server';
import { mayManageContacts } from '../search';
import { ContactDetail } from './contact-detail';

export const dynamic = 'force-dynamic';
export const metadata: Metadata = { title: 'Contact' };

export default async function ContactPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  const parsed = getContactInput.safeParse({ id });
  const actor = await currentActor();
  const role = actor?.role ?? 'VIEWER';
  if (parsed.success) {
    // The enrollment form's workflows arrive with the page for those who may enroll.
    await Promise.all([
      getQueryClient().prefetchQuery(trpc.contacts.get.queryOptions({ id })),
      mayManageContacts(role) ? getQueryClient().prefetchQuery(trpc.workflows.list.queryOptions()) : null,
    ]);
  }
  return (
    <HydrateClient>
      <div className="mx-auto max-w-[1600px] space-y-4 px-6 py-5">
        <Breadcrumb section="Contacts" href="/contacts">
          <span className="font-mono">{id.slice(0, 8)}</span>
        </Breadcrumb>
        {parsed.success ? <ContactDetail id={id} role={role} /> : <InvalidLink issues={issuesOf(parsed.error)} href="/contacts" />}
      </div>
    </HydrateClient>
  );
}
