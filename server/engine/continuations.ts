import { advanceFromWait, findPendingContinuations, type StepClaim, type WaitClaim } from './claims';
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
  wait: Pick<WaitClaim, 'executionId' | 'version' | 'stepExecutionId' | 'stepId' | 'workflowId' | 'workflowVersionId' | 'branch'>,
  contextPatch: Record<string, unknown> = {},
  opts: { claimNext?: boolean } = {},
): Promise<{ won: boolean; version: number | null; running: boolean; next: StepClaim | null }> {
  const graph = await loadVersionGraph(ctx.db, wait.workflowVersionId);
  const next = nextStepId(graph, wait.stepId, wait.branch);
  const result = await advanceFromWait(ctx.db, {
    executionId: wait.executionId,
    expectedVersion: wait.version,
    stepExecutionId: wait.stepExecutionId,
    waitStepId: wait.stepId,
    nextStepId: next ?? wait.stepId,
    status: next ? 'RUNNING' : 'COMPLETED',
    contextPatch,
    claimNext: opts.claimNext ? { leaseSeconds: ctx.config.leaseSeconds, owner: ctx.owner } : null,
  });
  if (!result.won) return { won: false, version: null, running: false, next: null };
  return { won: true, version: result.version, running: next !== null, next: result.next };
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
