import { Prisma, type Db, type DbTx } from '../db';
import {
  cancelExecution,
  claimWait,
  readExecutionState,
  redriveEvent,
  retryStep,
  skipStep,
  type ExecutionState,
  type OperatorClaimResult,
} from '../engine/claims';
import { ACTIVE_STATUSES, claimMayMove, reactivates, type ClaimName } from '../engine/transitions';
import { createEngineContext, type EngineContext } from '../engine/context';
import { dispatchEvent } from '../engine/events';
import { continueAfterWait, eventContextPatch } from '../engine/runner';
import { notifyWorkers } from '../engine/wakeup';
import { writeAudit, type AuditInput } from '../engine/audit';
import { loadWorkflowGraph, nextStepId, type WorkflowGraph } from '../engine/workflows';
import { stuckReasonsOf, type StuckItem } from './stuck';

// Repair actions: what an operator may do to an execution (or an event) that is stuck,
// each one going through the engine's own claims with the version the operator saw, so a
// person can never race a worker, an event or another person into a double send or a
// double branch. Every attempt — applied, lost or refused — is audited in the same
// transaction as its change (I8).

export const REPAIR_ACTIONS = [
  'RESUME_CONTINUATION',
  'FORCE_TIMEOUT',
  'DELIVER_EVENT',
  'RETRY_STEP',
  'SKIP_STEP',
  'CANCEL',
  'REDRIVE_EVENT',
] as const;
export type RepairAction = (typeof REPAIR_ACTIONS)[number];

export interface StepSummary {
  id: string;
  key: string;
  name: string;
  type: string;
}

export interface StepRowSummary {
  id: string;
  status: string;
  attempt: number;
  leaseExpiresAt: Date | null;
  dueAt: Date | null;
  resolvedBy: string | null;
  resolvedAt: Date | null;
  resolvedBranch: string | null;
  error: string | null;
}

export interface MessageSummary {
  id: string;
  status: string;
  subject: string;
  sentAt: Date | null;
  createdAt: Date;
}

export interface ExecutionSnapshot {
  kind: 'execution';
  id: string;
  projectId: string;
  workflowId: string;
  workflowName: string;
  contactId: string;
  contactEmail: string;
  status: string;
  version: number;
  updatedAt: Date;
  step: StepSummary | null;
  stepRow: StepRowSummary | null;
  message: MessageSummary | null;
  stuck: StuckItem[];
  /** Another active (RUNNING or WAITING) execution of the same workflow and contact (I1), if any. */
  activeExecutionId: string | null;
}

export interface EventSnapshot {
  kind: 'event';
  id: string;
  projectId: string;
  name: string;
  contactId: string | null;
  /** The event's CAS token: its dispatch attempt count. */
  version: number;
  processedAt: Date | null;
  deadAt: Date | null;
  lastError: string | null;
  leaseExpiresAt: Date | null;
}

export interface Plan {
  allowed: boolean;
  /** Why not, in an operator's words, when not allowed. */
  refusal: string | null;
  /** What will change, in an operator's words. */
  change: string;
  branch: string | null;
  nextStep: StepSummary | null;
  sideEffect: { emailMayBeSent: boolean; existingMessage: MessageSummary | null; note: string };
  /** Refused because it would make a second active execution (I1): the one that is active. */
  conflict?: ActiveExecutionConflict | null;
}

/** A repair that would make a second active execution of a (workflow, contact) (I1). */
export type ActiveExecutionConflict = {
  reason: 'ACTIVE_EXECUTION';
  /** The execution that is active. */
  executionId: string;
};

export interface Preview {
  action: RepairAction;
  expectedVersion: number;
  /** The step execution the action targets (send it back with the version): null if the step has no row. */
  expectedStepExecutionId: string | null;
  target: ExecutionSnapshot | EventSnapshot;
  plan: Plan;
}

export interface Winner {
  kind: 'worker' | 'event' | 'timeout' | 'operator';
  actor: string | null;
  action: string | null;
  at: Date | null;
}

export type Conflict =
  | { reason: 'WAIT_RESOLVED'; resolvedBy: string; at: Date | null; winner: Winner; status: string; currentVersion: number }
  | { reason: 'STALE_VERSION'; currentVersion: number | null; status: string | null; winner: Winner };

