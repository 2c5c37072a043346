import type { Metadata } from 'next';
import { redirect } from 'next/navigation';
import { signedInPerson } from '@/server/http/server-caller';
import { CardPage } from '../_components/card-page';
import { SignOutButton } from '../_components/session-controls';
import { MyInvitations } from '../invitations/my-invitations';
import { destinationAfterSignIn } from './destination';
import { SignInForm } from './sign-in-form';

export const dynamic = 'force-dynamic';

export const metadata: Metadata = { title: 'Sign in' };

export default async function SignInPage({ searchParams }: { searchParams: Promise<{ next?: string | string[] }> }) {
  const destination = destinationAfterSignIn((await searchParams).next);
  const person = await signedInPerson();
  // Invitation pages need a session, not a project: someone invited before joining anything goes there too.
  if (person?.current || (person && /^\/invitations(\/|$)/.test(destination))) redirect(destination);

  return (
    <CardPage
      wide={!!person}
      footnote={
        <>
          Accounts are made from a project owner&apos;s invitation link, or with <code className="font-mono">npm run cli -- create-user</code>.
        </>
      }
    >
      {person ? (
        // Signed in, but in no project (not joined yet, or removed from the last one).
        <div className="space-y-3">
          <h1 className="text-[15px] font-semibold">No project yet</h1>
          <p className="text-zinc-600">
            You are signed in as <span className="font-medium text-zinc-900">{person.email}</span>, but you are not a member of
            any project. Accept an invitation below, or ask a project owner to invite you.
          </p>
          <MyInvitations />
          <div className="[&_button]:text-zinc-700 [&_button]:ring-zinc-300 [&_button:hover]:bg-zinc-50">
            <SignOutButton />
          </div>
        </div>
      ) : (
        <>
          <h1 className="text-[15px] font-semibold">Sign in</h1>
          <p className="mb-4 text-zinc-500">to the operator console</p>
          <SignInForm destination={destination} />
        </>
      )}
    </CardPage>
  );
}
