'use client';

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useRef, useState, type FormEvent } from 'react';
import { LoadError, Panel } from '../_components/panel';
import { useTRPC } from '../_trpc/client';
import type { Role } from '@/server/common/roles';
import { localDateTime } from '../_components/time';
import { ConfirmAction } from './confirm-action';
import { ROLE_OPTIONS, buttonClass, inputClass, quietButtonClass } from './controls';

/** The new key, shown until the owner dismisses it: after that it exists only where they pasted it. */
function NewKey({ name, secret, onDone }: { name: string; secret: string; onDone: () => void }) {
  const [copied, setCopied] = useState<'no' | 'yes' | 'select'>('no');
  const field = useRef<HTMLElement>(null);
  return (
    <div role="status" className="border-b border-emerald-200 bg-emerald-50 px-4 py-3">
      <p className="font-medium text-emerald-900">Key “{name}” created. Copy it now: it will not be shown again.</p>
      <div className="mt-2 flex items-center gap-2">
        <code ref={field} data-testid="new-api-key" className="min-w-0 flex-1 truncate rounded border border-emerald-200 bg-white px-2 py-1 font-mono text-[12px] select-all">
          {secret}
        </code>
        <button
          type="button"
          className={quietButtonClass}
          onClick={async () => {
            try {
              await navigator.clipboard.writeText(secret);
              setCopied('yes');
            } catch {
              // No clipboard access (plain http on a non-local address, a denied permission):
              // select the key so that Ctrl-C / Cmd-C copies it.
              if (field.current) window.getSelection()?.selectAllChildren(field.current);
              setCopied('select');
            }
          }}
        >
          {copied === 'yes' ? 'Copied' : 'Copy'}
        </button>
        <button type="button" className={quietButtonClass} onClick={onDone}>
          Done
        </button>
      </div>
      {copied === 'select' && <p className="mt-1.5 text-xs text-emerald-800">The browser refused the clipboard: the key is selected, press Ctrl-C (Cmd-C) to copy it.</p>}
      <p className="mt-1.5 text-xs text-emerald-800">
        Programs send it as <code className="font-mono">Authorization: Bearer &lt;key&gt;</code>.
      </p>
    </div>
  );
}

export function ApiKeysPanel() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const keys = useQuery(trpc.apiKeys.list.queryOptions());
  const [created, setCreated] = useState<{ name: string; secret: string } | null>(null);
  const [confirming, setConfirming] = useState<string | null>(null);
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.apiKeys.list.queryKey() });

  const create = useMutation(
    trpc.apiKeys.create.mutationOptions({
      onSuccess: (key, input) => {
        setCreated({ name: input.name, secret: key.secret });
        void refresh();
      },
    }),
  );
  const revoke = useMutation(
    trpc.apiKeys.revoke.mutationOptions({
      onSettled: () => {
        setConfirming(null);
        void refresh();
      },
    }),
  );

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    create.mutate({ name: String(form.get('name') ?? ''), role: String(form.get('role')) as Role });
    event.currentTarget.reset();
  }

  const live = keys.data?.filter((k) => !k.revokedAt).length ?? 0;
  return (
    <Panel
      title="API keys"
      labelledBy="api-keys-heading"
      summary={keys.data && <span className="text-xs text-zinc-500">{live} active</span>}
    >
      {created && <NewKey name={created.name} secret={created.secret} onDone={() => setCreated(null)} />}
      <form onSubmit={submit} className="flex flex-wrap items-end gap-2 border-b border-zinc-200 px-4 py-3" aria-label="Create an API key">
        <label className="flex flex-col gap-1">
          <span className="text-xs font-medium text-zinc-600">Name</span>
          <input name="name" required maxLength={100} placeholder="e.g. shop backend" className={`${inputClass} w-64`} />
        </label>
        <label className="flex flex-col gap-1">
          <span className="text-xs font-medium text-zinc-600">Role</span>
          <select name="role" defaultValue="MARKETER" className={inputClass}>
            {ROLE_OPTIONS.map(({ role, summary }) => (
              <option key={role} value={role}>
                {role} — {summary}
              </option>
            ))}
          </select>
        </label>
        <button type="submit" disabled={create.isPending} className={buttonClass}>
          {create.isPending ? 'Creating…' : 'Create key'}
        </button>
        {create.error && (
          <p role="alert" className="basis-full text-red-700">
            Could not create the key: {create.error.message}
          </p>
        )}
      </form>
      {keys.error && <LoadError what="the API keys" message={keys.error.message} />}
      {revoke.error && (
        <p role="alert" className="border-b border-zinc-200 px-4 py-2 text-red-700">
          Could not revoke the key: {revoke.error.message}
        </p>
      )}
      {keys.data && keys.data.length === 0 && <p className="px-4 py-6 text-zinc-500">No API keys yet.</p>}
      {keys.data && keys.data.length > 0 && (
        <table className="w-full text-left">
          <thead className="bg-zinc-50 text-[11px] font-medium uppercase tracking-wide whitespace-nowrap text-zinc-500">
            <tr>
              <th scope="col" className="px-4 py-1.5 font-medium">Name</th>
              <th scope="col" className="px-2 py-1.5 font-medium">Role</th>
              <th scope="col" className="px-2 py-1.5 font-medium">Key</th>
              <th scope="col" className="px-2 py-1.5 font-medium">Created</th>
              <th scope="col" className="px-2 py-1.5 font-medium">Last used</th>
              <th scope="col" className="px-4 py-1.5 text-right font-medium">Status</th>
            </tr>
          </thead>
          <tbody className="divide-y divide-zinc-100">
            {keys.data.map((key) => (
              <tr key={key.id} className={key.revokedAt ? 'text-zinc-400' : undefined}>
                <td className="px-4 py-1.5 font-medium">{key.name}</td>
                <td className="px-2 py-1.5">{key.role}</td>
                <td className="px-2 py-1.5 font-mono text-[12px]">{key.prefix}…</td>
                <td className="px-2 py-1.5 whitespace-nowrap tabular-nums" suppressHydrationWarning>
                  {localDateTime(key.createdAt)}
                </td>
                <td className="px-2 py-1.5 whitespace-nowrap tabular-nums" suppressHydrationWarning>
                  {key.lastUsedAt ? localDateTime(key.lastUsedAt) : 'never'}
                </td>
                <td className="px-4 py-1.5 text-right whitespace-nowrap">
                  {key.revokedAt ? (
                    <span suppressHydrationWarning>revoked {localDateTime(key.revokedAt)}</span>
                  ) : (
                    <ConfirmAction
                      label="Revoke"
                      ariaLabel={`Revoke ${key.name}`}
                      confirmLabel="Confirm revoke"
                      warning="Programs using it stop working."
                      open={confirming === key.id}
                      onOpenChange={(open) => setConfirming(open ? key.id : null)}
                      pending={revoke.isPending}
                      onConfirm={(reason) => revoke.mutate({ id: key.id, reason })}
                    />
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Panel>
  );
}