export type ApplyResult =
  | { ok: true; action: RepairAction; executionId: string | null; eventId: string | null; version: number; change: string }
  | { ok: false; code: 'CONFLICT'; conflict: Conflict }
  | { ok: false; code: 'NOT_ALLOWED'; message: string; target: ExecutionSnapshot | EventSnapshot }
  | { ok: false; code: 'ACTIVE_EXECUTION'; message: string; conflict: ActiveExecutionConflict; target: ExecutionSnapshot | EventSnapshot }
  | { ok: false; code: 'NOT_FOUND'; message: string };

export class RepairNotFound extends Error {
  override name = 'RepairNotFound';
}

// ---------------------------------------------------------------------------
// Reading the target

export async function loadExecution(
  db: DbTx,
  projectId: string,
  executionId: string,
  graceSeconds: number,
): Promise<ExecutionSnapshot | null> {
  const rows = await db.$queryRaw<
    (Omit<ExecutionSnapshot, 'kind' | 'step' | 'stepRow' | 'message' | 'stuck'> & {
      currentStepId: string | null;
      stepKey: string | null;
      stepName: string | null;
      stepType: string | null;
      rowId: string | null;
      rowStatus: string | null;
      attempt: number | null;
      leaseExpiresAt: Date | null;
      dueAt: Date | null;
      resolvedBy: string | null;
      resolvedAt: Date | null;
      resolvedBranch: string | null;
      rowError: string | null;
      messageId: string | null;
      messageStatus: string | null;
      messageSubject: string | null;
      messageSentAt: Date | null;
      messageCreatedAt: Date | null;
      activeExecutionId: string | null;
    })[]
  >`
    SELECT e.id, e."projectId", e."workflowId", w.name AS "workflowName", e."contactId", c.email AS "contactEmail",
           e.status::text AS status, e.version, e."updatedAt", e."currentStepId",
           ws.key AS "stepKey", ws.name AS "stepName", ws.type::text AS "stepType",
           s.id AS "rowId", s.status::text AS "rowStatus", s.attempt, s."leaseExpiresAt", s."dueAt",
           s."resolvedBy"::text AS "resolvedBy", s."resolvedAt", s."resolvedBranch", s.error AS "rowError",
           m.id AS "messageId", m.status::text AS "messageStatus", m.subject AS "messageSubject",
           m."sentAt" AS "messageSentAt", m."createdAt" AS "messageCreatedAt",
           (SELECT o.id FROM "WorkflowExecution" o
             WHERE o."workflowId" = e."workflowId" AND o."contactId" = e."contactId" AND o.id <> e.id
               AND o.status IN (${Prisma.join(ACTIVE_STATUSES.map((a) => Prisma.sql`${a}::"ExecutionStatus"`))})
             LIMIT 1) AS "activeExecutionId"
      FROM "WorkflowExecution" e
      JOIN "Workflow" w ON w.id = e."workflowId"
      JOIN "Contact" c ON c.id = e."contactId"
      LEFT JOIN "WorkflowStep" ws ON ws.id = e."currentStepId"
      LEFT JOIN "StepExecution" s ON s."executionId" = e.id AND s."stepId" = e."currentStepId"
      LEFT JOIN "Message" m ON m."stepExecutionId" = s.id
     WHERE e.id = ${executionId}::uuid AND e."projectId" = ${projectId}::uuid`;
  const r = rows[0];
  if (!r) return null;
  return {
    kind: 'execution',
    id: r.id,
    projectId: r.projectId,
    workflowId: r.workflowId,
    workflowName: r.workflowName,
    contactId: r.contactId,
    contactEmail: r.contactEmail,
    status: r.status,
    version: r.version,
    updatedAt: r.updatedAt,
    step: r.currentStepId ? { id: r.currentStepId, key: r.stepKey!, name: r.stepName!, type: r.stepType! } : null,
    stepRow: r.rowId
      ? {
          id: r.rowId,
          status: r.rowStatus!,
          attempt: r.attempt!,
          leaseExpiresAt: r.leaseExpiresAt,
          dueAt: r.dueAt,
          resolvedBy: r.resolvedBy,
          resolvedAt: r.resolvedAt,
          resolvedBranch: r.resolvedBranch,
          error: r.rowError,
        }
      : null,
    message: r.messageId
      ? { id: r.messageId, status: r.messageStatus!, subject: r.messageSubject!, sentAt: r.messageSentAt, createdAt: r.messageCreatedAt! }
      : null,
    stuck: await stuckReasonsOf(db, { projectId, graceSeconds }, executionId),
    activeExecutionId: r.activeExecutionId,
  };
}

