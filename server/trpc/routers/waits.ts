import { TRPCError } from '@trpc/server';
import { resolveWaitByHand } from '../../repair/resolve-wait';
import { ConflictError, conflictError, marketerProcedure, repairBusyError, router } from '../trpc';
import { resolveWaitInput } from './waits.schema';

export const waitsRouter = router({
  /**
   * Resolve a wait by EVENT or TIMEOUT through the engine's one wait claim (I4). Event time
   * decides: EVENT is recorded as the event's only with an eventId the wait would take
   * (its name, accepted inside [startedAt, dueAt), not consumed), else as OPERATOR; a
   * TIMEOUT takes an event accepted inside the window as the timer would (unless
   * ignoreInWindowEvents), and before the wait is due is recorded as OPERATOR. MARKETER and up, like
   * tracking the events that resolve waits (docs/api.md lists it with enrollment and events);
   * the audit entry names who forced what.
   */
  resolve: marketerProcedure.input(resolveWaitInput).mutation(async ({ ctx, input }) => {
    const answer = await resolveWaitByHand(ctx.db, { ...input, projectId: ctx.actor.projectId, actor: ctx.actor.id });
    switch (answer.kind) {
      case 'resolved':
        return {
          executionId: answer.executionId,
          branch: answer.branch,
          /** EVENT only with an event the wait takes (its name, accepted inside its window, not consumed); else OPERATOR (or TIMEOUT, when due). */
          resolvedBy: answer.resolvedBy,
          /** The event that resolved the wait, whose data later CONDITION steps read as context.lastEvent. */
          eventId: answer.eventId,
          /** The eventId given that the wait would not take, and why: the branch was forced by the caller, without its data. */
          eventNotTaken: answer.eventNotTaken,
        };
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
