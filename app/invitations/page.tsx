import type { Metadata } from 'next';
import Link from 'next/link';
import { redirect } from 'next/navigation';
import { signedInPerson } from '@/server/http/server-caller';
import { CardPage } from '../_components/card-page';
import { SignOutButton } from '../_components/session-controls';
import { MyInvitations } from './my-invitations';

export const dynamic = 'force-dynamic';

export const metadata: Metadata = { title: 'Invitations' };

/** The signed-in person's invitations, whether or not they belong to a project yet. */
export default async function InvitationsPage() {
  const person = await signedInPerson();
  if (!person) redirect('/sign-in?next=%2Finvitations');
  return (
    <CardPage wide>
      <div className="space-y-3">
        <div>
          <h1 className="text-[15px] font-semibold">Invitations</h1>
          <p className="text-zinc-500">
            for <span className="font-medium text-zinc-900">{person.email}</span>
          </p>
        </div>
        <MyInvitations />
        <div className="flex items-center gap-3 border-t border-zinc-100 pt-3 [&_button]:text-zinc-700 [&_button]:ring-zinc-300 [&_button:hover]:bg-zinc-50">
          {person.current && (
            <Link href="/" className="font-medium text-zinc-900 underline">
              Back to the console
            </Link>
          )}
          <span className="ml-auto">
            <SignOutButton />
          </span>
        </div>
      </div>
    </CardPage>
  );
}
