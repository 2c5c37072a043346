import { isActiveStatus } from '../common/execution-status';
import type { ExecutionStatus, MessageStatus, StepStatus } from '../generated/prisma/enums';

// The engine's state machine, written down once (docs/state-machine.md): for each
// claim of server/engine/claims/, the statuses it moves rows from and to. The operator
// claims' SQL (cancelExecution, retryStep, skipStep) reads its from-lists from here, and
// so does the repair planner (server/repair/planner.ts), so "may this be retried /
// skipped / cancelled?" has one answer. test/engine/transitions.test.ts fails when an
// exported claim has no entry.
//
// This module is pure data (no database, no server imports): the console may read it.

/** A step that has no step-execution row yet (never claimed). */
export const NO_ROW = 'NONE';
export type StepRowState = StepStatus | typeof NO_ROW;

/** An event's dispatch state, derived from its outbox columns. */
export type EventState = 'PENDING' | 'LEASED' | 'PROCESSED' | 'DEAD';
/** A row that does not exist yet (an insert moves from here). */
export type Absent = 'NONE';

export interface Moves<S extends string> {
  from: readonly S[];
  to: readonly S[];
}

export interface Transition {
  /** What the claim does, in a line. */
  does: string;
  /** The execution row's status. Absent: the claim does not touch an execution's status. */
  execution?: Moves<ExecutionStatus | Absent>;
  /**
   * The current step's step-execution row. With `gate: true` the claim changes nothing
   * unless the row is in `from` (NONE: no row yet); otherwise it moves the rows in `from`
   * and leaves any other row as it is.
   */
  step?: Moves<StepRowState> & { gate: boolean };
  event?: Moves<EventState | Absent>;
  message?: Moves<MessageStatus | Absent>;
  /** Conditions beyond the statuses, in words (the SQL and the planner both check them). */
  also?: string;
}


const OPEN_STEP: readonly StepRowState[] = ['PENDING', 'RUNNING', 'WAITING', 'FAILED'];

