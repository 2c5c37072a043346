'use client';

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { LoadError } from '../_components/panel';
import { useTRPC } from '../_trpc/client';
import type { Role } from '@/server/common/roles';
import { localDateTime } from '../_components/time';
import { ConfirmAction } from './confirm-action';
import { buttonClass, inputClass, quietButtonClass } from './controls';

/** The link of the invitation just made, shown this once (only its hash is kept), with a copy button. */
export function InvitationLinkNotice({ email, role, link, onDismiss }: { email: string; role: Role; link: string; onDismiss: () => void }) {
  const [copied, setCopied] = useState<'yes' | 'failed' | null>(null);
  return (
    <div role="status" className="basis-full rounded border border-emerald-200 bg-emerald-50 px-3 py-2 text-emerald-900">
      <p>
        Invitation for <span className="font-medium">{email}</span> as {role}. Send them this link; it is shown only now.
      </p>
      <div className="mt-1.5 flex items-center gap-2">
        <input
          aria-label="Invitation link"
          readOnly
          value={link}
          onFocus={(event) => event.currentTarget.select()}
          className={`${inputClass} w-[min(640px,100%)] font-mono text-xs`}
        />
        <button
          type="button"
          className={buttonClass}
          onClick={() =>
            navigator.clipboard.writeText(link).then(
              () => setCopied('yes'),
              () => setCopied('failed'),
            )
          }
        >
          {copied === 'yes' ? 'Copied' : 'Copy link'}
        </button>
        <button type="button" className={quietButtonClass} onClick={onDismiss}>
          Done
        </button>
      </div>
      {copied === 'failed' && <p className="mt-1 text-xs text-red-700">The browser refused to copy: select the link and copy it by hand.</p>}
    </div>
  );
}

const STATUS_STYLE: Record<string, string> = {
  PENDING: 'bg-sky-50 text-sky-800 ring-sky-200',
  ACCEPTED: 'bg-emerald-50 text-emerald-800 ring-emerald-200',
  DECLINED: 'bg-zinc-100 text-zinc-700 ring-zinc-200',
  REVOKED: 'bg-zinc-100 text-zinc-700 ring-zinc-200',
  EXPIRED: 'bg-amber-50 text-amber-800 ring-amber-200',
};

/** The project's invitations of the last 30 days, pending first, each pending one revocable. */
export function InvitationsTable() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const invitations = useQuery(trpc.members.invitations.queryOptions());
  const [confirming, setConfirming] = useState<string | null>(null);
  const revoke = useMutation(
    trpc.members.revokeInvitation.mutationOptions({
      onSettled: () => {
        setConfirming(null);
        void queryClient.invalidateQueries({ queryKey: trpc.members.invitations.queryKey() });
      },
    }),
  );

  if (invitations.error) return <LoadError what="the invitations" message={invitations.error.message} />;
  if (!invitations.data) return <p className="border-b border-zinc-200 px-4 py-2 text-zinc-500">Loading invitations…</p>;
  const pending = invitations.data.filter((i) => i.status === 'PENDING').length;
  return (
    <div className="border-b border-zinc-200">
      <h3 className="flex items-center gap-2 bg-zinc-50 px-4 py-1.5 text-xs font-semibold text-zinc-700" id="invitations-heading">
        Invitations <span className="font-normal text-zinc-500">{pending} pending · last 30 days</span>
      </h3>
      {revoke.error && (
        <p role="alert" className="px-4 py-1.5 text-red-700">
          Could not revoke: {revoke.error.message}
        </p>
      )}
      {invitations.data.length === 0 ? (
        <p className="px-4 py-2 text-zinc-500">No invitations in the last 30 days.</p>
      ) : (
        <table className="w-full text-left" aria-labelledby="invitations-heading">
          <thead className="text-[11px] font-medium uppercase tracking-wide whitespace-nowrap text-zinc-500">
            <tr>
              <th scope="col" className="px-4 py-1.5 font-medium">Email</th>
              <th scope="col" className="px-2 py-1.5 font-medium">Role</th>
              <th scope="col" className="px-2 py-1.5 font-medium">Status</th>
              <th scope="col" className="px-2 py-1.5 font-medium">Invited</th>
              <th scope="col" className="px-2 py-1.5 font-medium">Expires / ended</th>
              <th scope="col" className="px-4 py-1.5 text-right font-medium" />
            </tr>
          </thead>
          <tbody className="divide-y divide-zinc-100">
            {invitations.data.map((invitation) => (
              <tr key={invitation.id}>
                <td className="px-4 py-1.5 font-medium">{invitation.email}</td>
                <td className="px-2 py-1.5">{invitation.role}</td>
                <td className="px-2 py-1.5">
                  <span className={`rounded px-1.5 py-0.5 text-[11px] font-medium ring-1 ${STATUS_STYLE[invitation.status]}`}>{invitation.status}</span>
                </td>
                <td className="px-2 py-1.5 whitespace-nowrap tabular-nums" suppressHydrationWarning>
                  {localDateTime(invitation.createdAt)}
                </td>
                <td className="px-2 py-1.5 whitespace-nowrap tabular-nums" suppressHydrationWarning>
                  {localDateTime(invitation.endedAt ?? invitation.expiresAt)}
                </td>
                <td className="px-4 py-1.5 text-right whitespace-nowrap">
                  {invitation.status === 'PENDING' && (
                    <ConfirmAction
                      label="Revoke"
                      ariaLabel={`Revoke the invitation of ${invitation.email}`}
                      confirmLabel="Confirm revoke"
                      warning="The link stops working."
                      open={confirming === invitation.id}
                      onOpenChange={(open) => setConfirming(open ? invitation.id : null)}
                      pending={revoke.isPending}
                      onConfirm={(reason) => revoke.mutate({ id: invitation.id, reason })}
                    />
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
