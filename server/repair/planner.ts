import { claimMayMove, reactivates, type ClaimName } from '../engine/transitions';
import { nextStepId, type WorkflowGraph } from '../engine/workflow-graph';
import type { EventSnapshot, ExecutionSnapshot, InWindowEvent, MessageSummary, StepSummary } from './snapshot';

// Planning a repair, pure (no database: test/repair/planner.test.ts runs it on snapshots):
// is the action allowed in the target's state, and what will it change, in an operator's
// words? Preview, the console's repair panel and apply all ask the same planner, so the
// panel never offers what apply would refuse.

export const REPAIR_ACTIONS = [
  'RESUME_CONTINUATION',
  'FORCE_TIMEOUT',
  'DELIVER_EVENT',
  'RETRY_STEP',
  'SKIP_STEP',
  'CANCEL',
  'REDRIVE_EVENT',
  'MIGRATE',
] as const;
export type RepairAction = (typeof REPAIR_ACTIONS)[number];

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
  /** FORCE_TIMEOUT and DELIVER_EVENT: who the wait will be recorded as resolved by. */
  resolvedBy?: 'EVENT' | 'OPERATOR';
  /** FORCE_TIMEOUT: the event accepted inside the wait's window that resumes it by EVENT instead (the timer's rule). */
  resumeEvent?: InWindowEvent | null;
  /** FORCE_TIMEOUT with ignoreInWindowEvents: the in-window events the operator chose to time out past. */
  ignoredEvents?: InWindowEvent[];
  /** MIGRATE: the move, also on a refusal when the refusal is about what the move would do (a re-send). */
  migration?: MigrationPlan;
  /** MIGRATE refused: why, as a code (the bulk preview groups by it). */
  migrationRefusal?: MigrationRefusal;
}

/** Why MIGRATE refuses an execution, as the bulk preview groups them. */
export type MigrationRefusal = 'NOT_ACTIVE' | 'NO_STEP' | 'NO_VERSION' | 'NOT_LATER' | 'WORKER_HOLDS' | 'WAIT_RESOLVED' | 'STEP_GONE' | 'MAPPED_STEP_GONE' | 'TRIGGER' | 'RESEND';

/** What MIGRATE would do to one execution: the preview's groups are made of these. */
export interface MigrationPlan {
  fromVersion: number;
  toVersion: number;
  fromStep: StepSummary;
  toStep: StepSummary;
  /** An unresolved wait moved to a wait of the same kind keeps its row: its window start, and the new step's timeout. */
  keepsWait: boolean;
  /** The wait's deadline now and after the move (keepsWait only). */
  deadline: { before: Date | null; after: Date | null } | null;
  /** The event window's start the wait keeps (WAIT_FOR_EVENT, keepsWait): events accepted since then still resume it. */
  lookBackFrom: Date | null;
  /** SEND_EMAIL steps reachable from the new step that this execution already sent (by key). */
  resends: string[];
}

/** What the operator chose beside the action. */
export interface RepairChoices {
  /**
   * FORCE_TIMEOUT: take the TIMEOUT branch even though an event accepted inside the wait's
   * window would resume it by EVENT. The timer never does this; an operator may, audited.
   */
  ignoreInWindowEvents?: boolean;
  /** MIGRATE: the version to move to (default the latest), step keys mapped, re-sends accepted (plan-migrate.ts). */
  toVersion?: number;
  stepMap?: Record<string, string>;
  allowResend?: boolean;
}

/** A repair that would make a second active execution of a (workflow, contact) (I1). */
export type ActiveExecutionConflict = {
  reason: 'ACTIVE_EXECUTION';
  /** The execution that is active. */
  executionId: string;
};

/** An action's plan for an execution. */
export type ExecutionPlanner = (execution: ExecutionSnapshot, graph: WorkflowGraph, now: Date, choices?: RepairChoices) => Plan;
/** An action's plan for a tracked event. */
export type EventPlanner = (event: EventSnapshot, now: Date) => Plan;

/**
 * The claim behind each execution action whose "may it?" is the transitions table's
 * (server/engine/transitions.ts): the planner asks the table the claim's SQL reads.
 */
export const ACTION_CLAIMS = {
  RETRY_STEP: 'retryStep',
  SKIP_STEP: 'skipStep',
  CANCEL: 'cancelExecution',
} as const satisfies Partial<Record<RepairAction, ClaimName>>;

const PLAIN_NEXT_TYPES = ['TRIGGER', 'SEND_EMAIL', 'DELAY', 'UPDATE_CONTACT'];

/** The execution's current step is held by a worker whose lease has not run out. */
export function heldByLiveWorker(execution: ExecutionSnapshot, now: Date): boolean {
  return execution.stepRow?.status === 'RUNNING' && !!execution.stepRow.leaseExpiresAt && execution.stepRow.leaseExpiresAt >= now;
}

