import { TRPCError } from '@trpc/server';
import { resolveWaitByHand } from '../../repair/resolve-wait';
import { ConflictError, conflictError, marketerProcedure, repairBusyError, router } from '../trpc';
import { resolveWaitInput } from './waits.schema';

export const waitsRouter = router({
  /**
   * Resolve a wait by EVENT or TIMEOUT through the engine's one wait claim (I4); a TIMEOUT
   * before the wait is due is recorded as resolved by OPERATOR. MARKETER and up, like
   * tracking the events that resolve waits (docs/api.md lists it with enrollment and events);
   * the audit entry names who forced what.
   */
  resolve: marketerProcedure.input(resolveWaitInput).mutation(async ({ ctx, input }) => {
    const answer = await resolveWaitByHand(ctx.db, { ...input, projectId: ctx.actor.projectId, actor: ctx.actor.id });
    switch (answer.kind) {
      case 'resolved':
        return { executionId: answer.executionId, branch: answer.branch };
      case 'not-found':
        throw new TRPCError({ code: 'NOT_FOUND', message: answer.message });
      case 'refused':
        throw new TRPCError({
          code: 'PRECONDITION_FAILED',
          message: answer.message,
          cause: new ConflictError({ reason: answer.reason, ...(answer.status !== undefined ? { status: answer.status } : {}) }),
        });
      case 'busy':
        throw repairBusyError(answer.message);
      case 'lost':
        throw conflictError(
          answer.conflict,
          answer.conflict.reason === 'WAIT_RESOLVED' ? `The wait was already resolved by ${answer.conflict.resolvedBy}.` : 'The execution moved since you looked.',
        );
    }
  }),
});
