import type { Db, DbTx } from '../db';
import {
  cancelExecution,
  claimWait,
  lockEventChannel,
  migrateExecution,
  readEventsResumingWait,
  readExecutionState,
  redriveEvent,
  retryStep,
  skipStep,
  type ExecutionState,
  type OperatorClaimResult,
} from '../engine/claims';
import type { EngineContext } from '../engine/context';
import { dispatchEvent } from '../engine/events';
import { eventContextPatch, readEventContext } from '../engine/event-context';
import type { WorkflowGraph } from '../engine/workflow-graph';
import { continueAfterWait } from '../engine/runner';
import { notifyWorkers } from '../engine/wakeup';
import type { Conflict } from './explain';
import type { ActiveExecutionConflict, Plan, RepairAction } from './planner';
import type { EventSnapshot, ExecutionSnapshot } from './snapshot';
import { waitSeconds } from './plan-migrate';
import { IN_WINDOW_EVENTS, type RepairRequest } from './target';
import type { RepairBusy } from './transaction';

// Applying a planned repair: one function per action, each going through the engine's
// own claims with the version the operator saw, so a person can never race a worker, an
// event or another person into a double send or a double branch. Each is called by
// applyRepair (actions.ts) inside the repair's transaction, after the plan allowed it,
// and answers what happened as a value (Applied): plan, then apply, then audit.

export type ApplyResult =
  | { ok: true; action: RepairAction; executionId: string | null; eventId: string | null; version: number; change: string }
  | { ok: false; code: 'CONFLICT'; conflict: Conflict }
  | { ok: false; code: 'NOT_ALLOWED'; message: string; target: ExecutionSnapshot | EventSnapshot }
  | { ok: false; code: 'ACTIVE_EXECUTION'; message: string; conflict: ActiveExecutionConflict; target: ExecutionSnapshot | EventSnapshot }
  | { ok: false; code: 'NOT_FOUND'; message: string }
  | RepairBusy;

export interface ApplyRequest extends RepairRequest {
  actor: string;
  expectedVersion: number;
  reason: string;
}

/** What an action's applier works with: the repair's transaction, its target and its plan. */
export interface Applying<T extends ExecutionSnapshot | EventSnapshot> {
  tx: DbTx;
  /** The client outside the transaction, for work after it commits. */
  db: Db;
  ctx: EngineContext;
  req: ApplyRequest;
  target: T;
  plan: Plan;
  /** The workflow's graph (an execution's). */
  graph: WorkflowGraph | null;
  /** The action planned again on a fresh read of the execution, taken under the claim's locks. */
  replan(fresh: ExecutionSnapshot): Plan;
}

/**
 * What an applier did, as a value: applyRepair (actions.ts) audits it in the same
 * transaction and turns it into the answer. An applier writes no audit entry itself.
 */
export type Applied =
  /** The claim won at this version, following this plan (the preview's unless replanned); `afterCommit` runs once committed (best effort). */
  | { kind: 'APPLIED'; version: number; plan?: Plan; afterCommit?: (ctx: EngineContext) => Promise<unknown> }
  /** The claim lost to whoever moved the execution (its state now; null for an event). */
  | { kind: 'LOST'; current: ExecutionState | null }
  /** An operator claim's loss: to I1 (an execution became active meanwhile), or to whoever moved it. */
  | { kind: 'LOST_CLAIM'; claim: Exclude<OperatorClaimResult, { won: true }> }
  /** Something the request named is not there (DELIVER_EVENT's event for this contact). */
  | { kind: 'NOT_FOUND'; message: string };

export type ExecutionApplier = (a: Applying<ExecutionSnapshot>) => Promise<Applied>;
export type EventApplier = (a: Applying<EventSnapshot>) => Promise<Applied>;

/** The context the wait's resolving event (if any) gives the execution. */
async function resumeContext(db: DbTx, executionId: string): Promise<Record<string, unknown>> {
  const [wait] = await db.$queryRaw<{ resumeEventId: string | null }[]>`
    -- resumeContext
    SELECT s."resumeEventId"
      FROM "WorkflowExecution" e
      JOIN "StepExecution" s ON s."executionId" = e.id AND s."stepId" = e."currentStepId"
     WHERE e.id = ${executionId}::uuid`;
  return (wait?.resumeEventId && (await readEventContext(db, wait.resumeEventId))) || {};
}

