import type { Metadata } from 'next';
import Link from 'next/link';
import { currentActor } from '@/server/http/server-caller';
import { PageHeading } from '../_components/invalid-link';
import { HydrateClient, getQueryClient, trpc } from '../_trpc/server';
import { mayWriteWorkflows } from './_components/roles';
import { WorkflowsView } from './workflows-view';

export const dynamic = 'force-dynamic';
export const metadata: Metadata = { title: 'Workflows' };

export default async function WorkflowsPage() {
  const actor = await currentActor();
  const mayWrite = mayWriteWorkflows(actor?.role);
  await getQueryClient().prefetchQuery(trpc.workflows.list.queryOptions());
  return (
    <HydrateClient>
      <div className="mx-auto max-w-[1600px] space-y-3 px-6 py-5">
        <div className="flex items-start gap-4">
          <PageHeading title="Workflows">
            The project&apos;s journeys, with how many executions are in each status.{' '}
            {mayWrite ? 'Switch one off to stop new enrollments; executions already in it go on.' : 'You are a viewer: this page is read-only for you.'}
          </PageHeading>
          {mayWrite && (
            <Link
              href="/workflows/new"
              className="ml-auto shrink-0 rounded bg-zinc-900 px-3 py-1.5 text-xs font-medium text-white hover:bg-zinc-700 focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-sky-600"
            >
              New workflow
            </Link>
          )}
        </div>
        <WorkflowsView mayWrite={mayWrite} />
      </div>
    </HydrateClient>
  );
}
