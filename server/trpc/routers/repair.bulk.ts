import { TRPCError, tracked } from '@trpc/server';
import type { z } from 'zod';
import type { Db } from '../../db';
import { runMany, type BulkAction, type BulkFilter } from '../../repair/bulk';
import { audit, inTransaction } from '../audit';
import { requireWorkflow, stuckScope } from '../scope';
import type { Actor } from '../trpc';
import type { applyManyLiveInput } from './repair.schema';

// The bulk repair handlers of the repair router (the router only wires them): the audit
// entry of a run as a whole, and the streaming run behind repair.applyManyLive.

/** The audit entry of a bulk run as a whole (each row's repair has its own). */
export async function auditBulkRun(
  ctx: { db: Db; actor: Actor },
  input: { filter: BulkFilter; action: BulkAction; reason: string },
  run: { matched: number; applied: number; done: number; interrupted: boolean },
) {
  await inTransaction(ctx.db, (tx) =>
    audit(tx, ctx.actor, {
      action: 'repair.applyMany',
      targetType: 'filter',
      targetId: JSON.stringify(input.filter).slice(0, 500),
      outcome: run.applied > 0 ? 'APPLIED' : 'REJECTED',
      reason: input.reason,
      after: { action: input.action, matched: run.matched, applied: run.applied, skipped: run.done - run.applied, interrupted: run.interrupted },
    }),
  );
}

/**
 * repair.applyManyLive's body: runMany's progress, each event tracked (numbered) so a
 * reconnecting SSE client announces itself with lastEventId and is refused rather than
 * starting the run again. However the run ends (finished, stopped, cut off, failed), its
 * audit entry is written.
 */
export async function* applyManyLive(ctx: { db: Db; actor: Actor }, input: z.infer<typeof applyManyLiveInput>, signal: AbortSignal | undefined) {
  if (input.lastEventId) {
    throw new TRPCError({
      code: 'PRECONDITION_FAILED',
      message: 'The connection to this bulk repair was lost, which stopped it; rows already done stay done. Start it again to repair what is left.',
    });
  }
  await requireWorkflow(ctx.db, ctx.actor.projectId, input.filter.workflowId);
  const run = { matched: 0, applied: 0, done: 0, interrupted: true };
  let seq = 0;
  try {
    for await (const progress of runMany(
      ctx.db,
      { projectId: ctx.actor.projectId, actor: ctx.actor.id, action: input.action, reason: input.reason, filter: input.filter, signal },
      stuckScope(ctx.actor.projectId),
    )) {
      if (progress.type === 'selected') run.matched = progress.total;
      if (progress.type === 'item') {
        run.done = progress.done;
        if (progress.item.outcome === 'APPLIED') run.applied++;
      }
      if (progress.type === 'finished') run.interrupted = progress.interrupted;
      yield tracked(String(++seq), progress);
    }
  } finally {
    // Written however the run ends: finished, stopped by the operator, or cut off.
    await auditBulkRun(ctx, input, run);
  }
}
