'use client';

import { useMutation } from '@tanstack/react-query';
import { useTRPC } from '../../../_trpc/client';
import { useWebhooksRefresh } from '../../webhook-actions';

export const REDELIVERABLE = new Set(['DEAD', 'DELIVERED']);

/** Redeliver one message: back to PENDING, the same webhook-id; a second click meanwhile is told it is pending already. */
export function RedeliverButton({ id, status, label }: { id: string; status: string; label: string }) {
  const trpc = useTRPC();
  const refresh = useWebhooksRefresh();
  const redeliver = useMutation(trpc.webhooks.redeliver.mutationOptions({ onSettled: () => void refresh() }));
  if (!REDELIVERABLE.has(status) && !redeliver.isSuccess) return null;
  return (
    <span className="inline-flex items-baseline gap-1.5">
      {redeliver.isSuccess ? (
        <span role="status" className="text-xs text-emerald-800">
          Redelivering
        </span>
      ) : (
        <button
          type="button"
          aria-label={label}
          disabled={redeliver.isPending}
          onClick={() => redeliver.mutate({ id })}
          className="inline-flex h-6 items-center rounded border border-zinc-300 bg-white px-2 text-xs font-medium whitespace-nowrap text-zinc-700 shadow-xs hover:border-zinc-400 disabled:cursor-wait disabled:opacity-60"
        >
          Redeliver
        </button>
      )}
      {redeliver.error && (
        <span role="alert" className="text-xs text-red-700">
          {redeliver.error.message}
        </span>
      )}
    </span>
  );
}
