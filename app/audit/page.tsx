import type { Metadata } from 'next';
import { listAuditInput } from '@/server/trpc/routers/audit.schema';
import { InvalidLink, PageHeading } from '../_components/invalid-link';
import { inputFromSearch, issuesOf, type SearchRecord } from '../_components/search-params';
import { HydrateClient, getQueryClient, trpc } from '../_trpc/server';
import { AuditView } from './audit-view';
import { AUDIT_SEARCH, type ListAuditInput } from './search';

export const dynamic = 'force-dynamic';
export const metadata: Metadata = { title: 'Audit log' };

export default async function AuditPage({ searchParams }: { searchParams: Promise<SearchRecord> }) {
  const input = inputFromSearch(await searchParams, AUDIT_SEARCH);
  const parsed = listAuditInput.safeParse(input);
  if (parsed.success) await getQueryClient().prefetchQuery(trpc.audit.list.queryOptions(input as ListAuditInput));
  return (
    <HydrateClient>
      <div className="mx-auto max-w-[1600px] space-y-3 px-6 py-5">
        <PageHeading title="Audit log">
          Every change made through the API or the console, by whom, with its reason and outcome, written in the same transaction as the change.
        </PageHeading>
        {parsed.success ? <AuditView /> : <InvalidLink issues={issuesOf(parsed.error)} href="/audit" />}
      </div>
    </HydrateClient>
  );
}