export const TRANSITIONS = {
  // Enrollment
  insertExecutions: {
    does: 'enroll: a new execution at the first step, unless I1, I3 or once-only re-entry forbid it',
    execution: { from: ['NONE'], to: ['RUNNING'] },
  },

  // Step claims
  claimReadySteps: {
    does: 'a worker claims due executions and creates or re-claims their step rows',
    execution: { from: ['RUNNING'], to: ['RUNNING'] },
    step: { from: ['NONE', 'PENDING', 'FAILED', 'RUNNING'], to: ['RUNNING'], gate: false },
    also: 'a RUNNING step row only once its lease ran out',
  },
  claimStep: {
    does: 'claim the step of one execution at the version the caller saw',
    execution: { from: ['RUNNING'], to: ['RUNNING'] },
    step: { from: ['NONE', 'PENDING', 'FAILED', 'RUNNING'], to: ['RUNNING'], gate: false },
    also: 'a RUNNING step row only once its lease ran out',
  },
  renewLease: {
    does: 'extend a live lease held with the same claim token',
    execution: { from: ['RUNNING'], to: ['RUNNING'] },
    step: { from: ['RUNNING'], to: ['RUNNING'], gate: true },
    also: 'the lease has not run out',
  },

  // Completing a claimed step
  advanceExecutions: {
    does: 'complete claimed steps (a batch, each row fenced on its own) and move each to its next step (or end); a SEND_EMAIL queues its message',
    execution: { from: ['RUNNING'], to: ['RUNNING', 'COMPLETED', 'EXITED'] },
    step: { from: ['RUNNING'], to: ['COMPLETED'], gate: true },
    message: { from: ['NONE'], to: ['QUEUED'] },
  },
  parkExecution: {
    does: 'park a claimed DELAY or WAIT_FOR_EVENT (the row is the timer); a wait may park already resolved by an event it looks back for',
    execution: { from: ['RUNNING'], to: ['WAITING'] },
    step: { from: ['RUNNING'], to: ['WAITING'], gate: true },
  },
  failStep: {
    does: 'record a failed attempt: retry after a backoff, or fail the execution',
    execution: { from: ['RUNNING'], to: ['RUNNING', 'FAILED'] },
    step: { from: ['RUNNING'], to: ['FAILED'], gate: true },
  },
  failUnclaimable: {
    does: 'fail an execution whose step row was in no claimable state',
    execution: { from: ['RUNNING'], to: ['FAILED'] },
  },

  // Waits: resolving marks the WAITING row resolved (resolvedBy); statuses stay
  claimWait: {
    does: 'resolve one wait by EVENT, TIMEOUT or an operator (I4)',
    execution: { from: ['WAITING'], to: ['WAITING'] },
    step: { from: ['WAITING'], to: ['WAITING'], gate: true },
    also: 'the wait is unresolved; a TIMEOUT only once dueAt passed',
  },
  lockEventChannel: {
    does: 'take the (contact, event name) channel lock for the transaction; changes no status',
  },
  claimWaitsForEvent: {
    does: "an event's dispatch resolves, by EVENT, every parked wait whose window holds its acceptance time",
    execution: { from: ['WAITING'], to: ['WAITING'] },
    step: { from: ['WAITING'], to: ['WAITING'], gate: true },
    also: 'the wait is unresolved and the event was accepted inside [startedAt, dueAt)',
  },
  lockDueWaits: {
    does: "the timer locks due, unresolved waits and their event channels; changes no status",
  },
  claimDueWaits: {
    does: 'the timer resolves locked due waits: by EVENT when one was accepted in the window, else TIMEOUT',
    execution: { from: ['WAITING'], to: ['WAITING'] },
    step: { from: ['WAITING'], to: ['WAITING'], gate: true },
    also: 'the wait is unresolved and dueAt passed',
  },
  advanceFromWaits: {
    does: 'move past a resolved wait along its branch',
    execution: { from: ['WAITING'], to: ['RUNNING', 'COMPLETED'] },
    step: { from: ['WAITING'], to: ['COMPLETED'], gate: true },
    also: 'the wait is resolved',
  },

  // Tracked events: the outbox
  insertEvent: {
    does: 'accept a tracked event, once per idempotency key',
    event: { from: ['NONE'], to: ['PENDING'] },
  },
  claimEventDispatch: {
    does: "take one pending event's dispatch lease",
    event: { from: ['PENDING'], to: ['LEASED'] },
    also: 'its lease is free (none, or run out)',
  },
  claimDueEvents: {
    does: "the sweeper takes due pending events' dispatch leases",
    event: { from: ['PENDING'], to: ['LEASED'] },
    also: 'due, and the lease is free',
  },
  completeEventDispatch: {
    does: 'mark a dispatched event processed (lease holder only)',
    event: { from: ['LEASED'], to: ['PROCESSED'] },
  },
  failEventDispatch: {
    does: 'back a failed dispatch off, or dead-letter it after its last attempt (lease holder only)',
    event: { from: ['LEASED'], to: ['PENDING', 'DEAD'] },
  },

  // The email outbox
  claimQueuedMessages: {
    does: 'a sender takes queued messages',
    message: { from: ['QUEUED'], to: ['SENDING'] },
  },
  renewMessageLeases: {
    does: 'a sender keeps the leases of the messages it is delivering while the transport works',
    message: { from: ['SENDING'], to: ['SENDING'] },
    also: 'only its own live lease, at the version of its claim',
  },
  recordDelivery: {
    does: "record a delivery's outcome (the sender that claimed it only)",
    message: { from: ['SENDING'], to: ['SENT', 'FAILED'] },
    also: 'fenced by the version of its claim',
  },
  recordDeliveries: {
    does: "record the outcomes of a sender's batch in one statement (the sender that claimed each only)",
    message: { from: ['SENDING'], to: ['SENT', 'FAILED'] },
    also: 'each fenced by the version of its claim, as recordDelivery',
  },
  markMessageSent: {
    does: 'an operator who checked the provider records an unconfirmed or failed email as sent (MARK_SENT)',
    message: { from: ['SENDING', 'FAILED'], to: ['SENT'] },
    also: 'a SENDING message only once its sender lease ran out; at the message version the operator saw',
  },
  requeueMessage: {
    does: 'an operator resends an unconfirmed or failed email: back to QUEUED, the same row (RESEND)',
    message: { from: ['SENDING', 'FAILED'], to: ['QUEUED'] },
    also: 'a SENDING message only once its sender lease ran out; at the message version the operator saw',
  },
  abandonMessage: {
    does: 'an operator gives up on an unconfirmed or failed email (GIVE_UP)',
    message: { from: ['SENDING', 'FAILED'], to: ['ABANDONED'] },
    also: 'a SENDING message only once its sender lease ran out; at the message version the operator saw',
  },

  // Operators' claims (server/repair)
  cancelExecution: {
    does: 'an operator cancels the execution; its open step row is skipped',
    execution: { from: ['RUNNING', 'WAITING', 'FAILED'], to: ['CANCELLED'] },
    step: { from: OPEN_STEP, to: ['SKIPPED'], gate: false },
  },
  retryStep: {
    does: 'an operator gives the current step a new attempt: it becomes due now',
    execution: { from: ['RUNNING', 'FAILED'], to: ['RUNNING'] },
    step: { from: ['NONE', 'PENDING', 'FAILED', 'RUNNING'], to: ['PENDING'], gate: true },
    also: 'no live worker holds the step (a RUNNING row only once its lease ran out); no other active execution of the (workflow, contact) (I1)',
  },
  skipStep: {
    does: 'an operator marks the current step SKIPPED and moves along its plain next transition (or ends)',
    execution: { from: ['RUNNING', 'FAILED', 'WAITING'], to: ['RUNNING', 'COMPLETED'] },
    step: { from: ['NONE', 'PENDING', 'FAILED', 'RUNNING', 'WAITING'], to: ['SKIPPED'], gate: true },
    also: 'no live worker holds the step; WAITING only on an unresolved DELAY; moving to RUNNING only with no other active execution of the (workflow, contact) (I1)',
  },
  migrateExecution: {
    does: 'an operator moves an active execution to a later version of its workflow: to the mapped step (RUNNING, due now), or, for an unresolved wait mapped to a wait of the same kind, keeping the wait (docs/versions.md)',
    execution: { from: ['RUNNING', 'WAITING'], to: ['RUNNING', 'WAITING'] },
    step: { from: ['PENDING', 'RUNNING', 'WAITING', 'FAILED'], to: ['SKIPPED', 'WAITING'], gate: false },
    also: 'no live worker holds the step; WAITING only on an unresolved wait; the execution still on the version and step the operator planned from',
  },
  redriveEvent: {
    does: 'an operator sends a dead-lettered or stuck pending event round again',
    event: { from: ['PENDING', 'DEAD'], to: ['PENDING'] },
    also: 'its lease is free',
  },
} as const satisfies Record<string, Transition>;

