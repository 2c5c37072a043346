import type { Metadata } from 'next';
import { headers } from 'next/headers';
import Link from 'next/link';
import { resolveActor } from '@/server/auth/actor';
import { db } from '@/server/db';
import { getWorkflowInput } from '@/server/trpc/routers/workflows.schema';
import { InvalidLink } from '../../_components/invalid-link';
import { issuesOf } from '../../_components/search-params';
import { HydrateClient, getQueryClient, trpc } from '../../_trpc/server';
import { mayWriteWorkflows } from '../_components/roles';
import { WorkflowDetailView } from './workflow-detail';

export const dynamic = 'force-dynamic';
export const metadata: Metadata = { title: 'Workflow' };

export default async function WorkflowPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  const parsed = getWorkflowInput.safeParse({ id });
  const actor = await resolveActor(db(), await headers());
  if (parsed.success) await getQueryClient().prefetchQuery(trpc.workflows.get.queryOptions({ id }));
  return (
    <HydrateClient>
      <div className="mx-auto max-w-[1600px] space-y-3 px-6 py-5">
        <nav aria-label="Breadcrumb" className="text-xs text-zinc-500">
          <Link href="/workflows" className="hover:text-zinc-900 hover:underline">
            Workflows
          </Link>{' '}
          / <span className="font-mono">{id.slice(0, 8)}</span>
        </nav>
        {parsed.success ? (
          <WorkflowDetailView id={id} mayWrite={mayWriteWorkflows(actor?.role)} />
        ) : (
          <InvalidLink issues={issuesOf(parsed.error)} href="/workflows" />
        )}
      </div>
    </HydrateClient>
  );
}