export async function loadEvent(db: DbTx, projectId: string, eventId: string): Promise<EventSnapshot | null> {
  const rows = await db.$queryRaw<Omit<EventSnapshot, 'kind'>[]>`
    SELECT id, "projectId", name, "contactId", "dispatchAttempts" AS version, "processedAt", "deadAt", "lastError", "leaseExpiresAt"
      FROM "Event" WHERE id = ${eventId}::uuid AND "projectId" = ${projectId}::uuid`;
  return rows[0] ? { kind: 'event', ...rows[0] } : null;
}

// ---------------------------------------------------------------------------
// Planning (pure): is the action allowed in this state, and what will it do?

const PLAIN_NEXT_TYPES = ['TRIGGER', 'SEND_EMAIL', 'DELAY', 'UPDATE_CONTACT'];

function heldByLiveWorker(x: ExecutionSnapshot, now: Date): boolean {
  return x.stepRow?.status === 'RUNNING' && !!x.stepRow.leaseExpiresAt && x.stepRow.leaseExpiresAt >= now;
}

function summary(graph: WorkflowGraph, stepId: string | null): StepSummary | null {
  if (!stepId) return null;
  const s = graph.steps.get(stepId);
  return s ? { id: s.id, key: s.key, name: s.name, type: s.type } : null;
}

const noEmail = (note: string, existing: MessageSummary | null = null) => ({ emailMayBeSent: false, existingMessage: existing, note });

/**
 * The claim behind each execution action whose "may it?" is the transitions table's
 * (server/engine/transitions.ts): the planner asks the table the claim's SQL reads.
 */
export const ACTION_CLAIMS = {
  RETRY_STEP: 'retryStep',
  SKIP_STEP: 'skipStep',
  CANCEL: 'cancelExecution',
} as const satisfies Partial<Record<RepairAction, ClaimName>>;

