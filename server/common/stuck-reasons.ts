// The stuck reasons and what they mean, with no server dependencies, so the console's
// components can name them too. Their SQL predicates live in server/stuck/predicates.ts.

export const STUCK_REASONS = [
  'WAIT_OVERDUE',
  'LEASE_EXPIRED',
  'MISSING_STEP',
  'CONTINUATION_PENDING',
  'EVENT_DEAD',
  'EVENT_PENDING',
  'FAILED',
  'MESSAGE_UNCONFIRMED',
  'MESSAGE_FAILED',
] as const;
export type StuckReason = (typeof STUCK_REASONS)[number];

export const STUCK_DESCRIPTIONS: Record<StuckReason, string> = {
  WAIT_OVERDUE: 'waiting past its timeout, and no timer has resolved it',
  LEASE_EXPIRED: 'a worker claimed its step and stopped renewing the lease (it died)',
  MISSING_STEP: 'due to run a step, and no worker has picked it up',
  CONTINUATION_PENDING: 'its wait was resolved, but it never moved past the wait',
  EVENT_DEAD: 'a tracked event was dead-lettered after its last dispatch attempt',
  EVENT_PENDING: 'a tracked event was accepted but not yet processed',
  FAILED: 'failed, and its step can be retried or skipped',
  MESSAGE_UNCONFIRMED: 'its email was being sent when the sender stopped renewing its lease (it died, or its provider never answered): nobody knows whether it went out',
  MESSAGE_FAILED: 'sending its email failed, and an email is never resent by itself',
};

/** Reasons whose subject is an event, not an execution. */
export const EVENT_REASONS: readonly StuckReason[] = ['EVENT_DEAD', 'EVENT_PENDING'];

/** Reasons whose subject is an email (a Message row) of an execution. */
export const MESSAGE_REASONS: readonly StuckReason[] = ['MESSAGE_UNCONFIRMED', 'MESSAGE_FAILED'];

/**
 * Reasons running workers clear by themselves (they re-claim expired leases, fire due
 * timers, sweep continuations and pending events): seen past the grace period, they mean
 * no worker is running. The others wait for an operator. (A LEASE_EXPIRED poison step —
 * its lease ran out on every attempt — is left to an operator too.) An email whose fate is
 * unknown or that failed is never retried by the workers: an email is sent at most once,
 * so only a person who checked the provider may send it again.
 */
export const SELF_HEALING: readonly StuckReason[] = ['WAIT_OVERDUE', 'LEASE_EXPIRED', 'MISSING_STEP', 'CONTINUATION_PENDING', 'EVENT_PENDING'];
