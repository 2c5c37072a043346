import type { Metadata } from 'next';
import { headers } from 'next/headers';
import { redirect } from 'next/navigation';
import type { ReactNode } from 'react';
import { signedInPerson } from '@/server/auth/actor';
import { REQUEST_PATH_HEADER } from '@/server/auth/cookies';
import { db } from '@/server/db';
import { SideNav } from './_components/side-nav';
import { TopBar } from './_components/top-bar';
import { TRPCReactProvider } from './_trpc/client';
import './globals.css';

export const metadata: Metadata = {
  title: { default: 'Waypost', template: '%s · Waypost' },
  description: 'Operator console for race-safe marketing workflows',
  icons: { icon: '/waypost.svg' },
};

/** Where a signed-out visitor is sent; the page they wanted comes back as ?next=. */
function signInUrl(path: string): string {
  return path === '/' ? '/sign-in' : `/sign-in?next=${encodeURIComponent(path)}`;
}

export default async function RootLayout({ children }: { children: ReactNode }) {
  const requestHeaders = await headers();
  // Set by proxy.ts for every page; the sign-in page is the one page shown signed out.
  const path = requestHeaders.get(REQUEST_PATH_HEADER) ?? '/';
  if (path === '/sign-in' || path.startsWith('/sign-in?')) {
    return (
      <html lang="en">
        <body className="min-h-screen">{children}</body>
      </html>
    );
  }

  // Every other page belongs to a project: without a valid session and a membership
  // there is nothing to show. (proxy.ts already sent visitors without a cookie away;
  // this catches expired sessions and people who belong to no project.)
  const person = await signedInPerson(db(), requestHeaders);
  if (!person?.current) redirect(signInUrl(path));

  return (
    <html lang="en">
      <body className="min-h-screen">
        <TopBar person={person} current={person.current} />
        <div className="flex">
          <SideNav role={person.current.role} />
          <main className="min-w-0 flex-1">
            <TRPCReactProvider>{children}</TRPCReactProvider>
          </main>
        </div>
      </body>
    </html>
  );
}
