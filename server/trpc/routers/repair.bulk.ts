import { TRPCError, tracked } from '@trpc/server';
import type { z } from 'zod';
import type { Db } from '../../db';
import { executionIdsMatching } from '../../read/executions';
import { BULK_MAX, type BulkFilter } from '../../repair/bulk';
import { choicesOf } from '../../repair/apply-one';
import { runManyAudited } from '../../repair/bulk-run';
import { executionFilterOf } from '../execution-filter';
import { requireWorkflow, stuckScope } from '../scope';
import type { Actor } from '../../auth/actor';
import type { applyManyInput, applyManyLiveInput } from './repair.schema';

// The bulk repair handlers of the repair router (the router only wires them): resolving
// a run's selection in the caller's project, and the streaming run behind
// repair.applyManyLive (server/repair/bulk-run.ts runs and audits it).

/**
 * A bulk repair's selection as the repair layer takes it. A list's filter
 * (`filter.executions`) is resolved here, to the ids it selects now; a filter selecting
 * more than BULK_MAX is refused (BAD_REQUEST) rather than repaired in part. The other
 * selections need only their workflow to be the caller's project's.
 */
export async function bulkFilterOf(ctx: { db: Db; actor: Actor }, filter: z.infer<typeof applyManyInput>['filter']): Promise<BulkFilter> {
  const { executions, ...rest } = filter;
  if (!executions) {
    await requireWorkflow(ctx.db, ctx.actor.projectId, filter.workflowId);
    return rest;
  }
  const scope = stuckScope(ctx.actor.projectId);
  const ids = await executionIdsMatching(ctx.db, { ...(await executionFilterOf(ctx.db, ctx.actor.projectId, executions)), graceSeconds: scope.graceSeconds }, BULK_MAX);
  if (ids === null) {
    throw new TRPCError({
      code: 'BAD_REQUEST',
      message: `The filter selects more than ${BULK_MAX.toLocaleString('en')} executions: narrow it (a workflow, a step, a time range) and repair in parts.`,
    });
  }
  return { executionIds: ids };
}

/**
 * repair.applyManyLive's body: runMany's progress (with the run's audit entry however it
 * ends), each event tracked (numbered) so a reconnecting SSE client announces itself with
 * lastEventId and is refused rather than starting the run again.
 */
export async function* applyManyLive(ctx: { db: Db; actor: Actor }, input: z.infer<typeof applyManyLiveInput>, signal: AbortSignal | undefined) {
  if (input.lastEventId) {
    throw new TRPCError({
      code: 'PRECONDITION_FAILED',
      message: 'The connection to this bulk repair was lost, which stopped it; rows already done stay done. Start it again to repair what is left.',
    });
  }
  const filter = await bulkFilterOf(ctx, input.filter);
  let seq = 0;
  for await (const progress of runManyAudited(
    ctx.db,
    { projectId: ctx.actor.projectId, actor: ctx.actor.id, action: input.action, reason: input.reason, choices: choicesOf(input), filter, selection: input.filter, signal },
    stuckScope(ctx.actor.projectId),
  )) {
    yield tracked(String(++seq), progress);
  }
}
