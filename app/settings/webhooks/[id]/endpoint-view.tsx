'use client';

import { useMutation, useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { useRouter } from 'next/navigation';
import { useState } from 'react';
import { Panel, LIVE_REFRESH_MS } from '../../../_components/panel';
import { formatDuration, localDateTime } from '../../../_components/time';
import { useTRPC } from '../../../_trpc/client';
import type { RouterOutputs } from '@/app/_trpc/types';
import type { WebhookEventType } from '@/server/common/webhook-events';
import { ConfirmAction } from '../../confirm-action';
import { quietButtonClass } from '../../controls';
import { EndpointForm, type EndpointValues } from '../../endpoint-form';
import { SecretOnce } from '../../secret-once';
import { EnabledSwitch, RotateSecret, SendTest, SIGNING_NOTE, useWebhooksRefresh } from '../../webhook-actions';
import { DayCounts, LastDelivery } from '../../webhooks-panel';
import { DeliveryLog } from './delivery-log';

type Endpoint = RouterOutputs['webhooks']['list'][number];

function Setting({ label, children }: { label: string; children: React.ReactNode }) {
  return (
    <div className="flex gap-3 py-1">
      <dt className="w-40 shrink-0 text-xs font-medium text-zinc-500">{label}</dt>
      <dd className="min-w-0 flex-1">{children}</dd>
    </div>
  );
}

function EndpointSettings({ endpoint }: { endpoint: Endpoint }) {
  const trpc = useTRPC();
  const router = useRouter();
  const refresh = useWebhooksRefresh();
  const [editing, setEditing] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const [rotated, setRotated] = useState<string | null>(null);
  const update = useMutation(
    trpc.webhooks.update.mutationOptions({
      onSuccess: () => setEditing(false),
      onSettled: () => void refresh(),
    }),
  );
  const remove = useMutation(trpc.webhooks.delete.mutationOptions({ onSuccess: () => router.push('/settings') }));

  function save(values: EndpointValues) {
    update.mutate({
      id: endpoint.id,
      expectedVersion: endpoint.version,
      url: values.url,
      eventTypes: values.eventTypes,
      description: values.description === '' ? null : values.description,
      ...(values.eventTypes.includes('execution.stuck') ? { stuckThreshold: values.stuckThreshold, stuckIntervalSeconds: values.stuckIntervalSeconds } : {}),
    });
  }

  const stale = update.error?.data?.code === 'CONFLICT';
  return (
    <Panel
      title="Endpoint"
      labelledBy="endpoint-heading"
      summary={<span className="truncate font-mono text-[12px] text-zinc-700">{endpoint.url}</span>}
      aside={
        <span className="inline-flex items-center gap-1.5">
          <SendTest endpoint={endpoint} showLogLink={false} />
          {!editing && (
            <button type="button" className={quietButtonClass} onClick={() => setEditing(true)}>
              Edit
            </button>
          )}
        </span>
      }
    >
      {rotated && (
        <SecretOnce title={`New signing secret of ${endpoint.url}:`} secret={rotated} testId="new-webhook-secret" onDone={() => setRotated(null)}>
          {SIGNING_NOTE}
        </SecretOnce>
      )}
      {stale && (
        <p role="alert" className="border-b border-amber-200 bg-amber-50 px-4 py-2 text-amber-900">
          Someone changed this endpoint while you edited it (now version {String((update.error?.data as { conflict?: { currentVersion?: number } } | undefined)?.conflict?.currentVersion ?? '?')}). What is shown
          is the current state: apply your change again.
        </p>
      )}
      {editing ? (
        <EndpointForm
          key={endpoint.version}
          initial={{
            url: endpoint.url,
            description: endpoint.description ?? '',
            eventTypes: endpoint.eventTypes as WebhookEventType[],
            stuckThreshold: endpoint.stuckThreshold,
            stuckIntervalSeconds: endpoint.stuckIntervalSeconds,
          }}
          submitLabel="Save"
          pendingLabel="Saving…"
          pending={update.isPending}
          error={stale ? null : update.error}
          onSubmit={save}
          onCancel={() => {
            setEditing(false);
            update.reset();
          }}
        />
      ) : (
        <dl className="px-4 py-2">
          <Setting label="Enabled">
            <EnabledSwitch endpoint={endpoint} onChanged={() => void refresh()} />
          </Setting>
          <Setting label="Description">{endpoint.description ?? <span className="text-zinc-400">none</span>}</Setting>
          <Setting label="Events">
            <span className="flex flex-wrap gap-1">
              {endpoint.eventTypes.map((type) => (
                <code key={type} className="rounded bg-zinc-100 px-1 font-mono text-[11px]">
                  {type}
                </code>
              ))}
            </span>
          </Setting>
          {endpoint.eventTypes.includes('execution.stuck') && (
            <Setting label="execution.stuck">
              when a stuck group reaches {endpoint.stuckThreshold} item{endpoint.stuckThreshold === 1 ? '' : 's'}, at most once per group every{' '}
              {formatDuration(endpoint.stuckIntervalSeconds * 1000)}
            </Setting>
          )}
          <Setting label="Signing secret">
            <span className="inline-flex items-baseline gap-2">
              <code className="font-mono text-[12px]">whsec_…{endpoint.secretHint}</code>
              <RotateSecret endpoint={endpoint} onRotated={({ secret }) => (setRotated(secret), void refresh())} />
            </span>
          </Setting>
          <Setting label="Last delivery">
            <LastDelivery last={endpoint.lastDelivery} />
          </Setting>
          <Setting label="Last 24 h">
            <DayCounts counts={endpoint.last24h} />
          </Setting>
          <Setting label="Created">
            <span suppressHydrationWarning className="tabular-nums">
              {localDateTime(endpoint.createdAt)}
            </span>
            <span className="text-zinc-500"> · version {endpoint.version}</span>
          </Setting>
          <Setting label="Delete">
            <ConfirmAction
              label="Delete endpoint"
              ariaLabel={`Delete ${endpoint.url}`}
              confirmLabel="Confirm delete"
              warning={`Delete ${endpoint.url} and its delivery log?`}
              askReason={false}
              open={deleting}
              onOpenChange={setDeleting}
              pending={remove.isPending}
              onConfirm={() => remove.mutate({ id: endpoint.id })}
            />
            {remove.error && (
              <span role="alert" className="ml-2 text-xs text-red-700">
                {remove.error.message}
              </span>
            )}
          </Setting>
        </dl>
      )}
    </Panel>
  );
}

/** An endpoint's page: its settings and controls, then its delivery log. */
export function EndpointView({ id }: { id: string }) {
  const trpc = useTRPC();
  const endpoints = useQuery(trpc.webhooks.list.queryOptions(undefined, { refetchInterval: LIVE_REFRESH_MS }));
  const endpoint = endpoints.data?.find((e) => e.id === id);
  if (endpoints.error) {
    return (
      <p role="alert" className="rounded-md border border-red-200 bg-red-50 px-4 py-3 text-red-800">
        Could not load the endpoint: {endpoints.error.message}
      </p>
    );
  }
  if (endpoints.isPending) return <p role="status" className="text-zinc-500">Loading the endpoint…</p>;
  if (!endpoint) {
    return (
      <div role="alert" className="max-w-xl rounded-md border border-amber-200 bg-amber-50 px-4 py-3 text-amber-900">
        <p className="font-medium">No such webhook endpoint in this project</p>
        <p className="mt-0.5">
          It may have been deleted.{' '}
          <Link href="/settings" className="font-medium underline">
            Back to Settings
          </Link>
        </p>
      </div>
    );
  }
  return (
    <div className="space-y-4">
      <EndpointSettings endpoint={endpoint} />
      <DeliveryLog endpointId={id} />
    </div>
  );
}
