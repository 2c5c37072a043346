'use client';

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { LoadError, Panel } from '../_components/panel';
import { useTRPC } from '../_trpc/client';
import { InvitationsTable, InvitationLinkNotice } from './invitations-table';
import type { Role } from '@/server/common/roles';
import { localDateTime } from '../_components/time';
import { ConfirmAction } from './confirm-action';
import { ROLE_OPTIONS, buttonClass, inputClass } from './controls';

export function MembersPanel({ currentUserId }: { currentUserId: string | null }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const members = useQuery(trpc.members.list.queryOptions());
  const [confirming, setConfirming] = useState<string | null>(null);
  /** The link of the invitation just made: in the page's memory only, gone on reload. */
  const [invited, setInvited] = useState<{ email: string; role: Role; link: string } | null>(null);
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.members.list.queryKey() });
  const refreshInvitations = () => queryClient.invalidateQueries({ queryKey: trpc.members.invitations.queryKey() });

  const add = useMutation(
    trpc.members.add.mutationOptions({
      onSuccess: ({ invitation, link }) => {
        setInvited({ email: invitation.email, role: invitation.role, link });
        void refreshInvitations();
      },
    }),
  );
  const setRole = useMutation(trpc.members.setRole.mutationOptions({ onSettled: () => void refresh() }));
  const remove = useMutation(
    trpc.members.remove.mutationOptions({
      onSettled: () => {
        setConfirming(null);
        void refresh();
      },
    }),
  );
  const changeError = setRole.error ?? remove.error;

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    setInvited(null);
    add.mutate(
      { email: String(form.get('email') ?? ''), role: String(form.get('role')) as Role },
      { onSuccess: () => (event.target as HTMLFormElement).reset() },
    );
  }

  return (
    <Panel
      title="Members"
      labelledBy="members-heading"
      summary={members.data && <span className="text-xs text-zinc-500">{members.data.length}</span>}
    >
      <form onSubmit={submit} className="flex flex-wrap items-end gap-2 border-b border-zinc-200 px-4 py-3" aria-label="Invite a member">
        <label className="flex flex-col gap-1">
          <span className="text-xs font-medium text-zinc-600">Email</span>
          <input name="email" type="email" required maxLength={254} className={`${inputClass} w-64`} />
        </label>
        <label className="flex flex-col gap-1">
          <span className="text-xs font-medium text-zinc-600">Role</span>
          <select name="role" defaultValue="VIEWER" className={inputClass}>
            {ROLE_OPTIONS.map(({ role, summary }) => (
              <option key={role} value={role}>
                {role} — {summary}
              </option>
            ))}
          </select>
        </label>
        <button type="submit" disabled={add.isPending} className={buttonClass}>
          {add.isPending ? 'Inviting…' : 'Invite'}
        </button>
        <p className="basis-full text-xs text-zinc-500">
          They join when they open the link and accept, signed in as that email (or after creating an account for it). The link
          works for 7 days and is shown once.
        </p>
        {add.error && (
          <p role="alert" className="basis-full text-red-700">
            Could not invite: {add.error.message}
          </p>
        )}
        {invited && <InvitationLinkNotice {...invited} onDismiss={() => setInvited(null)} />}
      </form>
      <InvitationsTable />
      {members.error && <LoadError what="the members" message={members.error.message} />}
      {changeError && (
        <p role="alert" className="border-b border-zinc-200 px-4 py-2 text-red-700">
          {changeError.message}
        </p>
      )}
      {members.data && (
        <table className="w-full text-left">
          <thead className="bg-zinc-50 text-[11px] font-medium uppercase tracking-wide whitespace-nowrap text-zinc-500">
            <tr>
              <th scope="col" className="px-4 py-1.5 font-medium">Email</th>
              <th scope="col" className="px-2 py-1.5 font-medium">Name</th>
              <th scope="col" className="px-2 py-1.5 font-medium">Role</th>
              <th scope="col" className="px-2 py-1.5 font-medium">Member since</th>
              <th scope="col" className="px-4 py-1.5 text-right font-medium" />
            </tr>
          </thead>
          <tbody className="divide-y divide-zinc-100">
            {members.data.map((member) => (
              <tr key={member.userId}>
                <td className="px-4 py-1.5 font-medium">
                  {member.email}
                  {member.userId === currentUserId && <span className="ml-1.5 text-xs font-normal text-zinc-500">(you)</span>}
                </td>
                <td className="px-2 py-1.5 text-zinc-600">{member.name}</td>
                <td className="px-2 py-1">
                  <select
                    aria-label={`Role of ${member.email}`}
                    value={member.role}
                    disabled={setRole.isPending}
                    onChange={(event) => setRole.mutate({ userId: member.userId, role: event.target.value as Role })}
                    className={inputClass}
                  >
                    {ROLE_OPTIONS.map(({ role }) => (
                      <option key={role} value={role}>
                        {role}
                      </option>
                    ))}
                  </select>
                </td>
                <td className="px-2 py-1.5 whitespace-nowrap tabular-nums" suppressHydrationWarning>
                  {localDateTime(member.joinedAt)}
                </td>
                <td className="px-4 py-1.5 text-right whitespace-nowrap">
                  <ConfirmAction
                    label="Remove"
                    ariaLabel={`Remove ${member.email}`}
                    confirmLabel="Confirm remove"
                    open={confirming === member.userId}
                    onOpenChange={(open) => setConfirming(open ? member.userId : null)}
                    pending={remove.isPending}
                    onConfirm={(reason) => remove.mutate({ userId: member.userId, reason })}
                  />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Panel>
  );
}
