import {
  claimReadySteps,
  claimStep,
  failStep,
  failUnclaimable,
  lockEventChannel,
  parkExecution,
  renewLease,
  type CompleteResult,
  type ParkResult,
  type StepClaim,
} from './claims';
import { rawTransaction } from '../db';
import { countStepClaimed, countStepCompleted, type StepOutcomeLabel } from '../metrics/counts';
import { CompletionBatch } from './completion-batch';
import type { EngineContext } from './context';
import { continueAfterWait } from './continuations';
import { eventContextPatch } from './event-context';
import { faults } from './faults';
import { runStep, type StepOutcome } from './steps';
import { nextStepId, stepOf, type WorkflowGraph } from './workflow-graph';
import { loadVersionGraph } from './graphs';

// Running claimed steps: claim due steps, run each (steps.ts computes the outcome) and
// record its outcome with a claim (advance, park, fail), driving an execution's steps back
// to back while it stays RUNNING. A lost claim is normal (someone else got there first)
// and simply ends that piece of work. Waits are run-waits.ts's; re-driven continuations,
// continuations.ts's.

function retryDelaySeconds(attempt: number): number {
  return Math.min(2 ** attempt, 300);
}

export function errorText(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).slice(0, 2000);
}

/** How a step's recorded outcome is counted (waypost_steps_completed_total); a DELAY 0 goes on at once. */
function completedAs(outcome: StepOutcome): StepOutcomeLabel {
  if (outcome.kind === 'park') return !outcome.eventName && outcome.dueInSeconds <= 0 ? 'advanced' : 'parked';
  return outcome.kind === 'advance' ? 'advanced' : outcome.kind === 'exit' ? 'exited' : 'failed';
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
  // The claim's version, never the workflow's latest: an execution runs the graph it
  // was enrolled on (or migrated to) however many versions were published since.
  const graph = await loadVersionGraph(ctx.db, claim.workflowVersionId);
  const step = stepOf(graph, claim.stepId);
  countStepClaimed(step.type);
  // Keep the lease while this step runs, so a slow step is not taken over; a dead
  // process stops renewing and its lease runs out.
  const renewal = setInterval(() => {
    renewLease(ctx.db, claim, ctx.config.leaseSeconds).catch(() => {});
  }, Math.max(200, (ctx.config.leaseSeconds * 1000) / 3));
  let result: CompleteResult | ParkResult;
  let outcome: StepOutcome;
  try {
    await faults.afterStepClaim(step.type);
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
  countStepCompleted(step.type, completedAs(outcome));
  if ('resumeEvent' in result && result.resumeEvent) {
    // The wait parked already resolved by an event accepted while it was being set up:
    // go on along its EVENT branch now (if this loses, the continuation sweeper does it).
    const advanced = await continueAfterWait(
      ctx,
      { executionId: claim.executionId, version: result.version, stepExecutionId: claim.stepExecutionId, stepId: claim.stepId, workflowId: claim.workflowId, workflowVersionId: claim.workflowVersionId, branch: 'EVENT' },
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

/** Claim and drive an execution we just made RUNNING, if nobody else has yet. */
export async function continueRunning(ctx: EngineContext, executionId: string, version: number): Promise<void> {
  const claimed = await claimStep(ctx.db, { executionId, expectedVersion: version, leaseSeconds: ctx.config.leaseSeconds, owner: ctx.owner });
  if (claimed.won) await driveExecution(ctx, claimed.claim);
}
