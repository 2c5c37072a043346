import { TRPCError } from '@trpc/server';
import { applyRepair, previewRepair, RepairNotFound, repairOptionsFor, type RepairRequest } from '../../repair/actions';
import { applyMany } from '../../repair/bulk';
import { applyMessageRepair, isMessageRepairAction, messageRepairOptionsFor, previewMessageRepair, type MessageRepairAction } from '../../repair/messages';
import { listStuck, STUCK_DESCRIPTIONS, stuckGroups } from '../../repair/stuck';
import { audit, inTransaction } from '../audit';
import { encodeCursor } from '../keyset';
import { requireWorkflow, stuckScope } from '../scope';
import type { Db } from '../../db';
import { ConflictError, conflictError, operatorProcedure, router, viewerProcedure, type Actor } from '../trpc';
import { DEFAULT_ENGINE_CONFIG } from '../../engine/context';
import { applyManyLive, auditBulkRun } from './repair.bulk';
import { applyInput, applyManyInput, applyManyLiveInput, optionsInput, previewInput, stuckGroupsInput, stuckInput } from './repair.schema';

// Repair (OPERATOR): thin over server/repair, which runs every action through the
// engine's claims and audits applied, lost and refused attempts in their transaction.

const notFound = (message: string) => new TRPCError({ code: 'NOT_FOUND', message: message.charAt(0).toUpperCase() + message.slice(1) + '.' });

function requestOf(projectId: string, input: { action: RepairRequest['action'] | MessageRepairAction; executionId?: string | undefined; eventId?: string | undefined }): RepairRequest {
  if (isMessageRepairAction(input.action)) throw new Error(`${input.action} is a message repair`);
  return {
    projectId,
    action: input.action,
    executionId: input.action === 'REDRIVE_EVENT' ? null : (input.executionId ?? null),
    eventId: input.eventId ?? null,
  };
}

/**
 * MARK_SENT, RESEND, GIVE_UP on an email (server/repair/messages.ts), answered like the
 * other repairs: lost is CONFLICT naming who changed the message; not allowed in its
 * current state is PRECONDITION_FAILED with the refusal; every attempt is audited.
 */
async function applyMessage(
  ctx: { db: Db; actor: Actor },
  input: { action: MessageRepairAction; messageId: string; expectedVersion: number; reason: string; providerId?: string | undefined },
) {
  const result = await applyMessageRepair(ctx.db, {
    projectId: ctx.actor.projectId,
    action: input.action,
    messageId: input.messageId,
    actor: ctx.actor.id,
    expectedVersion: input.expectedVersion,
    reason: input.reason,
    providerId: input.providerId ?? null,
  });
  if (result.ok) return result;
  switch (result.code) {
    case 'CONFLICT':
      throw conflictError(result.conflict, `Lost: the ${result.conflict.winner.kind} changed this email first.`);
    case 'NOT_ALLOWED':
      throw new TRPCError({
        code: 'PRECONDITION_FAILED',
        message: result.message,
        cause: new ConflictError({
          reason: 'NOT_ALLOWED',
          refusal: result.message,
          status: result.target.status,
          currentVersion: result.target.version,
        }),
      });
    case 'NOT_FOUND':
      await inTransaction(ctx.db, (tx) =>
        audit(tx, ctx.actor, {
          action: `repair.${input.action}`,
          targetType: 'message',
          targetId: input.messageId,
          outcome: 'REJECTED',
          reason: input.reason,
          after: { reason: 'NOT_FOUND', message: result.message },
        }),
      );
      throw notFound(result.message);
  }
}

