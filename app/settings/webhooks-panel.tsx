'use client';

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Link from 'next/link';
import { useState } from 'react';
import { StatusBadge } from '../_components/badges';
import { LIVE_REFRESH_MS, LoadError, Panel } from '../_components/panel';
import { RelativeTime } from '../_components/time';
import { useTRPC } from '../_trpc/client';
import type { RouterOutputs } from '@/app/_trpc/types';
import { ConfirmAction } from './confirm-action';
import { buttonClass } from './controls';
import { EndpointForm, NEW_ENDPOINT, type EndpointValues } from './endpoint-form';
import { SecretOnce } from './secret-once';
import { EnabledSwitch, RotateSecret, SendTest, SIGNING_NOTE } from './webhook-actions';

type Endpoint = RouterOutputs['webhooks']['list'][number];

/** The last 24 hours of an endpoint's messages: delivered, pending, dead. */
export function DayCounts({ counts }: { counts: Endpoint['last24h'] }) {
  return (
    <span className="inline-flex gap-2 text-xs tabular-nums" title="Messages created in the last 24 hours">
      <span className="text-emerald-800">{counts.delivered} delivered</span>
      <span className={counts.pending ? 'text-zinc-700' : 'text-zinc-400'}>{counts.pending} pending</span>
      <span className={counts.dead ? 'font-medium text-red-700' : 'text-zinc-400'}>{counts.dead} dead</span>
    </span>
  );
}

export function LastDelivery({ last }: { last: Endpoint['lastDelivery'] }) {
  if (!last) return <span className="text-xs text-zinc-400">none yet</span>;
  return (
    <span className="inline-flex items-baseline gap-1.5 text-xs">
      <StatusBadge status={last.status} />
      {last.responseStatus !== null && <span className="font-mono text-zinc-600">HTTP {last.responseStatus}</span>}
      <RelativeTime at={last.at} className="text-zinc-500" />
    </span>
  );
}

