'use client';

import { useState, type FormEvent } from 'react';

/** better-auth's answer to a refused sign-in is JSON with a message; a proxy's may not be. */
async function refusal(response: Response): Promise<string> {
  if (response.status === 401) return 'Wrong email or password.';
  if (response.status === 429) {
    const seconds = Number(response.headers.get('x-retry-after'));
    const wait = Number.isFinite(seconds) && seconds > 0 ? ` in ${seconds} s` : ' in a minute';
    return `Too many sign-in attempts from here. Try again${wait}.`;
  }
  const body = (await response.json().catch(() => null)) as { message?: unknown } | null;
  if (response.status === 400 && typeof body?.message === 'string') return body.message;
  return `Sign-in failed (HTTP ${response.status}). Try again, or ask an administrator.`;
}

export function SignInForm({ destination }: { destination: string }) {
  const [submitting, setSubmitting] = useState(false);
  const [error, setError] = useState<string | null>(null);

  async function signIn(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    setSubmitting(true);
    setError(null);
    try {
      const response = await fetch('/api/auth/sign-in/email', {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: String(form.get('email') ?? ''), password: String(form.get('password') ?? '') }),
      });
      if (response.ok) {
        // A full navigation, so the console's layout renders with the new session.
        window.location.assign(destination);
        return;
      }
      setError(await refusal(response));
    } catch {
      setError('Could not reach the server. Check your connection and try again.');
    }
    setSubmitting(false);
  }

  const input =
    'mt-1 block w-full rounded border border-zinc-300 bg-white px-2.5 py-1.5 text-[13px] shadow-xs focus:border-zinc-500 focus:outline-none focus:ring-2 focus:ring-zinc-200';
  return (
    <form onSubmit={signIn} className="space-y-3">
      <label className="block">
        <span className="font-medium text-zinc-700">Email</span>
        <input name="email" type="email" autoComplete="username" required autoFocus className={input} />
      </label>
      <label className="block">
        <span className="font-medium text-zinc-700">Password</span>
        <input name="password" type="password" autoComplete="current-password" required className={input} />
      </label>
      {error && (
        <p role="alert" className="rounded border border-red-200 bg-red-50 px-2.5 py-1.5 text-red-800">
          {error}
        </p>
      )}
      <button
        type="submit"
        disabled={submitting}
        className="w-full rounded bg-zinc-900 px-3 py-1.5 font-medium text-white hover:bg-zinc-800 disabled:cursor-wait disabled:opacity-60"
      >
        {submitting ? 'Signing in…' : 'Sign in'}
      </button>
    </form>
  );
}
