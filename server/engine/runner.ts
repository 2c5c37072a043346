import {
  advanceFromWait,
  claimDueWaits,
  claimReadySteps,
  claimStep,
  claimWait,
  failStep,
  failUnclaimable,
  findPendingContinuations,
  lockDueWaits,
  lockEventChannel,
  parkExecution,
  renewLease,
  type CompleteResult,
  type ParkResult,
  type StepClaim,
  type WaitClaim,
  type WaitResolver,
  type WaitState,
} from './claims';
import { CompletionBatch } from './completion-batch';
import type { EngineContext } from './context';
import { eventContextPatch, readEventContext } from './event-context';
import { runStep, type StepOutcome } from './steps';
import { rawTransaction } from '../db';
import { nextStepId, stepOf, type WorkflowGraph } from './workflow-graph';
import { loadWorkflowGraph } from './workflows';

// Turning claims into progress: run a claimed step and record its outcome, resolve and
// advance waits, re-drive continuations. Every write here is a claim from claims/; a
// lost claim is normal (someone else got there first) and simply ends that piece of work.

/**
 * Fault injection for the fault drills and crash tests, off unless set: pause after
 * claiming a step (of one type, if WAYPOST_FAULT_PAUSE_STEP_TYPE is set), holding the
 * claim, so a test can kill the process mid-step.
 */
const PAUSE_AFTER_CLAIM_MS = Number(process.env.WAYPOST_FAULT_PAUSE_AFTER_CLAIM_MS ?? 0);
const PAUSE_STEP_TYPE = process.env.WAYPOST_FAULT_PAUSE_STEP_TYPE ?? null;
/** Fault injection: die (SIGKILL) right after claiming waits, before advancing past them. */
const CRASH_AFTER_WAIT_CLAIM = process.env.WAYPOST_FAULT_CRASH_AFTER_WAIT_CLAIM === '1';

function retryDelaySeconds(attempt: number): number {
  return Math.min(2 ** attempt, 300);
}

function errorText(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).slice(0, 2000);
}

/** Each engine context's completions of the current turn (completion-batch.ts). */
const completionBatches = new WeakMap<EngineContext, CompletionBatch>();
function completionsOf(ctx: EngineContext): CompletionBatch {
  let batch = completionBatches.get(ctx);
  if (!batch) {
    batch = new CompletionBatch(ctx.db);
    completionBatches.set(ctx, batch);
  }
  return batch;
}

/** Record the outcome of a claimed step as one claim (an advance is batched with the others of this turn). */
async function recordOutcome(
  ctx: EngineContext,
  graph: WorkflowGraph,
  claim: StepClaim,
  outcome: StepOutcome,
  chain: boolean,
): Promise<CompleteResult | ParkResult> {
  switch (outcome.kind) {
    case 'advance': {
      const next = nextStepId(graph, claim.stepId, outcome.branch);
      return completionsOf(ctx).record(claim, {
        nextStepId: next ?? claim.stepId,
        status: next ? 'RUNNING' : 'COMPLETED',
        output: outcome.branch === null ? outcome.output : { ...outcome.output, branch: outcome.branch },
        contactPatch: outcome.contactPatch ?? null,
        message: outcome.message ?? null,
        // Going on at once: claim the next step in the same statement (one commit, not two).
        claimNext: chain ? { leaseSeconds: ctx.config.leaseSeconds, owner: ctx.owner } : null,
      });
    }
    case 'park': {
      const park = { dueInSeconds: outcome.dueInSeconds, output: outcome.output };
      const eventName = outcome.eventName;
      if (!eventName && outcome.dueInSeconds <= 0) {
        // A DELAY 0 is due as it parks: go on now, recorded as the timer would resolve it
        // (TIMEOUT, its one plain way on), without the park/wake round trip.
        const next = nextStepId(graph, claim.stepId, null);
        return completionsOf(ctx).record(claim, {
          nextStepId: next ?? claim.stepId,
          status: next ? 'RUNNING' : 'COMPLETED',
          output: { ...outcome.output, resolvedBy: 'TIMEOUT', branch: null },
          elapsed: true,
          claimNext: chain ? { leaseSeconds: ctx.config.leaseSeconds, owner: ctx.owner } : null,
        });
      }
      if (!eventName) return parkExecution(ctx.db, claim, park);
      // A WAIT_FOR_EVENT holds its event channel while it parks and looks back, so an
      // event accepted meanwhile is seen by one side or the other (claims/fragments.ts, "Event time decides").
      return rawTransaction(ctx.db, 'ENGINE', async (tx) => {
        await lockEventChannel(tx, { contactId: claim.contactId, eventName });
        return parkExecution(tx, claim, { ...park, awaitEvent: eventName });
      });
    }
    case 'exit':
      return completionsOf(ctx).record(claim, {
        nextStepId: claim.stepId,
        status: 'EXITED',
        exitReason: outcome.reason,
        output: { exitReason: outcome.reason },
      });
    case 'fail':
      return failStep(ctx.db, claim, {
        error: outcome.error,
        retryInSeconds: claim.attempt < ctx.config.maxStepAttempts ? retryDelaySeconds(claim.attempt) : null,
      });
  }
}

