'use client';

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { chooseProject } from '../_components/session-controls';
import { cardButtonClass, cardQuietButtonClass } from '../_components/card-page';
import { useTRPC } from '../_trpc/client';

/** The signed-in person's pending invitations, each answered with Accept or Decline. */
export function MyInvitations() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const mine = useQuery(trpc.invitations.mine.queryOptions());
  const [declining, setDeclining] = useState<string | null>(null);
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.invitations.mine.queryKey() });
  // Into the project just joined, with a full load so the console renders with it.
  const accept = useMutation(trpc.invitations.accept.mutationOptions({ onSuccess: ({ projectId }) => chooseProject(projectId, '/'), onError: () => void refresh() }));
  const decline = useMutation(
    trpc.invitations.decline.mutationOptions({
      onSettled: () => {
        setDeclining(null);
        void refresh();
      },
    }),
  );
  const error = accept.error ?? decline.error;

  if (mine.isPending) return <p className="text-zinc-500">Loading your invitations…</p>;
  if (mine.error) {
    return (
      <p role="alert" className="text-red-700">
        Could not load your invitations: {mine.error.message}
      </p>
    );
  }
  return (
    <div className="space-y-2">
      {error && (
        <p role="alert" className="rounded border border-red-200 bg-red-50 px-2.5 py-1.5 text-red-800">
          {error.message}
        </p>
      )}
      {decline.isSuccess && (
        <p role="status" className="text-zinc-600">
          Invitation declined.
        </p>
      )}
      {mine.data.length === 0 ? (
        <p className="text-zinc-600">No pending invitations.</p>
      ) : (
        <ul className="divide-y divide-zinc-100 rounded border border-zinc-200" aria-label="Pending invitations">
          {mine.data.map((invitation) => (
            <li key={invitation.id} className="flex flex-wrap items-center gap-x-3 gap-y-2 px-3 py-2">
              <div className="min-w-0 flex-1">
                <p>
                  <span className="font-medium">{invitation.projectName}</span>{' '}
                  <span className="rounded bg-zinc-100 px-1.5 py-0.5 text-[11px] font-medium tracking-wide text-zinc-700">{invitation.role}</span>
                </p>
                <p className="text-xs text-zinc-500" suppressHydrationWarning>
                  from {invitation.invitedBy} · expires {new Date(invitation.expiresAt).toLocaleString()}
                </p>
              </div>
              {declining === invitation.id ? (
                <span className="flex items-center gap-1.5">
                  <button
                    type="button"
                    className={cardQuietButtonClass}
                    disabled={decline.isPending}
                    onClick={() => decline.mutate({ id: invitation.id })}
                    aria-label={`Confirm declining ${invitation.projectName}`}
                  >
                    Confirm decline
                  </button>
                  <button type="button" className={cardQuietButtonClass} onClick={() => setDeclining(null)}>
                    Keep
                  </button>
                </span>
              ) : (
                <span className="flex items-center gap-1.5">
                  <button
                    type="button"
                    className={cardButtonClass}
                    disabled={accept.isPending}
                    onClick={() => accept.mutate({ id: invitation.id })}
                    aria-label={`Accept ${invitation.projectName}`}
                  >
                    {accept.isPending && accept.variables?.id === invitation.id ? 'Joining…' : 'Accept'}
                  </button>
                  <button
                    type="button"
                    className={cardQuietButtonClass}
                    onClick={() => setDeclining(invitation.id)}
                    aria-label={`Decline ${invitation.projectName}`}
                  >
                    Decline
                  </button>
                </span>
              )}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