function summary(graph: WorkflowGraph, stepId: string | null): StepSummary | null {
  if (!stepId) return null;
  const s = graph.steps.get(stepId);
  return s ? { id: s.id, key: s.key, name: s.name, type: s.type } : null;
}

const noEmail = (note: string, existing: MessageSummary | null = null) => ({ emailMayBeSent: false, existingMessage: existing, note });

/** A refusal: nothing changes, nothing is sent. */
export function refuse(refusal: string, conflict: ActiveExecutionConflict | null = null): Plan {
  return {
    allowed: false,
    refusal,
    change: 'nothing',
    branch: null,
    nextStep: null,
    sideEffect: noEmail('nothing is sent'),
    conflict,
  };
}

/** I1: the execution would become active beside another active one of its contact. */
function refuseActive(execution: ExecutionSnapshot, doing: string): Plan {
  return refuse(
    `the contact has another active execution of "${execution.workflowName}" (${execution.activeExecutionId}); ${doing} would make a second one. Let that one finish or cancel it first`,
    { reason: 'ACTIVE_EXECUTION', executionId: execution.activeExecutionId! },
  );
}

export const planRedriveEvent: EventPlanner = (event, now) => {
  if (event.processedAt) return refuse('the event was already processed');
  if (event.leaseExpiresAt && event.leaseExpiresAt >= now) return refuse('a dispatcher is working on this event right now');
  return {
    allowed: true,
    refusal: null,
    change: event.deadAt
      ? `bring the dead-lettered event "${event.name}" back and dispatch it now (attempt ${event.version + 1})`
      : `dispatch the pending event "${event.name}" now (attempt ${event.version + 1})`,
    branch: null,
    nextStep: null,
    sideEffect: {
      emailMayBeSent: true,
      existingMessage: null,
      note: 'dispatching enrolls the contact into workflows triggered by this event and resumes its waits for it; enrollments already made by this event are not repeated',
    },
  };
};