/** Settings' Webhooks panel (owners only, as the whole Settings page is). */
export function WebhooksPanel() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const endpoints = useQuery(trpc.webhooks.list.queryOptions(undefined, { refetchInterval: LIVE_REFRESH_MS }));
  const [adding, setAdding] = useState(false);
  const [shown, setShown] = useState<{ title: string; secret: string; id: string } | null>(null);
  const [confirming, setConfirming] = useState<string | null>(null);
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.webhooks.list.queryKey() });

  const create = useMutation(
    trpc.webhooks.create.mutationOptions({
      onSuccess: ({ endpoint, secret }) => {
        setShown({ title: `Endpoint ${endpoint.url} added. Its signing secret:`, secret, id: endpoint.id });
        setAdding(false);
        void refresh();
      },
    }),
  );
  const remove = useMutation(
    trpc.webhooks.delete.mutationOptions({
      onSettled: () => {
        setConfirming(null);
        void refresh();
      },
    }),
  );

  function add(values: EndpointValues) {
    const stuck = values.eventTypes.includes('execution.stuck');
    create.mutate({
      url: values.url,
      eventTypes: values.eventTypes,
      ...(values.description ? { description: values.description } : {}),
      ...(stuck ? { stuckThreshold: values.stuckThreshold, stuckIntervalSeconds: values.stuckIntervalSeconds } : {}),
    });
  }

  const enabled = endpoints.data?.filter((e) => e.enabled).length ?? 0;
  return (
    <Panel
      title="Webhooks"
      labelledBy="webhooks-heading"
      summary={endpoints.data && <span className="text-xs text-zinc-500">{endpoints.data.length === 0 ? 'none' : `${enabled} of ${endpoints.data.length} enabled`}</span>}
      aside={
        !adding && (
          <button type="button" className={buttonClass} onClick={() => setAdding(true)}>
            Add endpoint
          </button>
        )
      }
    >
      {shown && (
        <SecretOnce title={shown.title} secret={shown.secret} testId="new-webhook-secret" onDone={() => setShown(null)}>
          {SIGNING_NOTE}{' '}
          <Link href={`/settings/webhooks/${shown.id}`} className="font-medium underline">
            Open its delivery log
          </Link>
        </SecretOnce>
      )}
      {adding && (
        <div className="border-b border-zinc-200 bg-zinc-50/60">
          <EndpointForm
            initial={NEW_ENDPOINT}
            submitLabel="Add endpoint"
            pendingLabel="Adding…"
            pending={create.isPending}
            error={create.error}
            onSubmit={add}
            onCancel={() => {
              setAdding(false);
              create.reset();
            }}
          />
        </div>
      )}
      {endpoints.error && <LoadError what="the webhook endpoints" message={endpoints.error.message} />}
      {remove.error && (
        <p role="alert" className="border-b border-zinc-200 px-4 py-2 text-red-700">
          Could not delete the endpoint: {remove.error.message}
        </p>
      )}
      {endpoints.isPending && (
        <p role="status" className="px-4 py-6 text-zinc-500">
          Loading webhook endpoints…
        </p>
      )}
      {endpoints.data?.length === 0 && !adding && (
        <p className="px-4 py-6 text-zinc-500">
          No webhook endpoints yet. Add one to have Waypost POST signed events (failed executions, stuck groups, dead events…) to your systems.
        </p>
      )}
      {endpoints.data && endpoints.data.length > 0 && (
        <table className="w-full text-left" aria-label="Webhook endpoints">
          <thead className="bg-zinc-50 text-[11px] font-medium tracking-wide whitespace-nowrap text-zinc-500 uppercase">
            <tr>
              <th scope="col" className="px-4 py-1.5 font-medium">Endpoint</th>
              <th scope="col" className="px-2 py-1.5 font-medium">Events</th>
              <th scope="col" className="px-2 py-1.5 font-medium">Enabled</th>
              <th scope="col" className="px-2 py-1.5 font-medium">Last delivery</th>
              <th scope="col" className="px-2 py-1.5 font-medium">Last 24 h</th>
              <th scope="col" className="px-4 py-1.5 text-right font-medium">
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody className="divide-y divide-zinc-100">
            {endpoints.data.map((endpoint) => (
              <tr key={endpoint.id} data-testid="webhook-row" className={`align-baseline ${endpoint.enabled ? '' : 'text-zinc-500'}`}>
                <td className="max-w-[22rem] px-4 py-1.5">
                  <Link href={`/settings/webhooks/${endpoint.id}`} className="block truncate font-mono text-[12px] text-sky-700 hover:underline" title={endpoint.url}>
                    {endpoint.url}
                  </Link>
                  <span className="block truncate text-xs text-zinc-500">
                    {endpoint.description ?? <span className="text-zinc-400">no description</span>} · secret …{endpoint.secretHint}
                  </span>
                </td>
                <td className="px-2 py-1.5">
                  <span className="flex max-w-56 flex-wrap gap-1">
                    {endpoint.eventTypes.map((type) => (
                      <code key={type} className="rounded bg-zinc-100 px-1 font-mono text-[11px] text-zinc-700">
                        {type}
                      </code>
                    ))}
                  </span>
                </td>
                <td className="px-2 py-1.5">
                  <EnabledSwitch endpoint={endpoint} onChanged={refresh} />
                </td>
                <td className="px-2 py-1.5 whitespace-nowrap">
                  <LastDelivery last={endpoint.lastDelivery} />
                </td>
                <td className="px-2 py-1.5 whitespace-nowrap">
                  <DayCounts counts={endpoint.last24h} />
                </td>
                <td className="px-4 py-1.5 text-right">
                  <span className="inline-flex flex-wrap items-baseline justify-end gap-1.5">
                    {confirming !== endpoint.id && (
                      <>
                        <SendTest endpoint={endpoint} />
                        <RotateSecret
                          endpoint={endpoint}
                          onRotated={({ url, secret }) => {
                            setShown({ title: `New signing secret of ${url}:`, secret, id: endpoint.id });
                            void refresh();
                          }}
                        />
                      </>
                    )}
                    <ConfirmAction
                      label="Delete"
                      ariaLabel={`Delete ${endpoint.url}`}
                      confirmLabel="Confirm delete"
                      warning={`Delete ${endpoint.url} and its delivery log?`}
                      askReason={false}
                      open={confirming === endpoint.id}
                      onOpenChange={(open) => setConfirming(open ? endpoint.id : null)}
                      pending={remove.isPending}
                      onConfirm={() => remove.mutate({ id: endpoint.id })}
                    />
                  </span>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Panel>
  );
}