export interface StepRun {
  result: CompleteResult | ParkResult;
  /** The execution is RUNNING at its next step with this version: the caller may continue it. */
  continueAt: number | null;
  /** The next step, already claimed along with recording this one (opts.chain). */
  next: StepClaim | null;
}

/**
 * Run one claimed step: compute its outcome, record it, and keep its lease alive
 * meanwhile. With `chain`, an advance also claims the next step in the same statement.
 */
export async function runClaimedStep(ctx: EngineContext, claim: StepClaim, opts: { chain?: boolean } = {}): Promise<StepRun> {
  const graph = await loadWorkflowGraph(ctx.db, claim.workflowId);
  const step = stepOf(graph, claim.stepId);
  // Keep the lease while this step runs, so a slow step is not taken over; a dead
  // process stops renewing and its lease runs out.
  const renewal = setInterval(() => {
    renewLease(ctx.db, claim, ctx.config.leaseSeconds).catch(() => {});
  }, Math.max(200, (ctx.config.leaseSeconds * 1000) / 3));
  let result: CompleteResult | ParkResult;
  let outcome: StepOutcome;
  try {
    if (PAUSE_AFTER_CLAIM_MS > 0 && (!PAUSE_STEP_TYPE || PAUSE_STEP_TYPE === step.type)) {
      await new Promise((r) => setTimeout(r, PAUSE_AFTER_CLAIM_MS));
    }
    try {
      outcome = runStep({
        type: step.type,
        config: step.config,
        contact: { email: claim.contactEmail, data: claim.contactData ?? {}, subscribed: claim.contactSubscribed },
        context: claim.context ?? {},
      });
    } catch (error) {
      outcome = { kind: 'fail', error: `${step.type} "${step.key}": ${errorText(error)}` };
    }
    result = await recordOutcome(ctx, graph, claim, outcome, opts.chain ?? false);
  } finally {
    clearInterval(renewal);
  }
  if (!result.won) {
    ctx.log('info', 'step completion lost: the execution moved on', {
      executionId: claim.executionId,
      step: step.key,
      current: result.current,
    });
    return { result, continueAt: null, next: null };
  }
  if ('resumeEvent' in result && result.resumeEvent) {
    // The wait parked already resolved by an event accepted while it was being set up:
    // go on along its EVENT branch now (if this loses, the continuation sweeper does it).
    const advanced = await continueAfterWait(
      ctx,
      { executionId: claim.executionId, version: result.version, stepExecutionId: claim.stepExecutionId, stepId: claim.stepId, workflowId: claim.workflowId, branch: 'EVENT' },
      eventContextPatch(result.resumeEvent),
    );
    return { result, continueAt: advanced.running ? advanced.version : null, next: null };
  }
  const next = 'next' in result ? (result.next ?? null) : null;
  const continues =
    (outcome.kind === 'advance' && nextStepId(graph, claim.stepId, outcome.branch) !== null) ||
    (outcome.kind === 'park' && !outcome.eventName && outcome.dueInSeconds <= 0 && nextStepId(graph, claim.stepId, null) !== null);
  return { result, continueAt: continues && !opts.chain ? result.version : null, next };
}

