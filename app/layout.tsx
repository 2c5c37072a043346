import type { Metadata } from 'next';
import { headers } from 'next/headers';
import { redirect } from 'next/navigation';
import type { ReactNode } from 'react';
import Link from 'next/link';
import { REQUEST_PATH_HEADER } from '@/server/common/cookies';
import { databaseUnavailable } from '@/server/database-unavailable';
import { pendingInvitationCount, signedInPerson, type SignedInPerson } from '@/server/http/server-caller';
import { DatabaseUnavailableDocument } from './_components/database-unavailable';
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
  // Set by proxy.ts for every page. Signing in and answering invitations are shown outside
  // the console: to visitors, and to people who belong to no project yet.
  const path = requestHeaders.get(REQUEST_PATH_HEADER) ?? '/';
  if (/^\/(sign-in|invitations)(\/|\?|$)/.test(path)) {
    return (
      <html lang="en">
        <body className="min-h-screen bg-zinc-100">
          <TRPCReactProvider>{children}</TRPCReactProvider>
        </body>
      </html>
    );
  }

  // Every other page belongs to a project: without a valid session and a membership
  // there is nothing to show. (proxy.ts already sent visitors without a cookie away;
  // this catches expired sessions and people who belong to no project.)
  let person: SignedInPerson | null;
  let invitations = 0;
  try {
    person = await signedInPerson();
    if (person?.current) invitations = await pendingInvitationCount(person.email);
  } catch (error) {
    // A full page load while PostgreSQL is away: a page that says so and reloads, not a 500.
    if (databaseUnavailable(error)) return <DatabaseUnavailableDocument />;
    throw error;
  }
  if (!person?.current) redirect(signInUrl(path));

  return (
    <html lang="en">
      <body className="min-h-screen">
        <TopBar person={person} current={person.current} />
        {invitations > 0 && (
          <div role="status" className="flex items-center gap-2 border-b border-sky-200 bg-sky-50 px-4 py-1.5 text-sky-900">
            <span>
              You are invited to {invitations === 1 ? 'a project' : `${invitations} projects`}.
            </span>
            <Link href="/invitations" className="font-medium underline">
              Review {invitations === 1 ? 'the invitation' : 'invitations'}
            </Link>
          </div>
        )}
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
