'use client';

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useHydrated } from '../../_components/hydrated';
import { useTRPC } from '../../_trpc/client';

// Enable or disable enrollment into a workflow. Optimistic: the switch (and every cached
// view of the workflow, list and detail) flips at once; if the server refuses, they flip
// back and the reason is shown beside the switch.

/** `compact`: the switch alone (a table column headed "Enabled"); the state is still said to screen readers. */
export function EnabledSwitch({ id, name, enabled, mayWrite, compact = false }: { id: string; name: string; enabled: boolean; mayWrite: boolean; compact?: boolean }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [error, setError] = useState<string | null>(null);
  // Disabled until hydrated: a click on the server-rendered switch would otherwise do nothing.
  const hydrated = useHydrated();
  const listKey = trpc.workflows.list.queryKey();
  const getKey = trpc.workflows.get.queryKey({ id });

  const setEnabled = useMutation(
    trpc.workflows.setEnabled.mutationOptions({
      onMutate: async ({ enabled: next }) => {
        setError(null);
        await Promise.all([queryClient.cancelQueries({ queryKey: listKey }), queryClient.cancelQueries({ queryKey: getKey })]);
        const before = { list: queryClient.getQueryData(listKey), get: queryClient.getQueryData(getKey) };
        queryClient.setQueryData(listKey, (old) => old?.map((w) => (w.id === id ? { ...w, enabled: next } : w)));
        queryClient.setQueryData(getKey, (old) => (old ? { ...old, enabled: next } : old));
        return before;
      },
      onError: (err, _input, before) => {
        if (before) {
          queryClient.setQueryData(listKey, before.list);
          queryClient.setQueryData(getKey, before.get);
        }
        setError(err.message);
      },
      onSettled: () => {
        void queryClient.invalidateQueries({ queryKey: listKey });
        void queryClient.invalidateQueries({ queryKey: getKey });
      },
    }),
  );

  if (!mayWrite) {
    return (
      <span data-testid="enabled-state" className={`inline-flex items-center gap-1.5 text-xs ${enabled ? 'text-emerald-700' : 'text-zinc-500'}`}>
        <span className={`size-1.5 rounded-full ${enabled ? 'bg-emerald-500' : 'bg-zinc-300'}`} aria-hidden />
        {enabled ? 'Enabled' : 'Disabled'}
      </span>
    );
  }
  return (
    <span className="inline-flex items-center gap-2">
      <button
        type="button"
        role="switch"
        aria-checked={enabled}
        aria-label={`Enrollment into ${name}`}
        disabled={!hydrated || setEnabled.isPending}
        onClick={() => setEnabled.mutate({ id, enabled: !enabled })}
        className={`relative inline-flex h-4.5 w-8 shrink-0 cursor-pointer items-center rounded-full transition-colors focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-sky-600 disabled:cursor-wait ${
          enabled ? 'bg-emerald-600' : 'bg-zinc-300'
        }`}
      >
        <span className={`inline-block size-3.5 rounded-full bg-white shadow transition-transform ${enabled ? 'translate-x-4' : 'translate-x-0.5'}`} />
      </button>
      <span className={`text-xs ${enabled ? 'text-emerald-700' : 'text-zinc-500'} ${compact ? 'sr-only' : ''}`}>{enabled ? 'Enabled' : 'Disabled'}</span>
      {error && (
        <span role="alert" className="text-xs text-red-700">
          Not changed: {error}
        </span>
      )}
    </span>
  );
}
