'use client';

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { INPUT_CLASS } from '../_components/filters';
import { useTRPC } from '../_trpc/client';

// Redrive of a dead-lettered event (REDRIVE_EVENT): a preview first (what dispatching it
// now will do), a mandatory reason, then apply with the version the preview showed, so
// a redrive racing a dispatcher or another operator loses cleanly instead of doubling.

const button = 'inline-flex h-7 items-center rounded border px-2.5 text-xs font-medium shadow-xs disabled:cursor-not-allowed disabled:opacity-50';

export function RedriveEvent({ eventId, name, onClose }: { eventId: string; name: string; onClose: () => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const preview = useQuery(trpc.repair.preview.queryOptions({ action: 'REDRIVE_EVENT', eventId }, { staleTime: 0, refetchOnWindowFocus: false }));
  const apply = useMutation(trpc.repair.applyOne.mutationOptions());
  const [reason, setReason] = useState('');
  const plan = preview.data && 'plan' in preview.data ? preview.data.plan : null;

  return (
    <div role="dialog" aria-label={`Redrive ${name}`} data-testid="redrive-panel" className="mt-1.5 w-full max-w-xl space-y-2 rounded border border-sky-200 bg-sky-50/60 p-2.5 text-xs">
      {preview.isPending && <p role="status">Previewing…</p>}
      {preview.error && (
        <p role="alert" className="text-red-700">
          Could not preview: {preview.error.message}
        </p>
      )}
      {apply.isSuccess ? (
        <div className="space-y-1.5">
          <p role="status" className="font-medium text-emerald-800" data-testid="redrive-result">
            Redriven: {apply.data.ok && 'change' in apply.data ? apply.data.change : 'done'}.
          </p>
          <button type="button" className={`${button} border-zinc-300 bg-white text-zinc-700`} onClick={onClose}>
            Close
          </button>
        </div>
      ) : (
        plan && (
          <form
            className="space-y-2"
            onSubmit={(e) => {
              e.preventDefault();
              if (!preview.data || reason.trim().length < 3) return;
              apply.mutate(
                { action: 'REDRIVE_EVENT', eventId, expectedVersion: preview.data.expectedVersion, reason: reason.trim() },
                {
                  onSettled: () => {
                    void queryClient.invalidateQueries({ queryKey: trpc.events.list.queryKey() });
                    void queryClient.invalidateQueries({ queryKey: trpc.executions.stats.queryKey() });
                  },
                },
              );
            }}
          >
            {plan.allowed ? (
              <>
                <p data-testid="redrive-plan">
                  <span className="font-medium">Will </span>
                  {plan.change}.
                </p>
                <p className="text-amber-800">{plan.sideEffect.note}.</p>
              </>
            ) : (
              <p className="text-red-700">Not possible now: {plan.refusal}.</p>
            )}
            <label className="block">
              <span className="text-[10.5px] font-medium tracking-wide text-zinc-500 uppercase">Reason (for the audit log, required)</span>
              <input
                value={reason}
                onChange={(e) => setReason(e.target.value)}
                required
                minLength={3}
                maxLength={500}
                placeholder="e.g. worker fixed; deliver the purchase"
                className={`${INPUT_CLASS} mt-0.5 block w-full`}
              />
            </label>
            {apply.error && (
              <p role="alert" className="text-red-700">
                {apply.error.message}{' '}
                <button type="button" className="underline" onClick={() => void preview.refetch()}>
                  Preview again
                </button>
              </p>
            )}
            <div className="flex gap-1.5">
              <button type="submit" disabled={!plan.allowed || reason.trim().length < 3 || apply.isPending} className={`${button} border-sky-700 bg-sky-600 text-white`}>
                {apply.isPending ? 'Redriving…' : 'Redrive now'}
              </button>
              <button type="button" className={`${button} border-zinc-300 bg-white text-zinc-700`} onClick={onClose}>
                Cancel
              </button>
            </div>
          </form>
        )
      )}
    </div>
  );
}
