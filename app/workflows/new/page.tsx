import type { Metadata } from 'next';
import Link from 'next/link';
import { currentActor } from '@/server/http/server-caller';
import { getWorkflowInput } from '@/server/trpc/routers/workflows.schema';
import { Breadcrumb } from '../../_components/breadcrumb';
import { PageHeading } from '../../_components/invalid-link';
import type { SearchRecord } from '../../_components/search-params';
import { HydrateClient, getQueryClient, trpc } from '../../_trpc/server';
import { definitionOf } from '../_components/definition';
import { mayWriteWorkflows } from '../_components/roles';
import { WorkflowEditor } from './workflow-editor';

export const dynamic = 'force-dynamic';
export const metadata: Metadata = { title: 'New workflow' };

/** What a new workflow starts from: the smallest useful journey, to edit. */
const TEMPLATE = {
  name: 'New workflow',
  description: 'What this journey is for.',
  trigger: 'MANUAL',
  allowReentry: false,
  steps: [
    { key: 'start', type: 'TRIGGER', name: 'Enrolled', config: {} },
    { key: 'hello', type: 'SEND_EMAIL', name: 'Hello email', config: { subject: 'Hello {{contact.email}}', body: 'Glad you are here.' } },
    { key: 'wait', type: 'WAIT_FOR_EVENT', name: 'Wait for a purchase', config: { eventName: 'purchase', timeoutSeconds: 86400 } },
    { key: 'thanks', type: 'SEND_EMAIL', name: 'Thank-you email', config: { subject: 'Thank you', body: 'Enjoy!' } },
    { key: 'nudge', type: 'SEND_EMAIL', name: 'Nudge', config: { subject: 'Still thinking?', body: 'Here is what you are missing.' } },
  ],
  transitions: [
    { from: 'start', to: 'hello', branch: null },
    { from: 'hello', to: 'wait', branch: null },
    { from: 'wait', to: 'thanks', branch: 'EVENT' },
    { from: 'wait', to: 'nudge', branch: 'TIMEOUT' },
  ],
};

export default async function NewWorkflowPage({ searchParams }: { searchParams: Promise<SearchRecord> }) {
  const actor = await currentActor();
  const search = await searchParams;
  const from = typeof search.from === 'string' ? search.from : undefined;
  let initial: unknown = TEMPLATE;
  let source: { id: string; name: string } | null = null;
  let sourceError: string | null = null;
  if (from !== undefined) {
    if (!getWorkflowInput.safeParse({ id: from }).success) sourceError = 'The link names no valid workflow id.';
    else {
      try {
        const wf = await getQueryClient().fetchQuery(trpc.workflows.get.queryOptions({ id: from }));
        initial = definitionOf(wf, `${wf.name} (copy)`);
        source = { id: wf.id, name: wf.name };
      } catch {
        sourceError = 'No such workflow in this project.';
      }
    }
  }
  const mayWrite = mayWriteWorkflows(actor?.role);
  return (
    <HydrateClient>
      <div className="mx-auto max-w-[1600px] space-y-3 px-6 py-5">
        <Breadcrumb section="Workflows" href="/workflows">
          new
        </Breadcrumb>
        <PageHeading title={source ? `Duplicate “${source.name}”` : 'New workflow'}>
          A workflow is its JSON definition: steps and the transitions between them. It is checked as you type, exactly as the server will check it, and
          drawn beside the editor. It becomes version 1; later versions are edited on the workflow's page (Edit) and published over it.
        </PageHeading>
        {sourceError && (
          <p role="alert" className="rounded border border-amber-200 bg-amber-50 px-3 py-2 text-amber-900">
            Could not duplicate: {sourceError} The editor starts from the template instead.
          </p>
        )}
        {mayWrite ? (
          <WorkflowEditor initialText={JSON.stringify(initial, null, 2)} />
        ) : (
          <p role="alert" className="rounded-md border border-zinc-200 bg-white px-4 py-6 text-zinc-600">
            Creating workflows is for marketers and up; you are {(actor?.role ?? 'viewer').toLowerCase()}.{' '}
            <Link href="/workflows" className="font-medium text-zinc-900 underline">
              Back to the workflows
            </Link>
          </p>
        )}
      </div>
    </HydrateClient>
  );
}
