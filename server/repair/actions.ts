import { Prisma, type Db, type DbTx } from '../db';
import { readExecutionState, type ExecutionState } from '../engine/claims';
import { writeAudit, type AuditInput } from '../engine/audit';
import { createEngineContext, type EngineContext } from '../engine/context';
import type { WorkflowGraph } from '../engine/workflow-graph';
import { loadVersionGraph } from '../engine/graphs';
import { cancel, migrate, redrive, resolveWait, resumeContinuation, retry, skip, type Applied, type ApplyRequest, type ApplyResult, type EventApplier, type ExecutionApplier } from './apply';
import { explainStaleVersion, explainWaitLoss, staleEvent, type ExplainLoss, type TargetedStep } from './explain';
import {
  planCancel,
  planRedriveEvent,
  planResumeContinuation,
  planRetryStep,
  planSkipStep,
  planWaitResolution,
  refuse,
  REPAIR_ACTIONS,
  type ActiveExecutionConflict,
  type EventPlanner,
  type ExecutionPlanner,
  type Plan,
  type RepairAction,
  type RepairChoices,
} from './planner';
import type { EventSnapshot, ExecutionSnapshot } from './snapshot';
import { planMigrate } from './plan-migrate';
import { loadExecution, loadMigration, loadTarget, RepairNotFound, type RepairOptions, type RepairRequest } from './target';
import { inRepairTransaction } from './transaction';

// Repair actions: what an operator may do to an execution (or an event) that is stuck.
// Each action is one entry of REPAIRS: how it is planned (planner.ts, pure), applied
// (apply.ts, through the engine's claims with the version the operator saw) and how its
// loss is explained (explain.ts). Every attempt — applied, lost or refused — is audited
// in the same transaction as its change (I8).

type Repair =
  | { target: 'execution'; plan: ExecutionPlanner; apply: ExecutionApplier; explain: ExplainLoss }
  | { target: 'event'; plan: EventPlanner; apply: EventApplier; explain: ExplainLoss };

/** One entry per action. */
export const REPAIRS: { [A in RepairAction]: Repair } = {
  RESUME_CONTINUATION: { target: 'execution', plan: planResumeContinuation, apply: resumeContinuation, explain: explainWaitLoss },
  FORCE_TIMEOUT: { target: 'execution', plan: planWaitResolution('TIMEOUT'), apply: resolveWait, explain: explainWaitLoss },
  DELIVER_EVENT: { target: 'execution', plan: planWaitResolution('EVENT'), apply: resolveWait, explain: explainWaitLoss },
  RETRY_STEP: { target: 'execution', plan: planRetryStep, apply: retry, explain: explainStaleVersion },
  SKIP_STEP: { target: 'execution', plan: planSkipStep, apply: skip, explain: explainStaleVersion },
  CANCEL: { target: 'execution', plan: planCancel, apply: cancel, explain: explainStaleVersion },
  REDRIVE_EVENT: { target: 'event', plan: planRedriveEvent, apply: redrive, explain: explainStaleVersion },
  MIGRATE: { target: 'execution', plan: planMigrate, apply: migrate, explain: explainStaleVersion },
};

/** Is the action allowed on this target now, and what will it do? Pure: the snapshot decides. */
export function planAction(
  action: RepairAction,
  target: ExecutionSnapshot | EventSnapshot,
  graph: WorkflowGraph | null,
  now = new Date(),
  choices: RepairChoices = {},
): Plan {
  const repair = REPAIRS[action] as Repair | undefined;
  if (repair?.target === 'event') {
    return target.kind === 'event' ? repair.plan(target, now) : refuse(`${action} applies to a tracked event; give its eventId`);
  }
  if (target.kind !== 'execution' || !graph) return refuse(`${action} applies to an execution; give its executionId`);
  if (!repair) return refuse(`unknown action ${action}`);
  return repair.plan(target, graph, now, choices);
}

// ---------------------------------------------------------------------------
// Preview

export interface Preview {
  action: RepairAction;
  expectedVersion: number;
  /** The step execution the action targets (send it back with the version): null if the step has no row. */
  expectedStepExecutionId: string | null;
  target: ExecutionSnapshot | EventSnapshot;
  plan: Plan;
}

export async function previewRepair(db: DbTx, req: RepairRequest, opts: RepairOptions): Promise<Preview> {
  const { target, graph } = await loadTarget(db, req, opts);
  return {
    action: req.action,
    expectedVersion: target.version,
    expectedStepExecutionId: target.kind === 'execution' ? (target.stepRow?.id ?? null) : null,
    target,
    plan: planAction(req.action, target, graph, new Date(), req.choices),
  };
}

/** An event of the execution's contact that DELIVER_EVENT could deliver to its wait. */
export interface DeliverableEvent {
  id: string;
  name: string;
  createdAt: Date;
  processedAt: Date | null;
  deadAt: Date | null;
}

