import type { StuckItem } from '../stuck/predicates';
import type { WorkflowGraph } from '../engine/workflow-graph';

// A repair's target as the planner reads it and the applier fences on: the execution
// (with its current step, step row, message and stuck reasons) or the tracked event.
// target.ts loads them; planner.ts (pure) plans on them. Their own module, so the two
// need not import each other.

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

/** An event accepted inside the current wait's window and not consumed: the timer would take it. */
export interface InWindowEvent {
  id: string;
  name: string;
  createdAt: Date;
}

export interface ExecutionSnapshot {
  kind: 'execution';
  id: string;
  projectId: string;
  workflowId: string;
  /** The version the execution runs on (docs/versions.md). */
  workflowVersionId: string;
  workflowVersionNumber: number;
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
  /**
   * A WAIT_FOR_EVENT waiting unresolved: the events that resume it by EVENT now (event
   * time decides), earliest first, at most a few. The first one wins a FORCE_TIMEOUT.
   */
  inWindowEvents: InWindowEvent[];
  /** Another active (RUNNING or WAITING) execution of the same workflow and contact (I1), if any. */
  activeExecutionId: string | null;
  /** MIGRATE only (loaded by target.ts when the action is MIGRATE): where it would move. */
  migration?: MigrationContext;
}

/** What MIGRATE plans with beside the execution: the version it would move to, and what it already sent. */
export interface MigrationContext {
  /** The version asked for (the latest when none was named); null: the workflow has no such version. */
  to: { number: number; graph: WorkflowGraph } | null;
  /** Keys of the SEND_EMAIL steps whose email this execution already queued or sent (any version). */
  sentKeys: string[];
  /** The current wait's step row's startedAt: the start of its event window (look-back). */
  waitStartedAt: Date | null;
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