export function planAction(
  action: RepairAction,
  target: ExecutionSnapshot | EventSnapshot,
  graph: WorkflowGraph | null,
  now = new Date(),
): Plan {
  const refuse = (refusal: string, conflict: ActiveExecutionConflict | null = null): Plan => ({
    allowed: false,
    refusal,
    change: 'nothing',
    branch: null,
    nextStep: null,
    sideEffect: noEmail('nothing is sent'),
    conflict,
  });
  // I1: the execution would become active beside another active one of its contact.
  const refuseActive = (x: ExecutionSnapshot, doing: string): Plan =>
    refuse(
      `the contact has another active execution of "${x.workflowName}" (${x.activeExecutionId}); ${doing} would make a second one. Let that one finish or cancel it first`,
      { reason: 'ACTIVE_EXECUTION', executionId: x.activeExecutionId! },
    );

  if (action === 'REDRIVE_EVENT') {
    if (target.kind !== 'event') return refuse('REDRIVE_EVENT applies to a tracked event; give its eventId');
    if (target.processedAt) return refuse('the event was already processed');
    if (target.leaseExpiresAt && target.leaseExpiresAt >= now) return refuse('a dispatcher is working on this event right now');
    return {
      allowed: true,
      refusal: null,
      change: target.deadAt
        ? `bring the dead-lettered event "${target.name}" back and dispatch it now (attempt ${target.version + 1})`
        : `dispatch the pending event "${target.name}" now (attempt ${target.version + 1})`,
      branch: null,
      nextStep: null,
      sideEffect: {
        emailMayBeSent: true,
        existingMessage: null,
        note: 'dispatching enrolls the contact into workflows triggered by this event and resumes its waits for it; enrollments already made by this event are not repeated',
      },
    };
  }
  if (target.kind !== 'execution' || !graph) return refuse(`${action} applies to an execution; give its executionId`);
  const x = target;
  const step = x.step;
  const row = x.stepRow;
  const existing = x.message;

  switch (action) {
    case 'RESUME_CONTINUATION': {
      if (x.status !== 'WAITING' || row?.status !== 'WAITING' || !row.resolvedBy) {
        if (row?.resolvedBy && row.status === 'COMPLETED') {
          return refuse(`the continuation already ran: the wait was resolved by ${row.resolvedBy} and the execution moved on; nothing is replayed`);
        }
        return refuse(`no resolved wait to continue: the execution is ${x.status}${step ? ` at "${step.name}"` : ''}`);
      }
      const next = nextStepId(graph, step!.id, row.resolvedBranch);
      return {
        allowed: true,
        refusal: null,
        change: next
          ? `move past "${step!.name}" along the ${row.resolvedBranch ?? 'next'} branch (resolved by ${row.resolvedBy}) to "${graph.steps.get(next)!.name}"`
          : `move past "${step!.name}" (resolved by ${row.resolvedBy}); it is the last step, so the execution completes`,
        branch: row.resolvedBranch,
        nextStep: summary(graph, next),
        sideEffect: noEmail('the resolved wait is not resolved again; the next step runs once, as usual'),
      };
    }
    case 'FORCE_TIMEOUT':
    case 'DELIVER_EVENT': {
      const branch = action === 'FORCE_TIMEOUT' ? 'TIMEOUT' : 'EVENT';
      const validTypes = action === 'FORCE_TIMEOUT' ? ['WAIT_FOR_EVENT', 'DELAY'] : ['WAIT_FOR_EVENT'];
      if (x.status !== 'WAITING' || !step || !validTypes.includes(step.type) || row?.status !== 'WAITING') {
        return refuse(`the execution is not waiting on a ${validTypes.join(' or ')} step (it is ${x.status}${step ? ` at "${step.name}"` : ''})`);
      }
      if (row.resolvedBy) return refuse(`the wait was already resolved by ${row.resolvedBy}; use RESUME_CONTINUATION`);
      const effective = step.type === 'DELAY' ? null : branch;
      const next = nextStepId(graph, step.id, effective);
      return {
        allowed: true,
        refusal: null,
        change: `resolve "${step.name}" as ${effective ?? 'elapsed'} (by an operator) and move to ${next ? `"${graph.steps.get(next)!.name}"` : 'the end (the execution completes)'}`,
        branch: effective,
        nextStep: summary(graph, next),
        sideEffect: noEmail(
          next && graph.steps.get(next)!.type === 'SEND_EMAIL'
            ? `the next step "${graph.steps.get(next)!.name}" sends an email (once)`
            : 'the next step sends no email',
        ),
      };
    }
    case 'RETRY_STEP': {
      const held = heldByLiveWorker(x, now);
      if (!claimMayMove(ACTION_CLAIMS.RETRY_STEP, x.status, row?.status ?? null) || held) {
        if (held) return refuse(`a worker holds "${step?.name}" right now (lease until ${row?.leaseExpiresAt?.toISOString()}); wait for it`);
        if (claimMayMove(ACTION_CLAIMS.RETRY_STEP, x.status, null)) {
          return refuse(`"${step?.name ?? 'this step'}" is ${row?.status} and cannot be run again`);
        }
        return refuse(`only a FAILED execution or one whose step no worker holds can be retried (it is ${x.status})`);
      }
      if (reactivates(ACTION_CLAIMS.RETRY_STEP, x.status, 'RUNNING') && x.activeExecutionId) {
        return refuseActive(x, 'retrying');
      }
      const email = step?.type === 'SEND_EMAIL';
      return {
        allowed: true,
        refusal: null,
        change: `run "${step?.name}" again as attempt ${(row?.attempt ?? 0) + 1}${x.status === 'FAILED' ? '; the execution becomes RUNNING' : ''}`,
        branch: null,
        nextStep: summary(graph, step?.id ?? null),
        sideEffect: email
          ? existing
            ? noEmail(`this step's email already exists (${existing.status}${existing.sentAt ? `, sent ${existing.sentAt.toISOString()}` : ''}); it will NOT be sent again`, existing)
            : { emailMayBeSent: true, existingMessage: null, note: 'no email was queued for this step yet: retrying sends it (once)' }
          : noEmail('this step sends no email'),
      };
    }
    case 'SKIP_STEP': {
      if (!step || !PLAIN_NEXT_TYPES.includes(step.type)) {
        return refuse(`"${step?.name ?? 'this step'}" branches (${step?.type}); use FORCE_TIMEOUT or DELIVER_EVENT for waits`);
      }
      // WAITING only on a DELAY not yet resolved (the claim checks the same).
      const waitingOk = x.status !== 'WAITING' || (step.type === 'DELAY' && row?.status === 'WAITING' && !row.resolvedBy);
      const held = heldByLiveWorker(x, now);
      const ok = claimMayMove(ACTION_CLAIMS.SKIP_STEP, x.status, row?.status ?? null) && waitingOk && !held;
      if (!ok) return refuse(`"${step.name}" cannot be skipped while the execution is ${x.status}${held ? ' and a worker holds it' : row && x.status !== 'WAITING' ? ` and its step is ${row.status}` : ''}`);
      const next = nextStepId(graph, step.id, null);
      if (reactivates(ACTION_CLAIMS.SKIP_STEP, x.status, next ? 'RUNNING' : 'COMPLETED') && x.activeExecutionId) {
        return refuseActive(x, 'skipping to the next step');
      }
      return {
        allowed: true,
        refusal: null,
        change: `mark "${step.name}" SKIPPED and move to ${next ? `"${graph.steps.get(next)!.name}"` : 'the end (the execution completes)'}`,
        branch: null,
        nextStep: summary(graph, next),
        sideEffect:
          step.type === 'SEND_EMAIL'
            ? noEmail(existing ? `its email already exists (${existing.status}) and stays as it is` : 'its email will not be sent', existing)
            : noEmail('nothing is sent by skipping'),
      };
    }
    case 'CANCEL': {
      if (!claimMayMove(ACTION_CLAIMS.CANCEL, x.status, row?.status ?? null)) return refuse(`the execution already ended (${x.status})`);
      return {
        allowed: true,
        refusal: null,
        change: `cancel the execution at "${step?.name ?? '—'}"; it will take no further step${heldByLiveWorker(x, now) ? ' (a worker is running this step now: its result will be discarded)' : ''}`,
        branch: null,
        nextStep: null,
        sideEffect: noEmail('no further email is sent', existing),
      };
    }
  }
  return refuse(`unknown action ${action}`);
}

