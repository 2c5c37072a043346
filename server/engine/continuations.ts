import { advanceFromWaits, findPendingContinuations, type StepClaim, type WaitAdvance, type WaitClaim } from './claims';
import type { EngineContext } from './context';
import { readEventContext } from './event-context';
import { nextStepId } from './workflow-graph';
import { loadVersionGraph } from './graphs';

// The continuation: advancing an execution past its resolved wait, along the wait's
// branch. Whoever resolved the wait (an event, the timer, an operator, a step that parked
// already resolved) does it at once; one that never moved (the resolver crashed between
// the two claims) is re-driven by the sweeper below.

/**
 * Advance past a claimed wait along its branch (the continuation). With `claimNext`, a
 * worker also claims the step that follows in the same statement (`next`).
 */
export async function continueAfterWait(
  ctx: EngineContext,
  wait: ResolvedWait,
  contextPatch: Record<string, unknown> = {},
  opts: { claimNext?: boolean } = {},
): Promise<{ won: boolean; version: number | null; running: boolean; next: StepClaim | null }> {
  return (await continueAfterWaits(ctx, [{ wait, contextPatch, claimNext: opts.claimNext }]))[0]!;
}

type ResolvedWait = Pick<WaitClaim, 'executionId' | 'version' | 'stepExecutionId' | 'stepId' | 'workflowId' | 'workflowVersionId' | 'branch'>;

/**
 * continueAfterWait for a batch of resolved waits (the timer's), in one statement; the
 * results in their order. The waits with `claimNext` have their next step claimed with the
 * advance. The caller runs the batch again row by row if the statement fails.
 */
export async function continueAfterWaits(
  ctx: EngineContext,
  waits: { wait: ResolvedWait; contextPatch: Record<string, unknown>; claimNext?: boolean }[],
): Promise<{ won: boolean; version: number | null; running: boolean; next: StepClaim | null }[]> {
  const versions = [...new Set(waits.map((w) => w.wait.workflowVersionId))];
  const graphs = new Map(await Promise.all(versions.map(async (id) => [id, await loadVersionGraph(ctx.db, id)] as const)));
  const advances: WaitAdvance[] = waits.map(({ wait, contextPatch, claimNext }) => {
    const next = nextStepId(graphs.get(wait.workflowVersionId)!, wait.stepId, wait.branch);
    return {
      executionId: wait.executionId,
      expectedVersion: wait.version,
      stepExecutionId: wait.stepExecutionId,
      waitStepId: wait.stepId,
      nextStepId: next ?? wait.stepId,
      status: next ? 'RUNNING' : 'COMPLETED',
      contextPatch,
      claimNext,
    } satisfies WaitAdvance;
  });
  const results = await advanceFromWaits(ctx.db, advances, { leaseSeconds: ctx.config.leaseSeconds, owner: ctx.owner });
  return results.map((r, i) =>
    r.won ? { won: true, version: r.version, running: advances[i]!.status === 'RUNNING', next: r.next } : { won: false, version: null, running: false, next: null },
  );
}


/**
 * The continuation sweeper: waits that were resolved but whose execution never moved
 * past them (the resolver crashed between the two claims). Advancing is fenced, so a
 * continuation that did run meanwhile makes this a no-op.
 */
export async function processPendingContinuations(ctx: EngineContext, limit: number): Promise<number> {
  const pending = await findPendingContinuations(ctx.db, {
    olderThanSeconds: ctx.config.continuationGraceSeconds,
    limit,
  });
  let advanced = 0;
  for (const p of pending) {
    const patch = (p.resumeEventId && (await readEventContext(ctx.db, p.resumeEventId))) || {};
    const result = await continueAfterWait(ctx, p, patch);
    if (result.won) {
      advanced++;
      ctx.log('info', 're-drove a pending continuation', { executionId: p.executionId });
    }
  }
  return advanced;
}