export const resumeContinuation: ExecutionApplier = async ({ tx, db, ctx, target: execution }) => {
  const continued = await continueAfterWait(
    ctx,
    {
      executionId: execution.id,
      version: execution.version,
      stepExecutionId: execution.stepRow!.id,
      stepId: execution.step!.id,
      workflowId: execution.workflowId,
      workflowVersionId: execution.workflowVersionId,
      branch: execution.stepRow!.resolvedBranch,
    },
    await resumeContext(tx, execution.id),
  );
  if (!continued.won) return { kind: 'LOST', current: await readExecutionState(tx, execution.id) };
  return { kind: 'APPLIED', version: continued.version!, afterCommit: () => notifyWorkers(db) };
};

/**
 * FORCE_TIMEOUT and DELIVER_EVENT: the operator claims the wait (I4) and the execution
 * moves on. FORCE_TIMEOUT on a WAIT_FOR_EVENT applies the timer's rule: under the event
 * channel's lock (so no event accepted before the look-back is missed, and none accepted
 * after it can still count), an unconsumed event accepted inside the window resumes the
 * wait by EVENT with its data as context.lastEvent, unless the operator chose to ignore it.
 */
export const resolveWait: ExecutionApplier = async (a) => {
  const { tx, db, ctx, req, target: execution, graph } = a;
  let plan = a.plan;
  let patch: Record<string, unknown> = {};
  if (req.action === 'DELIVER_EVENT' && req.eventId) {
    const eventPatch = await readEventContext(tx, req.eventId, { projectId: req.projectId, contactId: execution.contactId });
    if (!eventPatch) return { kind: 'NOT_FOUND', message: 'event not found for this contact' };
    patch = eventPatch;
  }
  const eventName = execution.step && graph?.steps.get(execution.step.id)?.config.eventName;
  if (req.action === 'FORCE_TIMEOUT' && execution.step?.type === 'WAIT_FOR_EVENT' && typeof eventName === 'string' && !req.choices?.ignoreInWindowEvents) {
    await lockEventChannel(tx, { contactId: execution.contactId, eventName });
    const events = await readEventsResumingWait(tx, { stepExecutionId: execution.stepRow!.id, limit: IN_WINDOW_EVENTS });
    if (events[0]?.id !== plan.resumeEvent?.id) {
      // An event arrived (or was consumed) since the preview read: the rule decides on what is there now.
      plan = a.replan({ ...execution, inWindowEvents: events.map(({ id, name, createdAt }) => ({ id, name, createdAt })) });
    }
    const event = events.find((e) => e.id === plan.resumeEvent?.id);
    if (event) patch = eventContextPatch(event);
  }
  const claimed = await claimWait(tx, {
    stepExecutionId: execution.stepRow!.id,
    resolvedBy: plan.resolvedBy ?? 'OPERATOR',
    branch: plan.branch,
    eventId: req.action === 'DELIVER_EVENT' ? (req.eventId ?? null) : (plan.resumeEvent?.id ?? null),
    expectedVersion: req.expectedVersion,
  });
  if (!claimed.won) return { kind: 'LOST', current: claimed.current?.execution ?? (await readExecutionState(tx, execution.id)) };
  const continued = await continueAfterWait(ctx, claimed.wait, patch);
  if (!continued.won) return { kind: 'LOST', current: await readExecutionState(tx, execution.id) };
  return { kind: 'APPLIED', version: continued.version!, plan, afterCommit: () => notifyWorkers(db) };
};

export const retry: ExecutionApplier = async ({ tx, db, req, target: execution }) => {
  const claim = await retryStep(tx, { executionId: execution.id, expectedVersion: req.expectedVersion });
  if (!claim.won) return { kind: 'LOST_CLAIM', claim };
  return { kind: 'APPLIED', version: claim.version, afterCommit: () => notifyWorkers(db) };
};