// ---------------------------------------------------------------------------
// Preview and apply

export interface RepairRequest {
  projectId: string;
  action: RepairAction;
  executionId?: string | null;
  eventId?: string | null;
}

export interface RepairOptions {
  graceSeconds: number;
}

async function loadTarget(
  db: DbTx,
  req: RepairRequest,
  opts: RepairOptions,
): Promise<{ target: ExecutionSnapshot | EventSnapshot; graph: WorkflowGraph | null }> {
  if (req.action === 'REDRIVE_EVENT') {
    if (!req.eventId) throw new RepairNotFound('REDRIVE_EVENT needs the eventId of a tracked event');
    const event = await loadEvent(db, req.projectId, req.eventId);
    if (!event) throw new RepairNotFound('event not found');
    return { target: event, graph: null };
  }
  if (!req.executionId) throw new RepairNotFound(`${req.action} needs an executionId`);
  const execution = await loadExecution(db, req.projectId, req.executionId, opts.graceSeconds);
  if (!execution) throw new RepairNotFound('execution not found');
  if (req.action === 'DELIVER_EVENT' && req.eventId) {
    // The event delivered must be one of this contact's, in this project: neither the
    // preview nor the action may reveal or use another's.
    const [event] = await db.$queryRaw<{ id: string }[]>`
      SELECT id FROM "Event"
       WHERE id = ${req.eventId}::uuid AND "projectId" = ${req.projectId}::uuid AND "contactId" = ${execution.contactId}::uuid`;
    if (!event) throw new RepairNotFound('event not found for this contact');
  }
  return { target: execution, graph: await loadWorkflowGraph(db, execution.workflowId) };
}

