'use client';

import { useState } from 'react';
import { PROJECT_COOKIE } from '@/server/common/cookies';
import type { ProjectMembership } from '@/server/http/server-caller';

// The top bar's controls that act in the browser: switching project and signing out.

/**
 * Work in this project from now on: the switcher's cookie, then a full load of `then`
 * (which drops every cached answer of the old project). The server honours the cookie
 * only for a project the person is a member of.
 */
export function chooseProject(projectId: string, then?: string) {
  const secure = window.location.protocol === 'https:' ? '; Secure' : '';
  document.cookie = `${PROJECT_COOKIE}=${encodeURIComponent(projectId)}; Path=/; Max-Age=31536000; SameSite=Lax${secure}`;
  if (then) window.location.assign(then);
  else window.location.reload();
}

export function ProjectSwitcher({ memberships, currentProjectId }: { memberships: ProjectMembership[]; currentProjectId: string }) {
  const current = memberships.find((m) => m.projectId === currentProjectId);
  if (memberships.length < 2) {
    return (
      <span className="text-zinc-300">
        <span className="text-zinc-500">Project </span>
        <span data-testid="current-project" className="font-medium text-zinc-100">
          {current?.projectName}
        </span>
      </span>
    );
  }
  return (
    <label className="flex items-center gap-1.5 text-zinc-500">
      Project
      <select
        data-testid="current-project"
        aria-label="Project"
        value={currentProjectId}
        onChange={(event) => chooseProject(event.target.value)}
        className="rounded border border-zinc-700 bg-zinc-800 px-1.5 py-0.5 font-medium text-zinc-100 focus:border-zinc-500 focus:outline-none"
      >
        {memberships.map((m) => (
          <option key={m.projectId} value={m.projectId}>
            {m.projectName} ({m.role.toLowerCase()})
          </option>
        ))}
      </select>
    </label>
  );
}

export function SignOutButton() {
  const [signingOut, setSigningOut] = useState(false);
  return (
    <button
      type="button"
      disabled={signingOut}
      onClick={async () => {
        setSigningOut(true);
        // Ends the session row as well as the cookie; whatever the answer, leave the console.
        await fetch('/api/auth/sign-out', {
          method: 'POST',
          credentials: 'same-origin',
          headers: { 'content-type': 'application/json' },
          body: '{}',
        }).catch(() => undefined);
        window.location.assign('/sign-in');
      }}
      className="rounded px-2 py-0.5 text-zinc-300 ring-1 ring-zinc-700 hover:bg-zinc-800 hover:text-zinc-100 disabled:opacity-50"
    >
      {signingOut ? 'Signing out…' : 'Sign out'}
    </button>
  );
}
