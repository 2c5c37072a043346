import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import { addMember, listMembers, removeMember, setMemberRole, type MemberChangeResult } from '../../auth/admin';
import { conflictError, ownerProcedure, router } from '../trpc';
import { ROLES } from './apiKeys';
import { email, label, text } from '../inputs';

// A project's members (OWNER only): who may sign in to it and with which role. A project
// always keeps at least one OWNER, or nobody could manage its members and keys again.

export const addMemberInput = z.object({
  email: email,
  /** Needed when the person has no account yet; an existing account keeps its password. */
  password: text(128, 8).optional(),
  name: label(100).optional(),
  role: z.enum(ROLES),
});

export const setMemberRoleInput = z.object({ userId: label(100), role: z.enum(ROLES) });
export const removeMemberInput = z.object({ userId: label(100) });

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

  add: ownerProcedure.input(addMemberInput).mutation(async ({ ctx, input }) => {
    const result = await addMember(ctx.db, { ...input, projectId: ctx.actor.projectId, actor: ctx.actor.id });
    switch (result.outcome) {
      case 'ADDED':
        return { member: result.member, accountCreated: result.accountCreated };
      case 'ALREADY_MEMBER':
        throw conflictError(
          { reason: 'ALREADY_MEMBER', userId: result.member.userId, role: result.member.role },
          `${result.member.email} is already a member (${result.member.role}); change their role instead.`,
        );
      case 'PASSWORD_REQUIRED':
        throw new TRPCError({ code: 'BAD_REQUEST', message: 'This person has no account yet: give them a password to sign in with.' });
    }
  }),

  setRole: ownerProcedure
    .input(setMemberRoleInput)
    .mutation(async ({ ctx, input }) =>
      answer(await setMemberRole(ctx.db, { ...input, projectId: ctx.actor.projectId, actor: ctx.actor.id })),
    ),

  remove: ownerProcedure
    .input(removeMemberInput)
    .mutation(async ({ ctx, input }) => answer(await removeMember(ctx.db, { ...input, projectId: ctx.actor.projectId, actor: ctx.actor.id }))),
});
