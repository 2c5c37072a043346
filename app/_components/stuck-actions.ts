import type { StuckReason } from '@/server/common/stuck-reasons';

// Which bulk repairs a stuck group is offered, by its reason, in an operator's words. The
// planner (server/repair/planner.ts) still decides row by row and refuses, with why, a row
// the action does not fit; this list only keeps actions that can never fit off the menu.

export type BulkActionName =
  | 'RESUME_CONTINUATION'
  | 'FORCE_TIMEOUT'
  | 'RETRY_STEP'
  | 'SKIP_STEP'
  | 'CANCEL'
  | 'REDRIVE_EVENT'
  | 'MIGRATE'
  | 'MARK_SENT'
  | 'RESEND'
  | 'GIVE_UP';

export const ACTION_MEANS: Record<BulkActionName, string> = {
  FORCE_TIMEOUT: 'resolve each wait as the timer would: an event accepted inside its window takes the EVENT branch, any other wait its TIMEOUT branch (by an operator)',
  RESUME_CONTINUATION: 'move each past its resolved wait, along the branch it took',
  RETRY_STEP: 'run the step again as a new attempt; an email already queued for it is not sent again',
  SKIP_STEP: 'mark the step skipped and move on to the next one',
  CANCEL: 'cancel each execution: it takes no further step',
  REDRIVE_EVENT: 'bring each event back and dispatch it now: it may enroll contacts and resume waits',
  MIGRATE: 'move each to a later version of its workflow, at the step of the same key (or the one you map it to); a dry run shows each group first',
  MARK_SENT: 'record each email as sent (you checked that the provider has it); nothing is sent',
  RESEND: 'queue each email again: it may send a duplicate',
  GIVE_UP: 'abandon each email: it is never sent and no longer listed',
};

const BY_REASON: Record<StuckReason, BulkActionName[]> = {
  WAIT_OVERDUE: ['FORCE_TIMEOUT', 'CANCEL'],
  LEASE_EXPIRED: ['RETRY_STEP', 'SKIP_STEP', 'CANCEL'],
  MISSING_STEP: ['RETRY_STEP', 'SKIP_STEP', 'CANCEL'],
  CONTINUATION_PENDING: ['RESUME_CONTINUATION', 'CANCEL'],
  EVENT_DEAD: ['REDRIVE_EVENT'],
  EVENT_PENDING: ['REDRIVE_EVENT'],
  FAILED: ['RETRY_STEP', 'SKIP_STEP', 'CANCEL'],
  MESSAGE_UNCONFIRMED: ['MARK_SENT', 'RESEND', 'GIVE_UP'],
  MESSAGE_FAILED: ['RESEND', 'GIVE_UP'],
};

/** Steps that branch cannot be skipped (their branch must be chosen: FORCE_TIMEOUT, DELIVER_EVENT). */
const BRANCHING = ['WAIT_FOR_EVENT', 'CONDITION'];

const skippable = (a: BulkActionName, stepType: string | null) => a !== 'SKIP_STEP' || !stepType || !BRANCHING.includes(stepType);

export function actionsFor(reason: StuckReason, stepType: string | null): BulkActionName[] {
  return BY_REASON[reason].filter((a) => skippable(a, stepType));
}

/** An executions filter's actions: by its one stuck reason if it has one, else any an execution may take. */
export function actionsForExecutions(reason: StuckReason | null, stepType: string | null): BulkActionName[] {
  return reason ? actionsFor(reason, stepType) : EXECUTION_ACTIONS.filter((a) => skippable(a, stepType));
}

/**
 * The stuck reasons whose executions are RUNNING or WAITING with an open wait, or a step
 * no live worker holds: the ones MIGRATE may move (a FAILED execution, a resolved wait or
 * an event never can be; server/repair/plan-migrate.ts).
 */
const MOVABLE_REASONS: readonly StuckReason[] = ['WAIT_OVERDUE', 'LEASE_EXPIRED', 'MISSING_STEP'];

/**
 * The actions offered with MIGRATE added last, when the selection is one workflow's with a
 * later version than its first (and, for a stuck group, a reason whose executions can move).
 */
export function withMigrate(actions: BulkActionName[], latestVersion: number | null | undefined, reason: StuckReason | null = null): BulkActionName[] {
  if (!latestVersion || latestVersion < 2 || (reason && !MOVABLE_REASONS.includes(reason))) return actions;
  return [...actions.filter((a) => a !== 'MIGRATE'), 'MIGRATE'];
}

/**
 * What an executions filter with any mix of statuses and stuck reasons may be repaired
 * with; the planner refuses, row by row with why, a row the chosen action does not fit.
 */
const EXECUTION_ACTIONS: BulkActionName[] = ['FORCE_TIMEOUT', 'RESUME_CONTINUATION', 'RETRY_STEP', 'SKIP_STEP', 'CANCEL'];

/** What a group's rows are, for "this will touch N …" (executions, without a reason). */
export function subjectOf(reason: StuckReason | null, n: number): string {
  const word = reason?.startsWith('EVENT_') ? 'event' : reason?.startsWith('MESSAGE_') ? 'email' : 'execution';
  return `${n.toLocaleString()} ${word}${n === 1 ? '' : 's'}`;
}