/** Every execution action (REDRIVE_EVENT aside) planned against one read of the execution. */
export interface ExecutionRepairOptions {
  expectedVersion: number;
  expectedStepExecutionId: string | null;
  target: ExecutionSnapshot;
  actions: { action: RepairAction; plan: Plan }[];
  /** DELIVER_EVENT's candidates: the contact's recent events named as the current wait expects, newest first. */
  events: DeliverableEvent[];
}

/** How many of the contact's matching events DELIVER_EVENT offers. */
const DELIVERABLE_EVENTS = 5;

/** The contact's latest events of one name, newest first: a backward range of the (contactId, createdAt) index. */
export function deliverableEventsQuery(projectId: string, contactId: string, name: string): Prisma.Sql {
  return Prisma.sql`
    -- deliverableEvents
    SELECT id, name, "createdAt", "processedAt", "deadAt" FROM "Event"
     WHERE "contactId" = ${contactId}::uuid AND "projectId" = ${projectId}::uuid AND name = ${name}
     ORDER BY "createdAt" DESC
     LIMIT ${DELIVERABLE_EVENTS}::int`;
}

/**
 * What each action would do to this execution now, allowed or refused with why, in one
 * round trip (the console's repair panel): the planner of preview and apply, run once
 * per action over a single snapshot, so the panel never offers what apply would refuse.
 */
export async function repairOptionsFor(db: DbTx, projectId: string, executionId: string, opts: RepairOptions): Promise<ExecutionRepairOptions> {
  const loaded = await loadExecution(db, projectId, executionId, opts.graceSeconds);
  if (!loaded) throw new RepairNotFound('execution not found');
  // MIGRATE is offered to the latest version, when the execution is on an older one.
  const target = { ...loaded, migration: await loadMigration(db, loaded, undefined) };
  const graph = await loadVersionGraph(db, target.workflowVersionId);
  const now = new Date();
  const eventName = target.step?.type === 'WAIT_FOR_EVENT' ? graph.steps.get(target.step.id)?.config.eventName : undefined;
  const events = typeof eventName === 'string' ? await db.$queryRaw<DeliverableEvent[]>(deliverableEventsQuery(projectId, target.contactId, eventName)) : [];
  return {
    expectedVersion: target.version,
    expectedStepExecutionId: target.stepRow?.id ?? null,
    target,
    actions: REPAIR_ACTIONS.filter((a) => a !== 'REDRIVE_EVENT').map((action) => ({ action, plan: planAction(action, target, graph, now) })),
    events,
  };
}

// ---------------------------------------------------------------------------
// Apply

/** A repair's audit entry: action "repair.<ACTION>", in the transaction of its change (I8). */
function writeRepairAudit(
  db: DbTx,
  a: Omit<AuditInput, 'action'> & { action: RepairAction },
): Promise<string> {
  return writeAudit(db, { ...a, action: `repair.${a.action}` });
}

function stateOf(target: ExecutionSnapshot | EventSnapshot) {
  return target.kind === 'execution'
    ? { status: target.status, version: target.version, step: target.step?.key ?? null, stepStatus: target.stepRow?.status ?? null }
    : { name: target.name, version: target.version, deadAt: target.deadAt, processedAt: target.processedAt };
}

const WAIT_STEP_TYPES: readonly string[] = ['WAIT_FOR_EVENT', 'DELAY'];

/**
 * Apply one repair with the version the operator saw: plan, apply (the action's applier,
 * apply.ts, answers what happened as a value), then audit what happened, all in one
 * transaction. Losing is normal: the answer says who won and the current state. A
 * target that is not there is refused NOT_FOUND and audited REJECTED in the same
 * transaction (it changed nothing else).
 */
