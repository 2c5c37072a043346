import Link from 'next/link';
import type { ReactNode } from 'react';

/** A detail page's way back: the list it belongs to, then what this page is. */
export function Breadcrumb({ section, href, children }: { section: string; href: string; children: ReactNode }) {
  return (
    <nav aria-label="Breadcrumb" className="text-xs text-zinc-500">
      <Link href={href} className="hover:text-zinc-900 hover:underline">
        {section}
      </Link>{' '}
      / {children}
    </nav>
  );
}
