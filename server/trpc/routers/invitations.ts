import { TRPCError } from '@trpc/server';
import {
  acceptInvitation,
  createAccountFromInvitation,
  declineInvitation,
  pendingInvitationsFor,
  type InviteeResult,
} from '../../auth/invitee';
import { conflictError, personProcedure, publicProcedure, router } from '../trpc';
import { createAccountInput, invitationIdInput } from './invitations.schema';

// The invitee's side of invitations: a signed-in person's pending invitations, answered
// with accept or decline; and, for a person with no account yet, an account made from
// the link, for the invited email only (sign-up is otherwise off).

const NOT_FOUND_MESSAGE = 'No pending invitation with this id is addressed to you.';

function refused(result: Exclude<InviteeResult, { outcome: 'ACCEPTED' | 'DECLINED' }>): never {
  if (result.outcome === 'NOT_FOUND') throw new TRPCError({ code: 'NOT_FOUND', message: NOT_FOUND_MESSAGE });
  // Accepted or declined already: another tab won the compare-and-swap.
  if (result.status === 'ACCEPTED' || result.status === 'DECLINED') {
    throw conflictError({ reason: `INVITATION_${result.status}` }, `This invitation is already ${result.status.toLowerCase()}.`);
  }
  throw new TRPCError({
    code: 'PRECONDITION_FAILED',
    message: result.status === 'EXPIRED' ? 'This invitation has expired: ask the owner for a new one.' : 'This invitation was revoked by an owner.',
  });
}

export const invitationsRouter = router({
  /** The pending invitations addressed to the signed-in person's email. */
  mine: personProcedure.query(({ ctx }) => pendingInvitationsFor(ctx.db, ctx.person.email)),

  accept: personProcedure.input(invitationIdInput).mutation(async ({ ctx, input }) => {
    const result = await acceptInvitation(ctx.db, { id: input.id, userId: ctx.person.userId, email: ctx.person.email });
    if (result.outcome !== 'ACCEPTED') return refused(result as Exclude<InviteeResult, { outcome: 'ACCEPTED' | 'DECLINED' }>);
    return { projectId: result.projectId, projectName: result.projectName, role: result.role, alreadyMember: result.alreadyMember };
  }),

  decline: personProcedure.input(invitationIdInput).mutation(async ({ ctx, input }) => {
    const result = await declineInvitation(ctx.db, { id: input.id, userId: ctx.person.userId, email: ctx.person.email });
    if (result.outcome !== 'DECLINED') return refused(result as Exclude<InviteeResult, { outcome: 'ACCEPTED' | 'DECLINED' }>);
    return { declined: true as const };
  }),

  /**
   * An account for the invited email, from the link, with the invitation accepted. The
   * caller then signs in with that email and password (better-auth's own endpoint).
   */
  createAccount: publicProcedure.input(createAccountInput).mutation(async ({ ctx, input }) => {
    const result = await createAccountFromInvitation(ctx.db, input);
    switch (result.outcome) {
      case 'ACCEPTED':
        return { email: result.email, projectId: result.projectId, projectName: result.projectName, role: result.role };
      case 'NOT_FOUND':
        throw new TRPCError({ code: 'NOT_FOUND', message: 'This invitation link is not valid.' });
      case 'ACCOUNT_EXISTS':
        throw conflictError(
          { reason: 'ACCOUNT_EXISTS' },
          'An account with this email already exists: sign in with it to accept the invitation.',
        );
      case 'ENDED':
        return refused(result);
    }
  }),
});
