import type { Metadata } from 'next';
import { headers } from 'next/headers';
import { redirect } from 'next/navigation';
import { signedInPerson } from '@/server/auth/actor';
import { db } from '@/server/db';
import { SignOutButton } from '../_components/session-controls';
import { destinationAfterSignIn } from './destination';
import { SignInForm } from './sign-in-form';

export const dynamic = 'force-dynamic';

export const metadata: Metadata = { title: 'Sign in' };

export default async function SignInPage({ searchParams }: { searchParams: Promise<{ next?: string | string[] }> }) {
  const destination = destinationAfterSignIn((await searchParams).next);
  const person = await signedInPerson(db(), await headers());
  if (person?.current) redirect(destination);

  return (
    <div className="flex min-h-screen items-start justify-center bg-zinc-100 px-4 pt-[14vh]">
      <div className="w-full max-w-[360px]">
        <div className="mb-5 flex items-center justify-center gap-2">
          <img src="/waypost.svg" width={24} height={24} alt="" />
          <span className="text-[16px] font-semibold tracking-tight">Waypost</span>
        </div>
        <div className="rounded-md border border-zinc-200 bg-white px-6 py-5 shadow-xs">
          {person ? (
            // Signed in, but in no project (removed from the last one): nothing to show yet.
            <div className="space-y-3">
              <h1 className="text-[15px] font-semibold">No project yet</h1>
              <p className="text-zinc-600">
                You are signed in as <span className="font-medium text-zinc-900">{person.email}</span>, but you are not a member
                of any project. Ask a project owner to add you.
              </p>
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
        </div>
        <p className="mt-4 text-center text-xs text-zinc-500">
          Accounts are created by a project owner or with <code className="font-mono">npm run cli -- create-user</code>.
        </p>
      </div>
    </div>
  );
}