export async function applyRepair(
  db: Db,
  req: ApplyRequest & {
    /**
     * The step execution the operator saw (the preview's, or a bulk selection's): the
     * action loses if the execution has moved to another one, even at the same version,
     * and a loser is told what became of this one. Undefined: not checked.
     */
    expectedStepExecutionId?: string | null;
  },
  opts: RepairOptions & { engine?: Partial<EngineContext> },
): Promise<ApplyResult> {
  let afterCommit: ((ctx: EngineContext) => Promise<unknown>) | undefined;
  const targetKind = REPAIRS[req.action]?.target ?? 'execution';
  const named = { targetType: targetKind, targetId: (targetKind === 'event' ? req.eventId : req.executionId) ?? '' };
  const result = await inRepairTransaction(db, async (tx): Promise<ApplyResult> => {
    const audited = (entry: Pick<AuditInput, 'targetType' | 'targetId' | 'before' | 'after' | 'outcome'>) =>
      writeRepairAudit(tx, { projectId: req.projectId, actor: req.actor, action: req.action, reason: req.reason, ...entry });
    const notFound = async (message: string): Promise<ApplyResult> => {
      await audited({ ...named, outcome: 'REJECTED', after: { reason: 'NOT_FOUND', message } });
      return { ok: false, code: 'NOT_FOUND', message };
    };

    // Plan: the target as it is now, at the version the operator saw.
    let loaded: Awaited<ReturnType<typeof loadTarget>>;
    try {
      loaded = await loadTarget(tx, req, opts);
    } catch (error) {
      if (error instanceof RepairNotFound) return notFound(error.message);
      throw error;
    }
    const { target, graph } = loaded;
    const repair = REPAIRS[req.action];
    const audit = (outcome: AuditInput['outcome'], after: unknown) =>
      audited({ targetType: target.kind, targetId: target.id, before: stateOf(target), after, outcome });

    // The wait the operator targeted: the step execution they saw when they send it;
    // else the execution's current wait; else (it moved past its waits) its latest one.
    const targetedStep: TargetedStep =
      req.expectedStepExecutionId !== undefined
        ? { stepExecutionId: req.expectedStepExecutionId }
        : target.kind === 'execution' && target.step && WAIT_STEP_TYPES.includes(target.step.type)
          ? { stepExecutionId: target.stepRow?.id ?? null }
          : 'LATEST';
    const stepMoved = target.kind === 'execution' && req.expectedStepExecutionId !== undefined && (target.stepRow?.id ?? null) !== req.expectedStepExecutionId;
    if (target.version !== req.expectedVersion || stepMoved) {
      const current = target.kind === 'execution' ? await readExecutionState(tx, target.id) : null;
      const conflict = target.kind === 'execution' ? await repair.explain(tx, req.projectId, current, targetedStep) : staleEvent(target);
      await audit('LOST', { conflict });
      return { ok: false, code: 'CONFLICT', conflict } as const;
    }
    /** The claim lost to whoever moved the target: audited LOST, with who won. */
    const lost = async (current: ExecutionState | null): Promise<ApplyResult> => {
      const conflict = await repair.explain(tx, req.projectId, current, targetedStep);
      await audit('LOST', { conflict });
      return { ok: false, code: 'CONFLICT', conflict };
    };
    const plan = planAction(req.action, target, graph, new Date(), req.choices);
    if (!plan.allowed) {
      if (plan.conflict) {
        await audit('REJECTED', { refusal: plan.refusal, conflict: plan.conflict });
        return { ok: false, code: 'ACTIVE_EXECUTION', message: plan.refusal!, conflict: plan.conflict, target } as const;
      }
      await audit('REJECTED', { refusal: plan.refusal });
      return { ok: false, code: 'NOT_ALLOWED', message: plan.refusal!, target } as const;
    }

    // Apply: the action's claims, answering what happened.
    const applying = {
      tx,
      db,
      ctx: createEngineContext(tx, { ...opts.engine, owner: req.actor }),
      req,
      plan,
      graph,
      replan: (fresh: ExecutionSnapshot) => planAction(req.action, fresh, graph, new Date(), req.choices),
    };
    // The plan allowed the action, so the target is of the kind the action's entry takes.
    const applied: Applied =
      repair.target === 'event'
        ? await repair.apply({ ...applying, target: target as EventSnapshot })
        : await repair.apply({ ...applying, target: target as ExecutionSnapshot });

    // Audit: what happened, in the transaction of the change.
    switch (applied.kind) {
      case 'NOT_FOUND':
        return notFound(applied.message);
      case 'LOST':
        return lost(applied.current);
      case 'LOST_CLAIM': {
        if (!('reason' in applied.claim)) return lost(applied.claim.current);
        const conflict: ActiveExecutionConflict = { reason: 'ACTIVE_EXECUTION', executionId: applied.claim.executionId };
        await audit('LOST', { conflict });
        return {
          ok: false,
          code: 'ACTIVE_EXECUTION',
          message: `the contact now has another active execution of "${target.kind === 'execution' ? target.workflowName : ''}" (${applied.claim.executionId}); nothing was changed`,
          conflict,
          target,
        };
      }
      case 'APPLIED': {
        const followed = applied.plan ?? plan;
        await audit('APPLIED', { ...followed, ...(req.choices && Object.keys(req.choices).length ? { choices: req.choices } : {}), version: applied.version });
        afterCommit = applied.afterCommit;
        return {
          ok: true,
          action: req.action,
          executionId: target.kind === 'execution' ? target.id : null,
          eventId: target.kind === 'event' ? target.id : null,
          version: applied.version,
          change: followed.change,
        };
      }
    }
  }, () => ({
    projectId: req.projectId,
    actor: req.actor,
    action: `repair.${req.action}`,
    ...named,
    reason: req.reason,
    before: { expectedVersion: req.expectedVersion },
  }));
  if (result.ok && afterCommit) {
    await afterCommit(createEngineContext(db, { ...opts.engine, owner: req.actor })).catch(() => {
      // Best effort: the workers and the sweeper pick the work up anyway.
    });
  }
  return result;
}
