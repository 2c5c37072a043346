import {
  claimDueWaits,
  claimWait,
  lockDueWaits,
  type WaitResolver,
  type WaitState,
} from './claims';
import { rawTransaction } from '../db';
import type { EngineContext } from './context';
import { eventContextPatch } from './event-context';
import { faults } from './faults';
import { continueAfterWait, continueAfterWaits } from './continuations';
import { driveExecution, errorText } from './run-steps';

// Waits: resolve one (an event, the timer or an operator: I4, exactly once) and advance
// past it along its branch; the timer resolving every due wait. The loser of a wait learns
// who won and when.


export type ResumeResult =
  | { resumed: true; executionId: string; branch: string | null; version: number }
  | { resumed: false; reason: 'WAIT_RESOLVED'; resolvedBy: WaitResolver; at: Date | null; state: WaitState }
  | { resumed: false; reason: 'STALE_VERSION'; currentVersion: number | null; status: string | null; state: WaitState | null }
  | { resumed: false; reason: 'NOT_WAITING'; state: WaitState | null };


/**
 * Resolve a wait (I4) and advance its execution. Event delivery, the timer and operators
 * all come through here; the loser learns who won and when.
 */
export async function resolveWait(
  ctx: EngineContext,
  opts: {
    stepExecutionId: string;
    resolvedBy: WaitResolver;
    /** 'EVENT' or 'TIMEOUT' for WAIT_FOR_EVENT; ignored (null) for DELAY. */
    branch: 'EVENT' | 'TIMEOUT' | null;
    eventId?: string | null;
    expectedVersion?: number | null;
    contextPatch?: Record<string, unknown>;
  },
): Promise<ResumeResult> {
  const claimed = await claimWait(ctx.db, {
    stepExecutionId: opts.stepExecutionId,
    resolvedBy: opts.resolvedBy,
    branch: opts.branch,
    eventId: opts.eventId ?? null,
    expectedVersion: opts.expectedVersion ?? null,
  });
  if (!claimed.won) return explainLostWait(claimed.current, opts.expectedVersion ?? null);
  const advanced = await continueAfterWait(ctx, claimed.wait, opts.contextPatch);
  // If advancing lost, the claim stands and the continuation is re-driven later (or by
  // an operator): resolving is already final and will not be repeated.
  return {
    resumed: true,
    executionId: claimed.wait.executionId,
    branch: claimed.wait.branch,
    version: advanced.version ?? claimed.wait.version,
  };
}

export function explainLostWait(state: WaitState | null, expectedVersion: number | null): ResumeResult {
  if (state?.resolvedBy) {
    return { resumed: false, reason: 'WAIT_RESOLVED', resolvedBy: state.resolvedBy, at: state.resolvedAt, state };
  }
  if (state?.execution && expectedVersion !== null && state.execution.version !== expectedVersion) {
    return {
      resumed: false,
      reason: 'STALE_VERSION',
      currentVersion: state.execution.version,
      status: state.execution.status,
      state,
    };
  }
  return { resumed: false, reason: 'NOT_WAITING', state };
}

/**
 * The timer: resolve due waits and delays, then advance and run what follows. A due
 * WAIT_FOR_EVENT whose event was accepted in time (its dispatch is late) resolves by
 * EVENT, not TIMEOUT: event time decides, not worker lag. Two statements in one
 * transaction: lock the due rows and their event channels, then resolve them; then one
 * statement advances the whole batch past them (claiming each next step), as a worker's
 * completions are sent together. If that statement fails, each wait is advanced alone.
 * The first `drive` of them have their next step claimed and run here; the others are left
 * RUNNING and due, to the workers' step queue.
 */
export async function processDueWaits(ctx: EngineContext, limit: number, drive: number = limit): Promise<number> {
  const waits = await rawTransaction(ctx.db, 'ENGINE', async (tx) =>
    claimDueWaits(tx, { stepExecutionIds: await lockDueWaits(tx, { limit }) }),
  );
  faults.afterWaitClaim(waits.length);
  if (waits.length === 0) return 0;
  const batch = waits.map((wait, i) => ({ wait, contextPatch: wait.resumeEvent ? eventContextPatch(wait.resumeEvent) : {}, claimNext: i < drive }));
  let advanced: Awaited<ReturnType<typeof continueAfterWaits>>;
  try {
    advanced = await continueAfterWaits(ctx, batch);
  } catch (error) {
    ctx.log('warn', 'advancing a batch of resolved waits failed; advancing each alone', { waits: waits.length, error: errorText(error) });
    advanced = await Promise.all(
      batch.map(async ({ wait, contextPatch, claimNext }) => {
        try {
          return await continueAfterWait(ctx, wait, contextPatch, { claimNext });
        } catch (e) {
          // The wait stays claimed; the continuation sweeper re-drives it.
          ctx.log('error', 'advancing a resolved wait failed', { executionId: wait.executionId, error: errorText(e) });
          return { won: false, version: null, running: false, next: null };
        }
      }),
    );
  }
  await Promise.all(
    advanced.map(async (a, i) => {
      if (!a.next) return;
      try {
        await driveExecution(ctx, a.next);
      } catch (error) {
        ctx.log('error', 'running the step after a resolved wait failed', { executionId: waits[i]!.executionId, error: errorText(error) });
      }
    }),
  );
  return waits.length;
}
