import { TRPCError } from '@trpc/server';
import { listMembers, removeMember, setMemberRole, type MemberChangeResult } from '../../auth/admin';
import { consoleBaseUrl, invitationLink, inviteMember, listInvitations, revokeInvitation } from '../../auth/invitations';
import { conflictError, ownerProcedure, router } from '../trpc';
import { addMemberInput, removeMemberInput, revokeInvitationInput, setMemberRoleInput } from './members.schema';

// A project's members (OWNER only): who may sign in to it and with which role. A project
// always keeps at least one OWNER, or nobody could manage its members and keys again.
// People join by invitation only (server/auth/invitations.ts): `members.add` keeps its
// name for the programs that call it, and invites.

function answer(result: MemberChangeResult) {
  switch (result.outcome) {
    case 'APPLIED':
      return result.member;
    case 'NOT_FOUND':
      throw new TRPCError({ code: 'NOT_FOUND', message: 'No such member in this project.' });
    case 'LAST_OWNER':
      throw conflictError(
        { reason: 'LAST_OWNER', userId: result.member.userId },
        'A project needs at least one OWNER: make someone else OWNER first.',
      );
  }
}

export const membersRouter = router({
  list: ownerProcedure.query(({ ctx }) => listMembers(ctx.db, ctx.actor.projectId)),

  /**
   * Invite an email with a role. The answer has the same shape and fields whether or not
   * the email has an account: the invitation, and its link (shown this once; only a hash
   * is kept). The person joins when they accept, signed in as that email.
   */
  add: ownerProcedure.input(addMemberInput).mutation(async ({ ctx, input }) => {
    if (input.password !== undefined) {
      throw new TRPCError({
        code: 'BAD_REQUEST',
        message: 'members.add no longer sets passwords: it invites, and the person chooses their own password when they accept the link.',
      });
    }
    const result = await inviteMember(ctx.db, { projectId: ctx.actor.projectId, email: input.email, role: input.role, actor: ctx.actor.id });
    if (result.outcome === 'ALREADY_MEMBER') {
      throw conflictError(
        { reason: 'ALREADY_MEMBER', userId: result.userId, role: result.role },
        `${input.email.trim().toLowerCase()} is already a member (${result.role}); change their role instead.`,
      );
    }
    return { invitation: result.invitation, link: invitationLink(consoleBaseUrl(ctx.headers.get('origin')), result.token) };
  }),

  /** The project's invitations of the last 30 days, pending first. */
  invitations: ownerProcedure.query(({ ctx }) => listInvitations(ctx.db, ctx.actor.projectId)),

  revokeInvitation: ownerProcedure.input(revokeInvitationInput).mutation(async ({ ctx, input }) => {
    const result = await revokeInvitation(ctx.db, { projectId: ctx.actor.projectId, id: input.id, actor: ctx.actor.id, reason: input.reason ?? null });
    switch (result.outcome) {
      case 'APPLIED':
        return result.invitation;
      case 'NOT_FOUND':
        throw new TRPCError({ code: 'NOT_FOUND', message: 'No such invitation in this project.' });
      case 'ENDED':
        throw conflictError(
          { reason: `INVITATION_${result.invitation.status}`, invitation: result.invitation },
          `This invitation is already ${result.invitation.status.toLowerCase()}.`,
        );
    }
  }),

  setRole: ownerProcedure
    .input(setMemberRoleInput)
    .mutation(async ({ ctx, input }) =>
      answer(await setMemberRole(ctx.db, { ...input, projectId: ctx.actor.projectId, actor: ctx.actor.id })),
    ),

  remove: ownerProcedure
    .input(removeMemberInput)
    .mutation(async ({ ctx, input }) =>
      answer(await removeMember(ctx.db, { userId: input.userId, reason: input.reason ?? null, projectId: ctx.actor.projectId, actor: ctx.actor.id })),
    ),
});
