import { StepType, WaitResolver } from '../generated/prisma/enums';
import { processSingleton } from '../process-registry';

// What the engine counts as it works, for /metrics (registry.ts reads these at each
// scrape): plain numbers in one object per process (server/process-registry.ts), so that
// counting on a hot path (a claimed step, a lost claim) is one property increment, with no
// label hashing and no allocation, whichever copy of server/ counts. Labels are fixed sets
// (step types, claim names, outcomes): never an id, a contact or an email.

/** How a claimed step's run was recorded (the claim that recorded it won). */
export const STEP_OUTCOMES = ['advanced', 'parked', 'exited', 'failed'] as const;
export type StepOutcomeLabel = (typeof STEP_OUTCOMES)[number];

/** The claims that answer Lost (server/engine/claims/): a compare-and-swap someone else won. */
export const LOSABLE_CLAIMS = [
  'claimStep',
  'advanceExecutions',
  'parkExecution',
  'failStep',
  'claimWait',
  'advanceFromWaits',
  'migrateExecution',
  'cancelExecution',
  'retryStep',
  'skipStep',
  'markMessageSent',
  'requeueMessage',
  'abandonMessage',
] as const;
export type LosableClaim = (typeof LOSABLE_CLAIMS)[number];

/** What happened to an email: queued by its step, then the sender's or an operator's outcome. */
export const MESSAGE_OUTCOMES = ['queued', 'sent', 'failed', 'unconfirmed', 'late', 'marked_sent', 'requeued', 'abandoned'] as const;
export type MessageOutcome = (typeof MESSAGE_OUTCOMES)[number];

export const STEP_TYPES = Object.values(StepType);
export const WAIT_RESOLVERS = Object.values(WaitResolver);

export interface EngineCounts {
  stepsClaimed: Record<StepType, number>;
  stepsCompleted: Record<StepType, Record<StepOutcomeLabel, number>>;
  claimsLost: Record<LosableClaim, number>;
  waitsResolved: Record<WaitResolver, number>;
  events: { accepted: number; processed: number; dead: number };
  messages: Record<MessageOutcome, number>;
}

const zeroes = <K extends string>(keys: readonly K[]): Record<K, number> => Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>;

/** This process's counts since it started. */
export const counts: EngineCounts = processSingleton('metrics.counts', () => ({
  stepsClaimed: zeroes(STEP_TYPES),
  stepsCompleted: Object.fromEntries(STEP_TYPES.map((t) => [t, zeroes(STEP_OUTCOMES)])) as EngineCounts['stepsCompleted'],
  claimsLost: zeroes(LOSABLE_CLAIMS),
  waitsResolved: zeroes(WAIT_RESOLVERS),
  events: { accepted: 0, processed: 0, dead: 0 },
  messages: zeroes(MESSAGE_OUTCOMES),
}));

export function countStepClaimed(type: StepType): void {
  counts.stepsClaimed[type]++;
}

export function countStepCompleted(type: StepType, outcome: StepOutcomeLabel): void {
  counts.stepsCompleted[type][outcome]++;
}

export function countClaimLost(claim: LosableClaim): void {
  counts.claimsLost[claim]++;
}

export function countWaitsResolved(by: WaitResolver, n = 1): void {
  counts.waitsResolved[by] += n;
}

export function countEvents(what: keyof EngineCounts['events'], n = 1): void {
  counts.events[what] += n;
}

export function countMessages(outcome: MessageOutcome, n = 1): void {
  counts.messages[outcome] += n;
}