export const planResumeContinuation: ExecutionPlanner = (execution, graph) => {
  const { step, stepRow: row } = execution;
  if (execution.status !== 'WAITING' || row?.status !== 'WAITING' || !row.resolvedBy) {
    if (row?.resolvedBy && row.status === 'COMPLETED') {
      return refuse(`the continuation already ran: the wait was resolved by ${row.resolvedBy} and the execution moved on; nothing is replayed`);
    }
    return refuse(`no resolved wait to continue: the execution is ${execution.status}${step ? ` at "${step.name}"` : ''}`);
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
};

/** A time as operators read it in a plan: "2026-12-06 10:00:00 UTC". */
export const when = (d: Date) => d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');

/** "the "purchase" event accepted 2026-12-06 10:00:00 UTC", and how many more. */
function describeEvents(events: InWindowEvent[]): string {
  const [first] = events;
  const more = events.length > 1 ? ` (and ${events.length - 1}${events.length >= 5 ? '+' : ''} more)` : '';
  return `the "${first!.name}" event accepted ${when(first!.createdAt)}${more}`;
}

/**
 * FORCE_TIMEOUT and DELIVER_EVENT: an operator resolves an unresolved wait along `branch`.
 * FORCE_TIMEOUT follows the timer's rule (event time decides): if an event accepted
 * inside the wait's window has not been consumed (its dispatch is late, dead or pending),
 * that event resumes the wait by EVENT, as the timer would at the deadline; timing out
 * past it is the operator's explicit, audited choice (ignoreInWindowEvents).
 */
export function planWaitResolution(branch: 'TIMEOUT' | 'EVENT'): ExecutionPlanner {
  const validTypes = branch === 'TIMEOUT' ? ['WAIT_FOR_EVENT', 'DELAY'] : ['WAIT_FOR_EVENT'];
  return (execution, graph, _now, choices = {}) => {
    const { step, stepRow: row } = execution;
    if (execution.status !== 'WAITING' || !step || !validTypes.includes(step.type) || row?.status !== 'WAITING') {
      return refuse(`the execution is not waiting on a ${validTypes.join(' or ')} step (it is ${execution.status}${step ? ` at "${step.name}"` : ''})`);
    }
    if (row.resolvedBy) return refuse(`the wait was already resolved by ${row.resolvedBy}; use RESUME_CONTINUATION`);
    const inWindow = branch === 'TIMEOUT' && step.type === 'WAIT_FOR_EVENT' ? execution.inWindowEvents : [];
    const resumeEvent = inWindow.length > 0 && !choices.ignoreInWindowEvents ? inWindow[0]! : null;
    const effective = step.type === 'DELAY' ? null : resumeEvent ? 'EVENT' : branch;
    const next = nextStepId(graph, step.id, effective);
    const to = next ? `"${graph.steps.get(next)!.name}"` : 'the end (the execution completes)';
    const change = resumeEvent
      ? `resolve "${step.name}" by ${describeEvents(inWindow)} inside its window, as the timer would, and move along the EVENT branch to ${to}`
      : inWindow.length > 0
        ? `resolve "${step.name}" as TIMEOUT (by an operator), ignoring ${describeEvents(inWindow)} inside its window, and move to ${to}`
        : `resolve "${step.name}" as ${effective ?? 'elapsed'} (by an operator) and move to ${to}`;
    return {
      allowed: true,
      refusal: null,
      change,
      branch: effective,
      nextStep: summary(graph, next),
      sideEffect: noEmail(
        next && graph.steps.get(next)!.type === 'SEND_EMAIL'
          ? `the next step "${graph.steps.get(next)!.name}" sends an email (once)`
          : 'the next step sends no email',
      ),
      resolvedBy: resumeEvent ? 'EVENT' : 'OPERATOR',
      ...(branch === 'TIMEOUT' ? { resumeEvent, ...(inWindow.length > 0 && !resumeEvent ? { ignoredEvents: inWindow } : {}) } : {}),
    };
  };
}

export const planRetryStep: ExecutionPlanner = (execution, graph, now) => {
  const { step, stepRow: row, message: existing } = execution;
  const held = heldByLiveWorker(execution, now);
  if (!claimMayMove(ACTION_CLAIMS.RETRY_STEP, execution.status, row?.status ?? null) || held) {
    if (held) return refuse(`a worker holds "${step?.name}" right now (lease until ${row?.leaseExpiresAt?.toISOString()}); wait for it`);
    if (claimMayMove(ACTION_CLAIMS.RETRY_STEP, execution.status, null)) {
      return refuse(`"${step?.name ?? 'this step'}" is ${row?.status} and cannot be run again`);
    }
    return refuse(`only a FAILED execution or one whose step no worker holds can be retried (it is ${execution.status})`);
  }
  if (reactivates(ACTION_CLAIMS.RETRY_STEP, execution.status, 'RUNNING') && execution.activeExecutionId) {
    return refuseActive(execution, 'retrying');
  }
  const email = step?.type === 'SEND_EMAIL';
  return {
    allowed: true,
    refusal: null,
    change: `run "${step?.name}" again as attempt ${(row?.attempt ?? 0) + 1}${execution.status === 'FAILED' ? '; the execution becomes RUNNING' : ''}`,
    branch: null,
    nextStep: summary(graph, step?.id ?? null),
    sideEffect: email
      ? existing
        ? noEmail(`this step's email already exists (${existing.status}${existing.sentAt ? `, sent ${existing.sentAt.toISOString()}` : ''}); it will NOT be sent again`, existing)
        : { emailMayBeSent: true, existingMessage: null, note: 'no email was queued for this step yet: retrying sends it (once)' }
      : noEmail('this step sends no email'),
  };
};

export const planSkipStep: ExecutionPlanner = (execution, graph, now) => {
  const { step, stepRow: row, message: existing } = execution;
  if (!step || !PLAIN_NEXT_TYPES.includes(step.type)) {
    return refuse(`"${step?.name ?? 'this step'}" branches (${step?.type}); use FORCE_TIMEOUT or DELIVER_EVENT for waits`);
  }
  // WAITING only on a DELAY not yet resolved (the claim checks the same).
  const waitingOk = execution.status !== 'WAITING' || (step.type === 'DELAY' && row?.status === 'WAITING' && !row.resolvedBy);
  const held = heldByLiveWorker(execution, now);
  const ok = claimMayMove(ACTION_CLAIMS.SKIP_STEP, execution.status, row?.status ?? null) && waitingOk && !held;
  if (!ok) return refuse(`"${step.name}" cannot be skipped while the execution is ${execution.status}${held ? ' and a worker holds it' : row && execution.status !== 'WAITING' ? ` and its step is ${row.status}` : ''}`);
  const next = nextStepId(graph, step.id, null);
  if (reactivates(ACTION_CLAIMS.SKIP_STEP, execution.status, next ? 'RUNNING' : 'COMPLETED') && execution.activeExecutionId) {
    return refuseActive(execution, 'skipping to the next step');
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
};

export const planCancel: ExecutionPlanner = (execution, _graph, now) => {
  const { step, stepRow: row, message: existing } = execution;
  if (!claimMayMove(ACTION_CLAIMS.CANCEL, execution.status, row?.status ?? null)) return refuse(`the execution already ended (${execution.status})`);
  return {
    allowed: true,
    refusal: null,
    change: `cancel the execution at "${step?.name ?? '—'}"; it will take no further step${heldByLiveWorker(execution, now) ? ' (a worker is running this step now: its result will be discarded)' : ''}`,
    branch: null,
    nextStep: null,
    sideEffect: noEmail('no further email is sent', existing),
  };
};
