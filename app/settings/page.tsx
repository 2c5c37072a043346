import type { Metadata } from 'next';
import { currentActor } from '@/server/http/server-caller';
import { HydrateClient, getQueryClient, trpc } from '../_trpc/server';
import { ApiKeysPanel } from './api-keys-panel';
import { MembersPanel } from './members-panel';
import { RetentionPanel } from './retention-panel';
import { WebhooksPanel } from './webhooks-panel';

export const dynamic = 'force-dynamic';

export const metadata: Metadata = { title: 'Settings' };

export default async function SettingsPage() {
  const actor = await currentActor();
  // The nav hides this page below OWNER; a typed or shared link still gets a plain answer
  // (and the procedures behind it refuse anyway).
  if (actor?.role !== 'OWNER') {
    return (
      <div className="mx-auto max-w-[1400px] px-6 py-5">
        <h1 className="text-lg font-semibold tracking-tight">Settings</h1>
        <div role="alert" className="mt-4 max-w-xl rounded-md border border-amber-200 bg-amber-50 px-4 py-3 text-amber-900">
          <p className="font-medium">Not allowed</p>
          <p className="mt-0.5">
            Members, API keys and webhooks are managed by the project&apos;s owners; you are {actor?.role ?? 'not signed in'}. Ask an OWNER
            if you need access or a key.
          </p>
        </div>
      </div>
    );
  }

  const queryClient = getQueryClient();
  await Promise.all([
    queryClient.prefetchQuery(trpc.apiKeys.list.queryOptions()),
    queryClient.prefetchQuery(trpc.members.list.queryOptions()),
    queryClient.prefetchQuery(trpc.members.invitations.queryOptions()),
    queryClient.prefetchQuery(trpc.webhooks.list.queryOptions()),
    queryClient.prefetchQuery(trpc.retention.status.queryOptions()),
  ]);
  return (
    <HydrateClient>
      <div className="mx-auto max-w-[1400px] space-y-4 px-6 py-5">
        <div>
          <h1 className="text-lg font-semibold tracking-tight">Settings</h1>
          <p className="text-zinc-500">Who may use this project, the keys programs use to call its API, the webhooks it sends to your systems, and how long its history is kept.</p>
        </div>
        <ApiKeysPanel />
        <WebhooksPanel />
        <MembersPanel currentUserId={actor.userId} />
        <RetentionPanel />
      </div>
    </HydrateClient>
  );
}
