import { TRPCError } from '@trpc/server';
import { previewRepair, repairOptionsFor } from '../../repair/actions';
import { applyOneRepair, choicesOf, repairRequestOf, type ApplyOneResult } from '../../repair/apply-one';
import { applyManyAudited } from '../../repair/bulk-run';
import { isMessageRepairAction, messageRepairOptionsFor, previewMessageRepair } from '../../repair/messages';
import { RepairNotFound } from '../../repair/target';
import { STUCK_DESCRIPTIONS } from '../../common/stuck-reasons';
import { listStuck } from '../../stuck/list';
import { stuckGroupsFigure } from '../../read/console-figures';
import { encodeCursor } from '../keyset';
import { requireWorkflow, stuckScope } from '../scope';
import { ConflictError, conflictError, operatorProcedure, repairBusyError, router, viewerProcedure } from '../trpc';
import { DEFAULT_ENGINE_CONFIG } from '../../engine/context';
import { applyManyLive, bulkFilterOf } from './repair.bulk';
import { applyInput, applyManyInput, applyManyLiveInput, optionsInput, previewInput, stuckGroupsInput, stuckInput } from './repair.schema';

// Repair (OPERATOR): thin over server/repair, which runs every action through the
// engine's claims and audits applied, lost and refused attempts in their transaction.

const notFound = (message: string) => new TRPCError({ code: 'NOT_FOUND', message: message.charAt(0).toUpperCase() + message.slice(1) + '.' });

/**
 * The API's answer to a repair that did not apply: lost is CONFLICT naming the winner; not
 * allowed in the current state (or making a second active execution, I1) is
 * PRECONDITION_FAILED with the refusal; no such target is NOT_FOUND (its attempt audited);
 * the database too busy to finish it (rolled back, audited FAILED) is SERVICE_UNAVAILABLE
 * with Retry-After and `data.conflict.reason` BUSY.
 */
export function repairAnswer({ target, result }: ApplyOneResult) {
  if (result.ok) return result;
  switch (result.code) {
    case 'CONFLICT':
      throw conflictError(
        result.conflict,
        target === 'message' ? `Lost: the ${result.conflict.winner.kind} changed this email first.` : `Lost: the ${result.conflict.winner.kind} got there first.`,
      );
    case 'NOT_ALLOWED':
      throw new TRPCError({
        code: 'PRECONDITION_FAILED',
        message: result.message,
        cause: new ConflictError({
          reason: 'NOT_ALLOWED',
          refusal: result.message,
          status: result.target.kind === 'event' ? null : result.target.status,
          currentVersion: result.target.version,
        }),
      });
    case 'ACTIVE_EXECUTION':
      throw new TRPCError({ code: 'PRECONDITION_FAILED', message: result.message, cause: new ConflictError(result.conflict) });
    case 'NOT_FOUND':
      throw notFound(result.message);
    case 'BUSY':
      throw repairBusyError(result.message);
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
    const { value: groups, asOf } = await stuckGroupsFigure(ctx.db, {
      ...stuckScope(ctx.actor.projectId, input.workflowId),
      reasons: input.reason ? [input.reason] : undefined,
    });
    return {
      groups,
      /** Null: grouped for this call; else when the grouping began (a large project's, refreshed in the background). */
      asOf,
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
      return await previewRepair(ctx.db, repairRequestOf(ctx.actor.projectId, input), stuckScope(ctx.actor.projectId));
    } catch (error) {
      if (error instanceof RepairNotFound) throw notFound(error.message);
      throw error;
    }
  }),

  /**
   * The contract's `repair.apply` (docs/api.md): apply one action with the version the operator saw. Lost:
   * CONFLICT naming the winner. Not allowed in the current state: PRECONDITION_FAILED with
   * the refusal. (tRPC reserves `apply`, `call` and `then` as procedure names, since its
   * proxies would take them for Function.prototype methods; hence `applyOne`.)
   */
  applyOne: operatorProcedure.input(applyInput).mutation(async ({ ctx, input }) =>
    repairAnswer(await applyOneRepair(ctx.db, { ...input, projectId: ctx.actor.projectId, actor: ctx.actor.id }, stuckScope(ctx.actor.projectId))),
  ),

  /**
   * Repair every execution a filter selects: `dryRun` counts them; otherwise one claim
   * each at a bounded rate, each reported applied or skipped (it changed, or the action
   * does not fit its state). Cancelling the request stops it between executions.
   */
  applyMany: operatorProcedure.input(applyManyInput).mutation(async ({ ctx, input, signal }) => {
    const filter = await bulkFilterOf(ctx, input.filter);
    return applyManyAudited(
      ctx.db,
      {
        projectId: ctx.actor.projectId,
        actor: ctx.actor.id,
        action: input.action,
        reason: input.reason,
        choices: choicesOf(input),
        filter,
        selection: input.filter,
        dryRun: input.dryRun,
        signal,
      },
      stuckScope(ctx.actor.projectId),
    );
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
