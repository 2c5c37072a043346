'use client';

import Link from 'next/link';
import { usePathname } from 'next/navigation';

type Role = 'VIEWER' | 'MARKETER' | 'OPERATOR' | 'OWNER';

// The console's sections. Those without a page yet are shown, not linked, so operators
// see where the console is going without landing on a 404. A section with a minimum
// role is not shown below it: people see only what they may use.
const SECTIONS: { label: string; href?: string; ownerOnly?: boolean }[] = [
  { label: 'Overview', href: '/' },
  { label: 'Stuck', href: '/stuck' },
  { label: 'Executions', href: '/executions' },
  { label: 'Events', href: '/events' },
  { label: 'Workflows' },
  { label: 'Contacts' },
  { label: 'Audit', href: '/audit' },
  { label: 'Settings', href: '/settings', ownerOnly: true },
];

export function SideNav({ role }: { role: Role }) {
  const pathname = usePathname();
  return (
    <nav
      aria-label="Sections"
      className="sticky top-11 h-[calc(100vh-2.75rem)] w-48 shrink-0 overflow-y-auto border-r border-zinc-200 bg-white px-2 py-3"
    >
      <ul className="space-y-0.5">
        {SECTIONS.filter((section) => !section.ownerOnly || role === 'OWNER').map(({ label, href }) => {
          if (!href) {
            return (
              <li key={label} className="flex items-center justify-between rounded px-2.5 py-1.5 text-zinc-400">
                {label}
                <span className="text-[10px] font-medium uppercase tracking-wide text-zinc-300">soon</span>
              </li>
            );
          }
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