/** Run an execution's steps back to back while it stays RUNNING, starting from a claim. */
export async function driveExecution(ctx: EngineContext, first: StepClaim): Promise<number> {
  let claim: StepClaim | null = first;
  let steps = 0;
  while (claim) {
    // The last step of the chain leaves the next one to the queue: no claim for it.
    const run = await runClaimedStep(ctx, claim, { chain: steps + 1 < ctx.config.maxChain });
    steps++;
    if (run.next) {
      claim = run.next;
      continue;
    }
    if (run.continueAt === null || steps >= ctx.config.maxChain) break;
    // Continue in hand: claim the next step with the version we just wrote. If anyone
    // else moved the execution meanwhile (an operator), this loses and we stop.
    const next = await claimStep(ctx.db, {
      executionId: claim.executionId,
      expectedVersion: run.continueAt,
      leaseSeconds: ctx.config.leaseSeconds,
      owner: ctx.owner,
    });
    claim = next.won ? next.claim : null;
  }
  return steps;
}

/** Claim up to `limit` due steps and run them (each execution driven as far as it goes). */
export async function processReadySteps(ctx: EngineContext, limit: number): Promise<number> {
  const { claims, unclaimable } = await claimReadySteps(ctx.db, {
    limit,
    leaseSeconds: ctx.config.leaseSeconds,
    owner: ctx.owner,
    maxAttempts: ctx.config.maxStepAttempts,
  });
  for (const u of unclaimable) {
    ctx.log('error', 'execution claimed but its step row is in no claimable state; failing it', { ...u });
    await failUnclaimable(ctx.db, u, 'the step row was in a state no worker may claim');
  }
  let steps = 0;
  await Promise.all(
    claims.map(async (claim) => {
      try {
        steps += await driveExecution(ctx, claim);
      } catch (error) {
        // The claim's lease will expire and another worker will retry; nothing is lost.
        ctx.log('error', 'step failed with an unexpected error', { executionId: claim.executionId, error: errorText(error) });
      }
    }),
  );
  return steps + unclaimable.length;
}

// ---------------------------------------------------------------------------
// Waits

export type ResumeResult =
  | { resumed: true; executionId: string; branch: string | null; version: number }
  | { resumed: false; reason: 'WAIT_RESOLVED'; resolvedBy: WaitResolver; at: Date | null; state: WaitState }
  | { resumed: false; reason: 'STALE_VERSION'; currentVersion: number | null; status: string | null; state: WaitState | null }
  | { resumed: false; reason: 'NOT_WAITING'; state: WaitState | null };


/**
 * Advance past a claimed wait along its branch (the continuation). With `claimNext`, a
 * worker also claims the step that follows in the same statement (`next`).
 */
export async function continueAfterWait(
  ctx: EngineContext,
  wait: Pick<WaitClaim, 'executionId' | 'version' | 'stepExecutionId' | 'stepId' | 'workflowId' | 'branch'>,
  contextPatch: Record<string, unknown> = {},
  opts: { claimNext?: boolean } = {},
): Promise<{ won: boolean; version: number | null; running: boolean; next: StepClaim | null }> {
  const graph = await loadWorkflowGraph(ctx.db, wait.workflowId);
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
 * transaction: lock the due rows and their event channels, then resolve them.
 */
export async function processDueWaits(ctx: EngineContext, limit: number): Promise<number> {
  const waits = await rawTransaction(ctx.db, 'ENGINE', async (tx) =>
    claimDueWaits(tx, { stepExecutionIds: await lockDueWaits(tx, { limit }) }),
  );
  if (CRASH_AFTER_WAIT_CLAIM && waits.length > 0) process.kill(process.pid, 'SIGKILL');
  await Promise.all(
    waits.map(async (wait) => {
      try {
        // The step after the wait is claimed with the advance: one statement, not two.
        const advanced = await continueAfterWait(ctx, wait, wait.resumeEvent ? eventContextPatch(wait.resumeEvent) : {}, { claimNext: true });
        if (advanced.next) await driveExecution(ctx, advanced.next);
      } catch (error) {
        // The wait stays claimed; the continuation sweeper re-drives it.
        ctx.log('error', 'advancing a resolved wait failed', { executionId: wait.executionId, error: errorText(error) });
      }
    }),
  );
  return waits.length;
}

/** Claim and drive an execution we just made RUNNING, if nobody else has yet. */
export async function continueRunning(ctx: EngineContext, executionId: string, version: number): Promise<void> {
  const claimed = await claimStep(ctx.db, { executionId, expectedVersion: version, leaseSeconds: ctx.config.leaseSeconds, owner: ctx.owner });
  if (claimed.won) await driveExecution(ctx, claimed.claim);
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
