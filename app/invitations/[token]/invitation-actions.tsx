'use client';

import { useMutation } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { cardButtonClass, cardInputClass, cardQuietButtonClass } from '../../_components/card-page';
import { chooseProject } from '../../_components/session-controls';
import { useTRPC } from '../../_trpc/client';

/** Accept or decline, as the signed-in person the invitation is addressed to. */
export function AnswerInvitation({ id, projectName }: { id: string; projectName: string }) {
  const trpc = useTRPC();
  const [declining, setDeclining] = useState(false);
  const accept = useMutation(trpc.invitations.accept.mutationOptions({ onSuccess: ({ projectId }) => chooseProject(projectId, '/') }));
  const decline = useMutation(trpc.invitations.decline.mutationOptions());
  const error = accept.error ?? decline.error;
  if (decline.isSuccess) {
    return (
      <p role="status" className="text-zinc-700">
        You declined the invitation to {projectName}. The link no longer works.
      </p>
    );
  }
  return (
    <div className="space-y-3">
      {error && (
        <p role="alert" className="rounded border border-red-200 bg-red-50 px-2.5 py-1.5 text-red-800">
          {error.message}
        </p>
      )}
      {declining ? (
        <div className="flex items-center gap-2">
          <span className="text-zinc-700">Decline for good?</span>
          <button type="button" className={cardQuietButtonClass} disabled={decline.isPending} onClick={() => decline.mutate({ id })}>
            Confirm decline
          </button>
          <button type="button" className={cardQuietButtonClass} onClick={() => setDeclining(false)}>
            Keep
          </button>
        </div>
      ) : (
        <div className="flex items-center gap-2">
          <button type="button" className={cardButtonClass} disabled={accept.isPending} onClick={() => accept.mutate({ id })}>
            {accept.isPending || accept.isSuccess ? 'Joining…' : `Join ${projectName}`}
          </button>
          <button type="button" className={cardQuietButtonClass} onClick={() => setDeclining(true)}>
            Decline
          </button>
        </div>
      )}
    </div>
  );
}

/**
 * For a person with no account: one for the invited email (fixed, not editable), with the
 * password they choose; then signed in through better-auth like any sign-in.
 */
export function CreateAccountForm({ token, email }: { token: string; email: string }) {
  const trpc = useTRPC();
  const [signInError, setSignInError] = useState<string | null>(null);
  const create = useMutation(trpc.invitations.createAccount.mutationOptions());

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const password = String(form.get('password') ?? '');
    if (password !== String(form.get('repeat') ?? '')) {
      setSignInError('The two passwords differ.');
      return;
    }
    setSignInError(null);
    create.mutate(
      { token, name: String(form.get('name') ?? ''), password },
      {
        onSuccess: async ({ projectId }) => {
          const response = await fetch('/api/auth/sign-in/email', {
            method: 'POST',
            credentials: 'same-origin',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ email, password }),
          }).catch(() => null);
          if (response?.ok) chooseProject(projectId, '/');
          else setSignInError('Your account is ready, but signing in failed: sign in with your email and new password.');
        },
      },
    );
  }

  return (
    <form onSubmit={submit} className="space-y-3" aria-label="Create your account">
      <label className="block">
        <span className="font-medium text-zinc-700">Email</span>
        <input value={email} readOnly aria-readonly className={`${cardInputClass} bg-zinc-50 text-zinc-600`} />
      </label>
      <label className="block">
        <span className="font-medium text-zinc-700">Your name</span>
        <input name="name" required maxLength={100} autoComplete="name" className={cardInputClass} />
      </label>
      <label className="block">
        <span className="font-medium text-zinc-700">Choose a password</span>
        <input name="password" type="password" required minLength={8} maxLength={128} autoComplete="new-password" className={cardInputClass} />
      </label>
      <label className="block">
        <span className="font-medium text-zinc-700">Repeat it</span>
        <input name="repeat" type="password" required minLength={8} maxLength={128} autoComplete="new-password" className={cardInputClass} />
      </label>
      {(create.error || signInError) && (
        <p role="alert" className="rounded border border-red-200 bg-red-50 px-2.5 py-1.5 text-red-800">
          {signInError ?? create.error?.message}
        </p>
      )}
      <button type="submit" disabled={create.isPending || create.isSuccess} className={`${cardButtonClass} w-full`}>
        {create.isPending || create.isSuccess ? 'Creating your account…' : 'Create account and join'}
      </button>
    </form>
  );
}
