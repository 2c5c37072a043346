'use client';

import { useMutation, useQueryClient } from '@tanstack/react-query';
import Link from 'next/link';
import { useState } from 'react';
import { useTRPC } from '../_trpc/client';
import { ConfirmAction } from './confirm-action';
import { quietButtonClass } from './controls';

// An endpoint's one-click controls, shared by Settings' Webhooks panel and the endpoint's
// own page: enable/disable (a compare-and-swap on the version the row showed), send a test
// event, rotate the secret (behind a confirm).

interface EndpointRef {
  id: string;
  url: string;
  enabled: boolean;
  version: number;
}

export const SIGNING_NOTE = 'Each delivery carries webhook-id, webhook-timestamp and webhook-signature headers (Standard Webhooks): verify them with this secret.';

/** Every cached read of webhooks (the list, the log, a delivery): refetched after a change. */
export function useWebhooksRefresh() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  return () => queryClient.invalidateQueries({ queryKey: trpc.webhooks.pathKey() });
}

export function EnabledSwitch({ endpoint, onChanged }: { endpoint: EndpointRef; onChanged: () => void }) {
  const trpc = useTRPC();
  const update = useMutation(trpc.webhooks.update.mutationOptions({ onSettled: onChanged }));
  return (
    <span className="inline-flex flex-col">
      <button
        type="button"
        role="switch"
        aria-checked={endpoint.enabled}
        aria-label={`${endpoint.enabled ? 'Disable' : 'Enable'} ${endpoint.url}`}
        disabled={update.isPending}
        onClick={() => update.mutate({ id: endpoint.id, expectedVersion: endpoint.version, enabled: !endpoint.enabled })}
        className={`relative inline-flex h-4 w-7 shrink-0 items-center rounded-full transition-colors disabled:cursor-wait disabled:opacity-60 ${endpoint.enabled ? 'bg-emerald-600' : 'bg-zinc-300'}`}
      >
        <span className={`inline-block size-3 rounded-full bg-white shadow transition-transform ${endpoint.enabled ? 'translate-x-3.5' : 'translate-x-0.5'}`} />
      </button>
      {update.error && (
        <span role="alert" className="mt-0.5 max-w-40 text-xs text-red-700">
          {update.error.data?.code === 'CONFLICT' ? 'Changed meanwhile: shown as it is now, try again.' : update.error.message}
        </span>
      )}
    </span>
  );
}

export function SendTest({ endpoint, showLogLink = true }: { endpoint: EndpointRef; showLogLink?: boolean }) {
  const trpc = useTRPC();
  const refresh = useWebhooksRefresh();
  const send = useMutation(trpc.webhooks.sendTest.mutationOptions({ onSuccess: () => void refresh() }));
  return (
    <span className="inline-flex items-baseline gap-1.5">
      <button
        type="button"
        className={quietButtonClass}
        disabled={send.isPending || !endpoint.enabled}
        title={endpoint.enabled ? 'Queue a webhook.test event to this endpoint' : 'Enable the endpoint to send it a test event'}
        aria-label={`Send test event to ${endpoint.url}`}
        onClick={() => send.mutate({ id: endpoint.id })}
      >
        {send.isPending ? 'Sending…' : 'Send test event'}
      </button>
      {send.isSuccess && (
        <span role="status" className="text-xs text-emerald-800">
          Queued{' '}
          {showLogLink && (
            <Link href={`/settings/webhooks/${endpoint.id}?delivery=${send.data.id}`} className="underline">
              see it
            </Link>
          )}
        </span>
      )}
      {send.error && (
        <span role="alert" className="text-xs text-red-700">
          {send.error.message}
        </span>
      )}
    </span>
  );
}

/** Rotate behind a confirm; the new secret goes to `onRotated`, which shows it once. */
export function RotateSecret({ endpoint, onRotated }: { endpoint: EndpointRef; onRotated: (rotated: { url: string; secret: string }) => void }) {
  const trpc = useTRPC();
  const [open, setOpen] = useState(false);
  const rotate = useMutation(
    trpc.webhooks.rotateSecret.mutationOptions({
      onSuccess: ({ secret, endpoint: changed }) => {
        setOpen(false);
        onRotated({ url: changed.url, secret });
      },
    }),
  );
  return (
    <span className="inline-flex items-baseline gap-1.5">
      <ConfirmAction
        label="Rotate secret"
        ariaLabel={`Rotate the secret of ${endpoint.url}`}
        confirmLabel="Confirm rotate"
        warning="The current secret stops verifying at once."
        askReason={false}
        open={open}
        onOpenChange={setOpen}
        pending={rotate.isPending}
        onConfirm={() => rotate.mutate({ id: endpoint.id })}
      />
      {rotate.error && (
        <span role="alert" className="text-xs text-red-700">
          {rotate.error.message}
        </span>
      )}
    </span>
  );
}
