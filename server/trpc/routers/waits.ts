import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import { createEngineContext } from '../../engine/context';
import { eventContextPatch, resolveWait } from '../../engine/runner';
import { notifyWorkers } from '../../engine/wakeup';
import { audit, inTransaction } from '../audit';
import { id, version } from '../inputs';
import { ConflictError, conflictError, marketerProcedure, router } from '../trpc';

export const resolveWaitInput = z
  .object({
    stepExecutionId: id,
    outcome: z.enum(['EVENT', 'TIMEOUT']),
    /** For EVENT: the tracked event (of the execution's contact) that resolves the wait. */
    eventId: id.optional(),
    /** The execution's version the caller saw: a move since then makes this lose. */
    expectedVersion: version,
  })
  .superRefine((input, ctx) => {
    if (input.eventId && input.outcome !== 'EVENT') {
      ctx.addIssue({ code: 'custom', message: 'eventId goes with outcome EVENT only', path: ['eventId'] });
    }
  });

interface WaitRow {
  executionId: string;
  contactId: string;
  stepType: string;
  /** The wait's timeout has come: resolving it by TIMEOUT is the timer's own outcome. */
  due: boolean;
}

type Refusal = { code: 'NOT_FOUND'; message: string } | { code: 'PRECONDITION_FAILED'; message: string; reason: string; status?: string | null };

export const waitsRouter = router({
  /**
   * Resolve a wait by EVENT or TIMEOUT through the engine's one wait claim (I4), so it
   * races events, the timer and operators fairly and resolves at most once. A TIMEOUT
   * before the wait is due is someone forcing it: recorded as resolved by OPERATOR.
   * MARKETER and up, like tracking the events that resolve waits (API.md lists it with
   * enrollment and events); the audit entry names who forced what.
   */
  resolve: marketerProcedure.input(resolveWaitInput).mutation(async ({ ctx, input }) => {
    const answer = await inTransaction(ctx.db, async (tx) => {
      const [wait] = await tx.$queryRaw<WaitRow[]>`
        SELECT s."executionId", e."contactId", ws.type::text AS "stepType", COALESCE(s."dueAt" <= now(), false) AS due
          FROM "StepExecution" s
          JOIN "WorkflowExecution" e ON e.id = s."executionId"
          JOIN "WorkflowStep" ws ON ws.id = s."stepId"
         WHERE s.id = ${input.stepExecutionId}::uuid AND e."projectId" = ${ctx.actor.projectId}::uuid`;
      const record = (outcome: 'APPLIED' | 'LOST' | 'REJECTED', after: unknown) =>
        audit(tx, ctx.actor, {
          action: 'waits.resolve',
          targetType: 'execution',
          targetId: wait?.executionId ?? input.stepExecutionId,
          outcome,
          before: { stepExecutionId: input.stepExecutionId, expectedVersion: input.expectedVersion, outcome: input.outcome },
          after,
        });
      const refuse = async (refusal: Refusal) => {
        await record('REJECTED', refusal);
        return { kind: 'refused' as const, refusal };
      };
      if (!wait) return refuse({ code: 'NOT_FOUND', message: 'No such step execution in this project.' });
      if (wait.stepType === 'DELAY' && input.outcome === 'EVENT') {
        return refuse({ code: 'PRECONDITION_FAILED', reason: 'NOT_AN_EVENT_WAIT', message: 'A delay waits for time, not for an event: resolve it by TIMEOUT.' });
      }
      let contextPatch: Record<string, unknown> = {};
      if (input.eventId) {
        const [event] = await tx.$queryRaw<{ name: string; data: unknown; createdAt: Date }[]>`
          SELECT name, data, "createdAt" FROM "Event"
           WHERE id = ${input.eventId}::uuid AND "projectId" = ${ctx.actor.projectId}::uuid AND "contactId" = ${wait.contactId}::uuid`;
        if (!event) return refuse({ code: 'NOT_FOUND', message: "No such event of this execution's contact." });
        contextPatch = eventContextPatch(event);
      }
      const resolvedBy = input.outcome === 'EVENT' ? 'EVENT' : wait.due ? 'TIMEOUT' : 'OPERATOR';
      const result = await resolveWait(createEngineContext(tx, { owner: ctx.actor.id }), {
        stepExecutionId: input.stepExecutionId,
        resolvedBy,
        branch: input.outcome,
        eventId: input.eventId ?? null,
        expectedVersion: input.expectedVersion,
        contextPatch,
      });
      if (result.resumed) {
        await record('APPLIED', { resolvedBy, branch: result.branch, version: result.version });
        return { kind: 'resolved' as const, executionId: result.executionId, branch: result.branch };
      }
      if (result.reason === 'NOT_WAITING') {
        return refuse({ code: 'PRECONDITION_FAILED', reason: 'NOT_WAITING', message: 'This step is not waiting.', status: result.state?.status ?? null });
      }
      const conflict =
        result.reason === 'WAIT_RESOLVED'
          ? { reason: result.reason, resolvedBy: result.resolvedBy, at: result.at }
          : { reason: result.reason, currentVersion: result.currentVersion, status: result.status };
      await record('LOST', { conflict });
      return { kind: 'lost' as const, conflict };
    });
    if (answer.kind === 'refused') {
      const { refusal } = answer;
      if (refusal.code === 'NOT_FOUND') throw new TRPCError({ code: 'NOT_FOUND', message: refusal.message });
      throw new TRPCError({
        code: 'PRECONDITION_FAILED',
        message: refusal.message,
        cause: new ConflictError({ reason: refusal.reason, ...(refusal.status !== undefined ? { status: refusal.status } : {}) }),
      });
    }
    if (answer.kind === 'lost') {
      throw conflictError(
        answer.conflict,
        answer.conflict.reason === 'WAIT_RESOLVED' ? `The wait was already resolved by ${answer.conflict.resolvedBy}.` : 'The execution moved since you looked.',
      );
    }
    await notifyWorkers(ctx.db).catch(() => {});
    return { executionId: answer.executionId, branch: answer.branch };
  }),
});
