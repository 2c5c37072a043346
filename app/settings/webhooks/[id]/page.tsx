import type { Metadata } from 'next';
import { currentActor } from '@/server/http/server-caller';
import { listDeliveriesInput, webhookIdInput } from '@/server/trpc/routers/webhooks.schema';
import { Breadcrumb } from '../../../_components/breadcrumb';
import { InvalidLink } from '../../../_components/invalid-link';
import { inputFromSearch, issuesOf, type SearchRecord } from '../../../_components/search-params';
import { HydrateClient, getQueryClient, trpc } from '../../../_trpc/server';
import { DELIVERY_LOG_SEARCH, deliveriesInputOf } from '../search';
import { EndpointView } from './endpoint-view';

export const dynamic = 'force-dynamic';
export const metadata: Metadata = { title: 'Webhook endpoint' };

export default async function WebhookEndpointPage({ params, searchParams }: { params: Promise<{ id: string }>; searchParams: Promise<SearchRecord> }) {
  const { id } = await params;
  const actor = await currentActor();
  // Owners only, as all of Settings (the procedures refuse anyone else anyway).
  if (actor?.role !== 'OWNER') {
    return (
      <div className="mx-auto max-w-[1400px] px-6 py-5">
        <h1 className="text-lg font-semibold tracking-tight">Webhook endpoint</h1>
        <div role="alert" className="mt-4 max-w-xl rounded-md border border-amber-200 bg-amber-50 px-4 py-3 text-amber-900">
          <p className="font-medium">Not allowed</p>
          <p className="mt-0.5">Webhooks are managed by the project&apos;s owners; you are {actor?.role ?? 'not signed in'}.</p>
        </div>
      </div>
    );
  }
  const search = inputFromSearch(await searchParams, DELIVERY_LOG_SEARCH);
  const input = deliveriesInputOf(id, search);
  const parsedId = webhookIdInput.safeParse({ id });
  const parsed = listDeliveriesInput.safeParse(input);
  const opened = typeof search.delivery === 'string' && webhookIdInput.safeParse({ id: search.delivery }).success ? search.delivery : null;
  if (parsedId.success && parsed.success) {
    const queryClient = getQueryClient();
    await Promise.all([
      queryClient.prefetchQuery(trpc.webhooks.list.queryOptions()),
      queryClient.prefetchQuery(trpc.webhooks.deliveries.queryOptions(input)),
      opened ? queryClient.prefetchQuery(trpc.webhooks.delivery.queryOptions({ id: opened })) : null,
    ]);
  }
  return (
    <HydrateClient>
      <div className="mx-auto max-w-[1600px] space-y-4 px-6 py-5">
        <Breadcrumb section="Settings" href="/settings">
          Webhook <span className="font-mono">{id.slice(0, 8)}</span>
        </Breadcrumb>
        {parsedId.success && parsed.success ? (
          <EndpointView id={id} />
        ) : (
          <InvalidLink issues={issuesOf((parsedId.success ? parsed : parsedId).error!)} href={parsedId.success ? `/settings/webhooks/${id}` : '/settings'} />
        )}
      </div>
    </HydrateClient>
  );
}
