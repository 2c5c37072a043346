// Retention's vocabulary (docs/deploy.md, "Retention"): the two kinds of sweep, what
// each counts, how it paces itself, and what it never removes, in the words the Settings
// page shows. No database here.

export type RetentionKind = 'history' | 'audit';

/** The variable that sets each kind's period, in days (server/env.ts). */
export const RETENTION_VARIABLES: Record<RetentionKind, 'RETENTION_DAYS' | 'AUDIT_RETENTION_DAYS'> = {
  history: 'RETENTION_DAYS',
  audit: 'AUDIT_RETENTION_DAYS',
};

/** Rows a history sweep removed, by kind of row. */
export interface HistoryRemoved {
  executions: number;
  executionsReduced: number;
  steps: number;
  emails: number;
  events: number;
  webhookMessages: number;
  webhookAttempts: number;
}

export interface AuditRemoved {
  auditEntries: number;
}

export type Removed = Partial<HistoryRemoved & AuditRemoved>;

export const NOTHING_REMOVED: Record<RetentionKind, Removed> = {
  history: { executions: 0, executionsReduced: 0, steps: 0, emails: 0, events: 0, webhookMessages: 0, webhookAttempts: 0 },
  audit: { auditEntries: 0 },
};

export function addRemoved(into: Removed, more: Removed): void {
  for (const [key, n] of Object.entries(more) as [keyof Removed, number][]) into[key] = (into[key] ?? 0) + n;
}

export const total = (r: Removed) => Object.values(r).reduce((a: number, n) => a + (n ?? 0), 0);

/** How a sweep paces itself and how often one starts. */
export interface SweepTiming {
  /** Executions (and their step rows and emails) looked at per batch. */
  executionBatch: number;
  /** Events, webhook messages or audit entries looked at per batch. */
  rowBatch: number;
  /**
   * The pause after each batch, as a share of the time the batch took (at least
   * minPauseMs): 1 keeps a sweep to about half of one connection's time, so the workers'
   * statements never queue behind a stream of deletes.
   */
  pauseRatio: number;
  minPauseMs: number;
  /** A sweep of a kind starts at most this often (from the end of the last one). */
  everyMs: number;
  /** How often each worker asks whether a sweep is due (one UPDATE of a two-row table). */
  checkEveryMs: number;
  /** A sweep whose worker has not reported for this long is taken over by another. */
  staleAfterSeconds: number;
}

export const DEFAULT_TIMING: SweepTiming = {
  executionBatch: 500,
  rowBatch: 1000,
  pauseRatio: 1,
  minPauseMs: 20,
  everyMs: 60 * 60_000,
  checkEveryMs: 60_000,
  staleAfterSeconds: 120,
};

/** What a sweep never removes, whatever its age (the Settings page lists it; docs/deploy.md explains it). */
export const NEVER_REMOVED: readonly string[] = [
  'Running and waiting executions, and failed ones not yet repaired (a FAILED execution stays until an operator retries, skips or cancels it)',
  'Finished executions the Stuck page lists (an email that failed or whose fate is unknown), and those with an email still queued or being sent',
  'The row of an execution enrolled once only (its workflow does not allow re-entry), which keeps its contact from entering again: only its history goes',
  'Events not yet processed or dead-lettered, events a kept step names, and events a wait may still take',
  'Webhook messages still pending delivery',
  'Audit entries about an execution, an email or an event that is still kept',
];
