import type { Metadata } from 'next';
import Link from 'next/link';
import { currentActor } from '@/server/http/server-caller';
import { getWorkflowInput } from '@/server/trpc/routers/workflows.schema';
import { Breadcrumb } from '../../../_components/breadcrumb';
import { InvalidLink } from '../../../_components/invalid-link';
import { issuesOf } from '../../../_components/search-params';
import { HydrateClient, getQueryClient, trpc } from '../../../_trpc/server';
import { mayWriteWorkflows } from '../../_components/roles';
import { WorkflowEdit } from './workflow-edit';

export const dynamic = 'force-dynamic';
export const metadata: Metadata = { title: 'Edit workflow' };

export default async function EditWorkflowPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  const parsed = getWorkflowInput.safeParse({ id });
  const actor = await currentActor();
  const mayWrite = mayWriteWorkflows(actor?.role);
  if (parsed.success && mayWrite) await getQueryClient().prefetchQuery(trpc.workflows.get.queryOptions({ id }));
  return (
    <HydrateClient>
      <div className="mx-auto max-w-[1600px] space-y-3 px-6 py-5">
        <Breadcrumb section="Workflows" href="/workflows">
          <Link href={`/workflows/${id}`} className="font-mono hover:text-zinc-900 hover:underline">
            {id.slice(0, 8)}
          </Link>{' '}
          / edit
        </Breadcrumb>
        {!parsed.success ? (
          <InvalidLink issues={issuesOf(parsed.error)} href="/workflows" />
        ) : mayWrite ? (
          <WorkflowEdit id={id} you={actor?.label ?? 'you'} />
        ) : (
          <p role="alert" className="rounded-md border border-zinc-200 bg-white px-4 py-6 text-zinc-600">
            Editing workflows is for marketers and up; you are {(actor?.role ?? 'viewer').toLowerCase()}.{' '}
            <Link href={`/workflows/${id}`} className="font-medium text-zinc-900 underline">
              Back to the workflow
            </Link>
          </p>
        )}
      </div>
    </HydrateClient>
  );
}
