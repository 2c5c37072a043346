import type { ProjectMembership, SignedInPerson } from '@/server/http/server-caller';
import { ProjectSwitcher, SignOutButton } from './session-controls';

/** The console's top bar: the product, then who is signed in, where, and as what. */
export function TopBar({ person, current }: { person: SignedInPerson; current: ProjectMembership }) {
  return (
    <header className="sticky top-0 z-10 flex h-11 items-center gap-3 border-b border-zinc-800 bg-zinc-900 px-4 text-zinc-100">
      {/* Three waypoints on a route: the product's mark, also its favicon. */}
      <img src="/waypost.svg" width={20} height={20} alt="" />
      <span className="text-[14px] font-semibold tracking-tight">Waypost</span>
      <span className="h-4 w-px bg-zinc-700" aria-hidden />
      <span className="text-zinc-400">Operator console</span>

      <div className="ml-auto flex items-center gap-3" aria-label="Signed in">
        <ProjectSwitcher memberships={person.memberships} currentProjectId={current.projectId} />
        <span
          data-testid="current-role"
          title="Your role in this project"
          className="rounded bg-zinc-800 px-1.5 py-0.5 text-[11px] font-medium tracking-wide text-zinc-200 ring-1 ring-zinc-700"
        >
          {current.role}
        </span>
        <span className="h-4 w-px bg-zinc-700" aria-hidden />
        <span data-testid="current-user" className="text-zinc-300" title={person.name}>
          {person.email}
        </span>
        <SignOutButton />
      </div>
    </header>
  );
}
