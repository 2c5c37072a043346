import type { Metadata } from 'next';
import { z } from 'zod';
import { currentActor } from '@/server/http/server-caller';
import { BULK_BYTES_MAX, BULK_ROWS_MAX } from '@/server/common/enrollment-csv';
import { id } from '@/server/common/inputs';
import { InvalidLink, PageHeading } from '../_components/invalid-link';
import { issuesOf, type SearchRecord } from '../_components/search-params';
import { HydrateClient, getQueryClient, trpc } from '../_trpc/server';
import { EnrollView } from './enroll-view';

export const dynamic = 'force-dynamic';
export const metadata: Metadata = { title: 'Enroll from CSV' };

/** Rows per enrollments.enrollMany call: small enough that a 1,000-row file moves the bar four times. */
const CHUNK_ROWS = 250;

const enrollSearch = z.object({ workflow: id.optional() });

export default async function EnrollPage({ searchParams }: { searchParams: Promise<SearchRecord> }) {
  const search = await searchParams;
  const actor = await currentActor();
  const heading = (
    <PageHeading title="Enroll from CSV">
      Upload a file of contacts, choose which column holds the emails and which become contact data, check the rows, then enroll them into a workflow a
      chunk at a time.
    </PageHeading>
  );
  // Enrolling is the MARKETER's (and above); the procedures refuse anyone else anyway.
  if (!actor || actor.role === 'VIEWER') {
    return (
      <div className="mx-auto max-w-[1400px] space-y-4 px-6 py-5">
        {heading}
        <div role="alert" className="max-w-xl rounded-md border border-amber-200 bg-amber-50 px-4 py-3 text-amber-900">
          <p className="font-medium">You need the marketer role to enroll contacts</p>
          <p className="mt-0.5">
            You are {actor?.role ?? 'not signed in'}: you can browse workflows and executions, but enrolling contacts needs MARKETER or above. Ask an OWNER
            of the project if you need it.
          </p>
        </div>
      </div>
    );
  }
  const parsed = enrollSearch.safeParse({ workflow: typeof search.workflow === 'string' ? search.workflow : undefined });
  if (parsed.success) await getQueryClient().prefetchQuery(trpc.workflows.list.queryOptions());
  return (
    <HydrateClient>
      <div className="mx-auto max-w-[1400px] space-y-4 px-6 py-5">
        {heading}
        {parsed.success ? (
          <EnrollView initialWorkflowId={parsed.data.workflow ?? null} limits={{ rows: BULK_ROWS_MAX, bytes: BULK_BYTES_MAX }} chunkRows={CHUNK_ROWS} />
        ) : (
          <InvalidLink issues={issuesOf(parsed.error)} href="/enroll" />
        )}
      </div>
    </HydrateClient>
  );
}