export async function previewRepair(db: DbTx, req: RepairRequest, opts: RepairOptions): Promise<Preview> {
  const { target, graph } = await loadTarget(db, req, opts);
  return {
    action: req.action,
    expectedVersion: target.version,
    expectedStepExecutionId: target.kind === 'execution' ? (target.stepRow?.id ?? null) : null,
    target,
    plan: planAction(req.action, target, graph),
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
  const target = await loadExecution(db, projectId, executionId, opts.graceSeconds);
  if (!target) throw new RepairNotFound('execution not found');
  const graph = await loadWorkflowGraph(db, target.workflowId);
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

/** Who moved the execution since the operator looked: from the wait row, or the audit log. */
export async function whoWon(db: DbTx, projectId: string, current: ExecutionState | null): Promise<Winner> {
  if (!current) return { kind: 'worker', actor: null, action: null, at: null };
  const [audit] = await db.$queryRaw<{ actor: string; action: string; at: Date; version: number | null }[]>`
    SELECT actor, action, at, (after->>'version')::int AS version FROM "AuditEntry"
     WHERE "projectId" = ${projectId}::uuid AND "targetId" = ${current.id} AND outcome = 'APPLIED'
     ORDER BY at DESC LIMIT 1`;
  if (audit && audit.version === current.version) {
    return { kind: 'operator', actor: audit.actor, action: audit.action, at: audit.at };
  }
  const [wait] = await db.$queryRaw<{ resolvedBy: string | null; resolvedAt: Date | null }[]>`
    SELECT "resolvedBy"::text AS "resolvedBy", "resolvedAt" FROM "StepExecution"
     WHERE "executionId" = ${current.id}::uuid AND "resolvedBy" IS NOT NULL
     ORDER BY "resolvedAt" DESC LIMIT 1`;
  if (wait?.resolvedBy === 'EVENT' || wait?.resolvedBy === 'TIMEOUT') {
    // The latest resolution explains the move only if it is newer than any worker write.
    if (wait.resolvedAt && wait.resolvedAt.getTime() >= current.updatedAt.getTime() - 5_000) {
      return { kind: wait.resolvedBy === 'EVENT' ? 'event' : 'timeout', actor: null, action: null, at: wait.resolvedAt };
    }
  }
  if (wait?.resolvedBy === 'OPERATOR' && audit) return { kind: 'operator', actor: audit.actor, action: audit.action, at: audit.at };
  return { kind: 'worker', actor: null, action: null, at: current.updatedAt };
}

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

/**
 * Apply one repair with the version the operator saw. Losing is normal: the answer says
 * who won and the current state. The change and its audit entry commit together.
 */
export async function applyRepair(
  db: Db,
  req: RepairRequest & {
    actor: string;
    expectedVersion: number;
    reason: string;
    /**
     * The step execution the operator saw (the preview's, or a bulk selection's): the
     * action loses if the execution has moved to another one, even at the same version,
     * and a loser is told what became of this one. Undefined: not checked.
     */
    expectedStepExecutionId?: string | null;
  },
  opts: RepairOptions & { engine?: Partial<EngineContext> },
): Promise<ApplyResult> {
  let afterCommit: ((ctx: EngineContext) => Promise<unknown>) | null = null;
  let result: ApplyResult;
  try {
    result = await db.$transaction(async (tx) => {
      const ctx = createEngineContext(tx, { ...opts.engine, owner: req.actor });
      const { target, graph } = await loadTarget(tx, req, opts);
      const audit = (outcome: AuditInput['outcome'], after: unknown) =>
        writeRepairAudit(tx, {
          projectId: req.projectId,
          actor: req.actor,
          action: req.action,
          targetType: target.kind,
          targetId: target.id,
          reason: req.reason,
          before: stateOf(target),
          after,
          outcome,
        });

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
        const conflict =
          target.kind === 'execution'
            ? await conflictFor(tx, req.projectId, req.action, current, targetedStep)
            : ({
                reason: 'STALE_VERSION',
                currentVersion: target.version,
                status: target.deadAt ? 'DEAD' : target.processedAt ? 'PROCESSED' : 'PENDING',
                winner: { kind: 'worker', actor: null, action: null, at: null },
              } as const);
        await audit('LOST', { conflict });
        return { ok: false, code: 'CONFLICT', conflict } as const;
      }
      const plan = planAction(req.action, target, graph);
      if (!plan.allowed) {
        if (plan.conflict) {
          await audit('REJECTED', { refusal: plan.refusal, conflict: plan.conflict });
          return { ok: false, code: 'ACTIVE_EXECUTION', message: plan.refusal!, conflict: plan.conflict, target } as const;
        }
        await audit('REJECTED', { refusal: plan.refusal });
        return { ok: false, code: 'NOT_ALLOWED', message: plan.refusal!, target } as const;
      }

      const lost = async (current: ExecutionState | null): Promise<ApplyResult> => {
        const conflict = await conflictFor(tx, req.projectId, req.action, current, targetedStep);
        await audit('LOST', { conflict });
        return { ok: false, code: 'CONFLICT', conflict };
      };
      /** An operator claim's loss: to I1 (an execution became active meanwhile), or to whoever moved it. */
      const lostClaim = async (r: Exclude<OperatorClaimResult, { won: true }>): Promise<ApplyResult> => {
        if (!('reason' in r)) return lost(r.current);
        const conflict: ActiveExecutionConflict = { reason: 'ACTIVE_EXECUTION', executionId: r.executionId };
        await audit('LOST', { conflict });
        return {
          ok: false,
          code: 'ACTIVE_EXECUTION',
          message: `the contact now has another active execution of "${target.kind === 'execution' ? target.workflowName : ''}" (${r.executionId}); nothing was changed`,
          conflict,
          target,
        };
      };
      const applied = async (version: number): Promise<ApplyResult> => {
        await audit('APPLIED', { ...plan, version });
        return {
          ok: true,
          action: req.action,
          executionId: target.kind === 'execution' ? target.id : null,
          eventId: target.kind === 'event' ? target.id : null,
          version,
          change: plan.change,
        };
      };

      if (target.kind === 'event') {
        const won = await redriveEvent(tx, { eventId: target.id, expectedAttempts: req.expectedVersion });
        if (!won) return lost(null);
        afterCommit = (c) => dispatchEvent(c, target.id);
        return applied(target.version);
      }

      const x = target;
      const step = x.step!;
      switch (req.action) {
        case 'RESUME_CONTINUATION': {
          const r = await continueAfterWait(
            ctx,
            { executionId: x.id, version: x.version, stepExecutionId: x.stepRow!.id, stepId: step.id, workflowId: x.workflowId, branch: x.stepRow!.resolvedBranch },
            await resumeContext(tx, x.id),
          );
          if (!r.won) return lost(await readExecutionState(tx, x.id));
          afterCommit = () => notifyWorkers(db);
          return applied(r.version!);
        }
        case 'FORCE_TIMEOUT':
        case 'DELIVER_EVENT': {
          let patch: Record<string, unknown> = {};
          if (req.action === 'DELIVER_EVENT' && req.eventId) {
            const [ev] = await tx.$queryRaw<{ name: string; data: unknown; createdAt: Date }[]>`
              SELECT name, data, "createdAt" FROM "Event"
               WHERE id = ${req.eventId}::uuid AND "projectId" = ${req.projectId}::uuid AND "contactId" = ${x.contactId}::uuid`;
            if (!ev) throw new RepairNotFound('event not found for this contact');
            patch = eventContextPatch(ev);
          }
          const claimed = await claimWait(tx, {
            stepExecutionId: x.stepRow!.id,
            resolvedBy: 'OPERATOR',
            branch: plan.branch,
            eventId: req.action === 'DELIVER_EVENT' ? (req.eventId ?? null) : null,
            expectedVersion: req.expectedVersion,
          });
          if (!claimed.won) return lost(claimed.current?.execution ?? (await readExecutionState(tx, x.id)));
          const r = await continueAfterWait(ctx, claimed.wait, patch);
          if (!r.won) return lost(await readExecutionState(tx, x.id));
          afterCommit = () => notifyWorkers(db);
          return applied(r.version!);
        }
        case 'RETRY_STEP': {
          const r = await retryStep(tx, { executionId: x.id, expectedVersion: req.expectedVersion });
          if (!r.won) return lostClaim(r);
          afterCommit = () => notifyWorkers(db);
          return applied(r.version);
        }
        case 'SKIP_STEP': {
          const r = await skipStep(tx, {
            executionId: x.id,
            expectedVersion: req.expectedVersion,
            stepId: step.id,
            nextStepId: plan.nextStep?.id ?? step.id,
            status: plan.nextStep ? 'RUNNING' : 'COMPLETED',
            note: `skipped by ${req.actor}: ${req.reason}`,
          });
          if (!r.won) return lostClaim(r);
          afterCommit = () => notifyWorkers(db);
          return applied(r.version);
        }
        case 'CANCEL': {
          const r = await cancelExecution(tx, { executionId: x.id, expectedVersion: req.expectedVersion, reason: `cancelled by ${req.actor}: ${req.reason}` });
          if (!r.won) return lost(r.current);
          return applied(r.version);
        }
      }
      throw new Error(`unhandled action ${req.action}`);
    });
  } catch (error) {
    if (error instanceof RepairNotFound) return { ok: false, code: 'NOT_FOUND', message: error.message };
    throw error;
  }
  const then = afterCommit as ((ctx: EngineContext) => Promise<unknown>) | null;
  if (result.ok && then) {
    await then(createEngineContext(db, { ...opts.engine, owner: req.actor })).catch(() => {
      // Best effort: the workers and the sweeper pick the work up anyway.
    });
  }
  return result;
}

async function resumeContext(db: DbTx, executionId: string): Promise<Record<string, unknown>> {
  const [ev] = await db.$queryRaw<{ name: string; data: unknown; createdAt: Date }[]>`
    SELECT ev.name, ev.data, ev."createdAt"
      FROM "WorkflowExecution" e
      JOIN "StepExecution" s ON s."executionId" = e.id AND s."stepId" = e."currentStepId"
      JOIN "Event" ev ON ev.id = s."resumeEventId"
     WHERE e.id = ${executionId}::uuid`;
  return ev ? eventContextPatch(ev) : {};
}

const WAIT_ACTIONS: readonly RepairAction[] = ['FORCE_TIMEOUT', 'DELIVER_EVENT', 'RESUME_CONTINUATION'];
const WAIT_STEP_TYPES: readonly string[] = ['WAIT_FOR_EVENT', 'DELAY'];

/** The wait a repair targeted: one step execution, or (not known) the execution's latest resolved one. */
type TargetedStep = { stepExecutionId: string | null } | 'LATEST';

/**
 * What the operator lost to. For an action on a wait, the resolution of the wait they
 * targeted (by an event, the timer, or another operator) is the answer — not that of a
 * later (or earlier) wait of the execution. Only when the caller did not say which step
 * execution it saw and the execution has moved past its waits is the latest resolution
 * taken. Otherwise the execution moved on (a worker, or another operator per the audit log).
 */
async function conflictFor(
  db: DbTx,
  projectId: string,
  action: RepairAction,
  current: ExecutionState | null,
  targeted: TargetedStep,
): Promise<Conflict> {
  if (current && WAIT_ACTIONS.includes(action) && (targeted === 'LATEST' || targeted.stepExecutionId)) {
    const [row] =
      targeted === 'LATEST'
        ? await db.$queryRaw<{ resolvedBy: string; resolvedAt: Date | null }[]>`
            SELECT "resolvedBy"::text AS "resolvedBy", "resolvedAt" FROM "StepExecution"
             WHERE "executionId" = ${current.id}::uuid AND "resolvedBy" IS NOT NULL
             ORDER BY "resolvedAt" DESC LIMIT 1`
        : await db.$queryRaw<{ resolvedBy: string; resolvedAt: Date | null }[]>`
            SELECT "resolvedBy"::text AS "resolvedBy", "resolvedAt" FROM "StepExecution"
             WHERE id = ${targeted.stepExecutionId}::uuid AND "executionId" = ${current.id}::uuid AND "resolvedBy" IS NOT NULL`;
    if (row) {
      const winner: Winner =
        row.resolvedBy === 'OPERATOR'
          ? await whoWon(db, projectId, current)
          : { kind: row.resolvedBy === 'EVENT' ? 'event' : 'timeout', actor: null, action: null, at: row.resolvedAt };
      return {
        reason: 'WAIT_RESOLVED',
        resolvedBy: row.resolvedBy,
        at: row.resolvedAt,
        winner,
        status: current.status,
        currentVersion: current.version,
      };
    }
  }
  return {
    reason: 'STALE_VERSION',
    currentVersion: current?.version ?? null,
    status: current?.status ?? null,
    winner: await whoWon(db, projectId, current),
  };
}