export const repairRouter = router({
  /**
   * Every stuck execution, event and email grouped by cause (reason, workflow, step,
   * normalised error), biggest first, with count, oldest, newest and a sample. Reading
   * is for every role; repairing a group (applyMany, applyManyLive) is OPERATOR.
   */
  stuckGroups: viewerProcedure.input(stuckGroupsInput).query(async ({ ctx, input }) => {
    await requireWorkflow(ctx.db, ctx.actor.projectId, input.workflowId);
    const groups = await stuckGroups(ctx.db, {
      ...stuckScope(ctx.actor.projectId, input.workflowId),
      reasons: input.reason ? [input.reason] : undefined,
    });
    return {
      groups,
      graceSeconds: stuckScope(ctx.actor.projectId).graceSeconds,
      /** A LEASE_EXPIRED step with this many attempts is a poison step: the workers leave it to an operator. */
      poisonAttempts: DEFAULT_ENGINE_CONFIG.maxStepAttempts,
    };
  }),

  /** What is stuck and why, newest first. */
  stuck: operatorProcedure.input(stuckInput).query(async ({ ctx, input }) => {
    await requireWorkflow(ctx.db, ctx.actor.projectId, input.workflowId);
    const { items, nextCursor } = await listStuck(ctx.db, {
      ...stuckScope(ctx.actor.projectId, input.workflowId),
      reasons: input.reason ? [input.reason] : undefined,
      cursor: input.cursor ? { since: input.cursor.at, id: input.cursor.id } : null,
      limit: input.limit,
    });
    return {
      items: items.map((item) => ({ ...item, description: STUCK_DESCRIPTIONS[item.reason] })),
      nextCursor: nextCursor ? encodeCursor({ at: nextCursor.since, id: nextCursor.id }) : null,
    };
  }),

  /**
   * Every action's plan for one execution (allowed, or refused with why), its emails that
   * wait for an operator with theirs, and the contact's events DELIVER_EVENT could take:
   * what the console's repair panel offers, in one round trip. Applying still goes
   * through a preview and applyOne.
   */
  options: operatorProcedure.input(optionsInput).query(async ({ ctx, input }) => {
    try {
      const [execution, messages] = await Promise.all([
        repairOptionsFor(ctx.db, ctx.actor.projectId, input.executionId, stuckScope(ctx.actor.projectId)),
        messageRepairOptionsFor(ctx.db, ctx.actor.projectId, input.executionId),
      ]);
      return { ...execution, messages };
    } catch (error) {
      if (error instanceof RepairNotFound) throw notFound(error.message);
      throw error;
    }
  }),

  /** What an action would do now: the version to send back, the state, the plan, the side-effect warning. */
  preview: operatorProcedure.input(previewInput).query(async ({ ctx, input }) => {
    try {
      if (isMessageRepairAction(input.action)) {
        return await previewMessageRepair(ctx.db, { projectId: ctx.actor.projectId, action: input.action, messageId: input.messageId! });
      }
      return await previewRepair(ctx.db, requestOf(ctx.actor.projectId, input), stuckScope(ctx.actor.projectId));
    } catch (error) {
      if (error instanceof RepairNotFound) throw notFound(error.message);
      throw error;
    }
  }),

  /**
   * API.md's `repair.apply`: apply one action with the version the operator saw. Lost:
   * CONFLICT naming the winner. Not allowed in the current state: PRECONDITION_FAILED with
   * the refusal. (tRPC reserves `apply`, `call` and `then` as procedure names, since its
   * proxies would take them for Function.prototype methods; hence `applyOne`.)
   */
  applyOne: operatorProcedure.input(applyInput).mutation(async ({ ctx, input }) => {
    if (isMessageRepairAction(input.action)) return applyMessage(ctx, { ...input, action: input.action, messageId: input.messageId! });
    const request = requestOf(ctx.actor.projectId, input);
    const result = await applyRepair(
      ctx.db,
      {
        ...request,
        actor: ctx.actor.id,
        expectedVersion: input.expectedVersion,
        reason: input.reason,
        ...(input.expectedStepExecutionId !== undefined ? { expectedStepExecutionId: input.expectedStepExecutionId } : {}),
      },
      stuckScope(ctx.actor.projectId),
    );
    if (result.ok) return result;
    switch (result.code) {
      case 'CONFLICT':
        throw conflictError(result.conflict, `Lost: the ${result.conflict.winner.kind} got there first.`);
      case 'NOT_ALLOWED':
        throw new TRPCError({
          code: 'PRECONDITION_FAILED',
          message: result.message,
          cause: new ConflictError({
            reason: 'NOT_ALLOWED',
            refusal: result.message,
            status: result.target.kind === 'execution' ? result.target.status : null,
            currentVersion: result.target.version,
          }),
        });
      case 'ACTIVE_EXECUTION':
        // I1: it would make a second active execution; the attempt is audited.
        throw new TRPCError({ code: 'PRECONDITION_FAILED', message: result.message, cause: new ConflictError(result.conflict) });
      case 'NOT_FOUND':
        // The repair's transaction rolled back; the refused attempt is still recorded.
        await inTransaction(ctx.db, (tx) =>
          audit(tx, ctx.actor, {
            action: `repair.${input.action}`,
            targetType: input.action === 'REDRIVE_EVENT' ? 'event' : 'execution',
            targetId: (input.action === 'REDRIVE_EVENT' ? input.eventId : input.executionId) ?? '',
            outcome: 'REJECTED',
            reason: input.reason,
            after: { reason: 'NOT_FOUND', message: result.message },
          }),
        );
        throw notFound(result.message);
    }
  }),

  /**
   * Repair every execution a filter selects: `dryRun` counts them; otherwise one claim
   * each at a bounded rate, each reported applied or skipped (it changed, or the action
   * does not fit its state). Cancelling the request stops it between executions.
   */
  applyMany: operatorProcedure.input(applyManyInput).mutation(async ({ ctx, input, signal }) => {
    await requireWorkflow(ctx.db, ctx.actor.projectId, input.filter.workflowId);
    const result = await applyMany(
      ctx.db,
      {
        projectId: ctx.actor.projectId,
        actor: ctx.actor.id,
        action: input.action,
        reason: input.reason,
        filter: input.filter,
        dryRun: input.dryRun,
        signal,
      },
      stuckScope(ctx.actor.projectId),
    );
    if (!result.dryRun) {
      // Each execution's repair has its own entry; this one records the run as a whole.
      const applied = result.items.filter((i) => i.outcome === 'APPLIED').length;
      await auditBulkRun(ctx, input, { matched: result.matched, applied, done: result.items.length, interrupted: result.interrupted });
    }
    return result;
  }),

  /**
   * applyMany as it runs, over SSE (httpSubscriptionLink): `selected` with the total, one
   * `item` per row as it is done, then `finished`. Unsubscribing (closing the stream)
   * stops the run between rows; rows already done stay done, and the run's audit entry
   * says it was interrupted. A reconnect never restarts a run: the events are tracked,
   * so a reconnecting client sends lastEventId and is told the run was cut off.
   */
  applyManyLive: operatorProcedure.input(applyManyLiveInput).subscription(({ ctx, input, signal }) => applyManyLive(ctx, input, signal)),
});
