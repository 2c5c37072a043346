import type { Metadata } from 'next';
import Link from 'next/link';
import { invitationFromLink, signedInPerson } from '@/server/http/server-caller';
import { CardPage } from '../../_components/card-page';
import { SignOutButton } from '../../_components/session-controls';
import { AnswerInvitation, CreateAccountForm } from './invitation-actions';

export const dynamic = 'force-dynamic';

export const metadata: Metadata = { title: 'Invitation', referrer: 'no-referrer' };

const quietButtons = '[&_button]:text-zinc-700 [&_button]:ring-zinc-300 [&_button:hover]:bg-zinc-50';

/**
 * An invitation link. The link alone never joins anyone: the invited person accepts it
 * signed in as the invited email, or, with no account yet, creates one for that email.
 * Someone else signed in is told only that it is not theirs.
 */
export default async function InvitationLinkPage({ params }: { params: Promise<{ token: string }> }) {
  const { token } = await params;
  const [invitation, person] = await Promise.all([invitationFromLink(token), signedInPerson()]);
  const here = `/invitations/${encodeURIComponent(token)}`;

  if (!invitation || invitation.status !== 'PENDING') {
    return (
      <CardPage>
        <div role="alert" className="space-y-2">
          <h1 className="text-[15px] font-semibold">This invitation link does not work</h1>
          <p className="text-zinc-600">
            {invitation?.status === 'ACCEPTED'
              ? 'It has been used already.'
              : 'It may have expired, been replaced by a newer one, been revoked or been declined, or be mistyped.'}{' '}
            Ask the project&apos;s owner for a new link.
          </p>
          <p>
            <Link href={person ? '/invitations' : '/sign-in'} className="font-medium text-zinc-900 underline">
              {person ? 'Your invitations' : 'Sign in'}
            </Link>
          </p>
        </div>
      </CardPage>
    );
  }

  if (person && person.email !== invitation.email) {
    return (
      <CardPage>
        <div role="alert" className={`space-y-3 ${quietButtons}`}>
          <h1 className="text-[15px] font-semibold">This invitation is for someone else</h1>
          <p className="text-zinc-600">
            You are signed in as <span className="font-medium text-zinc-900">{person.email}</span>, and this invitation is not
            addressed to you. If it is meant for another of your email addresses, sign out and open the link again.
          </p>
          <SignOutButton />
        </div>
      </CardPage>
    );
  }

  const summary = (
    <p className="text-zinc-600">
      <span className="font-medium text-zinc-900">{invitation.invitedBy}</span> invites{' '}
      <span className="font-medium text-zinc-900">{invitation.email}</span> to the project{' '}
      <span className="font-medium text-zinc-900">{invitation.projectName}</span> as{' '}
      <span className="rounded bg-zinc-100 px-1.5 py-0.5 text-[11px] font-medium tracking-wide text-zinc-700">{invitation.role}</span>.
    </p>
  );
  const expires = (
    <span suppressHydrationWarning>The link works until {invitation.expiresAt.toLocaleString()}.</span>
  );

  if (person) {
    return (
      <CardPage footnote={expires}>
        <div className="space-y-3">
          <h1 className="text-[15px] font-semibold">Join {invitation.projectName}</h1>
          {summary}
          <AnswerInvitation id={invitation.id} projectName={invitation.projectName} />
        </div>
      </CardPage>
    );
  }

  return (
    <CardPage footnote={expires}>
      <div className="space-y-4">
        <div className="space-y-2">
          <h1 className="text-[15px] font-semibold">You are invited</h1>
          {summary}
        </div>
        <div className="rounded border border-zinc-200 bg-zinc-50 px-3 py-2">
          <p className="text-zinc-700">
            Already have an account with {invitation.email}?{' '}
            <Link href={`/sign-in?next=${encodeURIComponent(here)}`} className="font-medium text-zinc-900 underline">
              Sign in to accept
            </Link>
          </p>
        </div>
        <div className="space-y-2">
          <h2 className="font-semibold">New here? Create your account</h2>
          <CreateAccountForm token={token} email={invitation.email} />
        </div>
      </div>
    </CardPage>
  );
}