export const skip: ExecutionApplier = async ({ tx, db, req, target: execution, plan }) => {
  const step = execution.step!;
  const claim = await skipStep(tx, {
    executionId: execution.id,
    expectedVersion: req.expectedVersion,
    stepId: step.id,
    nextStepId: plan.nextStep?.id ?? step.id,
    status: plan.nextStep ? 'RUNNING' : 'COMPLETED',
    note: `skipped by ${req.actor}: ${req.reason}`,
  });
  if (!claim.won) return { kind: 'LOST_CLAIM', claim };
  return { kind: 'APPLIED', version: claim.version, afterCommit: () => notifyWorkers(db) };
};

export const cancel: ExecutionApplier = async ({ tx, req, target: execution }) => {
  const claim = await cancelExecution(tx, { executionId: execution.id, expectedVersion: req.expectedVersion, reason: `cancelled by ${req.actor}: ${req.reason}` });
  if (!claim.won) return { kind: 'LOST', current: claim.current };
  return { kind: 'APPLIED', version: claim.version };
};

export const redrive: EventApplier = async ({ tx, req, target: event }) => {
  const won = await redriveEvent(tx, { eventId: event.id, expectedAttempts: req.expectedVersion });
  if (!won) return { kind: 'LOST', current: null };
  return { kind: 'APPLIED', version: event.version, afterCommit: (c) => dispatchEvent(c, event.id) };
};

/**
 * MIGRATE: move the execution to the planned step of the later version, in one claim
 * fenced by the version the operator saw (migrateExecution: the execution row, then its
 * step row, as an event's dispatch takes a wait; the timer skips locked rows). A wait on
 * an event is moved under its event channel's lock, and then looks back as a parking wait
 * does: an event accepted inside its window (kept from the old version) whose dispatch
 * ran before the move could see the moved wait, or has not run yet, resumes it here, by
 * EVENT, once. Events accepted after the lock are accepted after the move and find it.
 */
export const migrate: ExecutionApplier = async ({ db, tx, ctx, req, target: execution, plan, graph }) => {
  const move = plan.migration!;
  const from = graph?.steps.get(execution.step!.id);
  const eventName = execution.status === 'WAITING' && from?.type === 'WAIT_FOR_EVENT' ? from.config.eventName : undefined;
  if (typeof eventName === 'string') await lockEventChannel(tx, { contactId: execution.contactId, eventName });
  const toGraph = execution.migration!.to!.graph;
  const toNode = toGraph.steps.get(move.toStep.id)!;
  const claim = await migrateExecution(tx, {
    executionId: execution.id,
    expectedVersion: req.expectedVersion,
    fromVersionId: execution.workflowVersionId,
    fromStepId: execution.step!.id,
    toVersionId: toGraph.versionId,
    toStepId: toNode.id,
    keepWait: move.keepsWait,
    dueSeconds: waitSeconds(toNode.config, toNode.type),
    note: `moved to version ${move.toVersion} step "${move.toStep.key}" by ${req.actor}: ${req.reason}`,
  });
  if (!claim.won) return { kind: 'LOST', current: claim.current };
  if (move.keepsWait && typeof eventName === 'string') {
    const [event] = await readEventsResumingWait(tx, { stepExecutionId: execution.stepRow!.id, limit: 1 });
    if (event) {
      const resolved = await claimWait(tx, { stepExecutionId: execution.stepRow!.id, resolvedBy: 'EVENT', branch: 'EVENT', eventId: event.id, expectedVersion: claim.version });
      if (!resolved.won) return { kind: 'LOST', current: await readExecutionState(tx, execution.id) };
      const continued = await continueAfterWait(ctx, resolved.wait, eventContextPatch(event));
      if (!continued.won) return { kind: 'LOST', current: await readExecutionState(tx, execution.id) };
      return { kind: 'APPLIED', version: continued.version!, afterCommit: () => notifyWorkers(db) };
    }
  }
  return { kind: 'APPLIED', version: claim.version, afterCommit: () => notifyWorkers(db) };
};
