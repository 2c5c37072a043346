'use client';

import Link from 'next/link';
import { usePathname } from 'next/navigation';
import { atLeast, type Role } from '@/server/common/roles';


// The console's sections, each a page (no section says "soon"). A section with a minimum
// role is not shown below it: people see only what they may use.
const SECTIONS: { label: string; href: string; minRole?: Role; only?: Role }[] = [
  { label: 'Overview', href: '/' },
  { label: 'Stuck', href: '/stuck' },
  { label: 'Executions', href: '/executions' },
  { label: 'Workflows', href: '/workflows' },
  { label: 'Contacts', href: '/contacts' },
  { label: 'Enroll from CSV', href: '/enroll', minRole: 'MARKETER' },
  { label: 'Events', href: '/events' },
  { label: 'Audit', href: '/audit' },
  { label: 'Settings', href: '/settings', only: 'OWNER' },
];

export function SideNav({ role }: { role: Role }) {
  const pathname = usePathname();
  return (
    <nav
      aria-label="Sections"
      className="sticky top-11 h-[calc(100vh-2.75rem)] w-48 shrink-0 overflow-y-auto border-r border-zinc-200 bg-white px-2 py-3"
    >
      <ul className="space-y-0.5">
        {SECTIONS.filter((section) => (!section.only || role === section.only) && (!section.minRole || atLeast(role, section.minRole))).map(({ label, href }) => {
          const active = href === '/' ? pathname === '/' : pathname.startsWith(href);
          return (
            <li key={label}>
              <Link
                href={href}
                aria-current={active ? 'page' : undefined}
                className={
                  active
                    ? 'block rounded bg-zinc-100 px-2.5 py-1.5 font-medium text-zinc-900'
                    : 'block rounded px-2.5 py-1.5 text-zinc-600 hover:bg-zinc-50 hover:text-zinc-900'
                }
              >
                {label}
              </Link>
            </li>
          );
        })}
      </ul>
    </nav>
  );
}