export type ClaimName = keyof typeof TRANSITIONS;


/** The execution statuses `claim` moves from (the SQL's `status IN (...)` list). */
export function executionFrom(claim: ClaimName): readonly ExecutionStatus[] {
  const t: Transition = TRANSITIONS[claim];
  return (t.execution?.from ?? []).filter((s): s is ExecutionStatus => s !== 'NONE');
}

/** The step-row statuses `claim` requires (gate) or moves, without NONE. */
export function stepFrom(claim: ClaimName): readonly StepStatus[] {
  const t: Transition = TRANSITIONS[claim];
  return (t.step?.from ?? []).filter((s): s is StepStatus => s !== NO_ROW);
}

/** May `claim` act on an execution in this status whose current step row is in this state (null: no row)? */
export function claimMayMove(claim: ClaimName, executionStatus: string, stepRowStatus: string | null): boolean {
  const t: Transition = TRANSITIONS[claim];
  if (!t.execution || !(t.execution.from as readonly string[]).includes(executionStatus)) return false;
  if (t.step?.gate && !(t.step.from as readonly string[]).includes(stepRowStatus ?? NO_ROW)) return false;
  return true;
}

/**
 * Would `claim`, moving an execution out of `executionStatus` into `to`, make it active
 * again (so I1 may forbid it while a sibling execution is active)?
 */
export function reactivates(claim: ClaimName, executionStatus: string, to: ExecutionStatus): boolean {
  const t: Transition = TRANSITIONS[claim];
  return !!t.execution && !isActiveStatus(executionStatus) && isActiveStatus(to) && (t.execution.to as readonly string[]).includes(to);
}
