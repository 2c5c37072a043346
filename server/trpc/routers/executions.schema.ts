import { z } from 'zod';
import { EXECUTION_STATUSES } from '../../common/execution-status';
import { STUCK_REASONS } from '../../common/stuck-reasons';
import { id, instant, limit, reason, text, version } from '../../common/inputs';
import { cursor } from '../keyset';
import { idOutput, pageOutput, timestamp } from '../rest';

/** What selects executions (the list's filters, without its paging): executions.list, and a bulk repair over a list's filter. */
export const executionFilterFields = {
  workflowId: id.optional(),
  /** At this step now (a step id of the workflow's, as workflows.get lists them). */
  stepId: id.optional(),
  /** Any of these statuses (none: all). */
  status: z.array(z.enum(EXECUTION_STATUSES)).max(EXECUTION_STATUSES.length).optional(),
  /** Stuck for any of these reasons right now (none: no stuck filter). */
  stuck: z.array(z.enum(STUCK_REASONS)).max(STUCK_REASONS.length).optional(),
  /** A contact's id, or the start of its email (any case). */
  contact: text(320, 1).optional(),
  /** Started at or after. */
  since: instant.optional(),
  /** Started before. */
  until: instant.optional(),
};

/** A bulk repair's selection by a list's filter (repair.applyMany's `filter.executions`). */
export const executionFilterInput = z.object(executionFilterFields);

export const listExecutionsInput = z
  .object({
    ...executionFilterFields,
    /** The next (older) page: a nextCursor this list returned. */
    cursor: cursor.optional(),
    /** The previous (newer) page: a prevCursor this list returned. Wins over cursor. */
    before: cursor.optional(),
    limit,
  })
  .prefault({});

export const getExecutionInput = z.object({ id });

export const executionStatsInput = z.object({ workflowId: id.optional() }).prefault({});

// ---------------------------------------------------------------------------
// /api/v1 (meta.openapi)

export const executionPageInput = z.object({
  workflowId: id.optional().meta({ description: 'Executions of this workflow.' }),
  stepId: id.optional().meta({ description: 'At this step now (a step id, as GET /workflows/{id} lists them).' }),
  status: z.array(z.enum(EXECUTION_STATUSES)).max(EXECUTION_STATUSES.length).optional().meta({ description: 'Any of these statuses (repeat the parameter; none: all).', example: ['RUNNING', 'WAITING'] }),
  stuck: z.array(z.enum(STUCK_REASONS)).max(STUCK_REASONS.length).optional().meta({ description: 'Stuck for any of these reasons right now.' }),
  contact: text(320, 1).optional().meta({ description: "A contact's id, or the start of its email (any case).", example: 'ada@' }),
  since: z.iso.datetime({ offset: true }).optional().meta({ description: 'Started at or after (ISO 8601).', example: '2026-12-01T00:00:00Z' }),
  until: z.iso.datetime({ offset: true }).optional().meta({ description: 'Started before (ISO 8601).', example: '2026-12-08T00:00:00Z' }),
  cursor: cursor.optional().meta({ description: 'Where the page starts: from a `next` link.' }),
  limit,
});

const stuckOutput = z.object({ reason: z.enum(STUCK_REASONS), since: timestamp });

export const executionOutput = z.object({
  id: idOutput,
  workflowId: idOutput,
  workflowName: z.string().meta({ example: 'Welcome series' }),
  contactId: idOutput,
  contactEmail: z.string().meta({ example: 'ada@example.com' }),
  status: z.enum(EXECUTION_STATUSES),
  version: z.number().int().meta({ description: 'The fence: send it back as expectedVersion to cancel.', example: 3 }),
  workflowVersion: z.number().int().meta({ description: 'The workflow version it runs on.', example: 1 }),
  latestVersion: z.number().int(),
  currentStepId: z.string().nullable(),
  stepKey: z.string().nullable().meta({ example: 'wait-for-purchase' }),
  stepName: z.string().nullable(),
  stepType: z.string().nullable().meta({ example: 'WAIT_FOR_EVENT' }),
  startedAt: timestamp,
  updatedAt: timestamp,
  finishedAt: timestamp.nullable(),
  exitReason: z.string().nullable(),
  lastError: z.string().nullable(),
  stuck: z.array(stuckOutput).meta({ description: 'Why it is stuck right now (empty when it is not).' }),
});

export const executionPageOutput = pageOutput(executionOutput);

const stepRunOutput = z.looseObject({
  id: idOutput,
  stepId: idOutput,
  stepKey: z.string(),
  stepType: z.string(),
  status: z.string().meta({ example: 'COMPLETED' }),
  attempt: z.number().int(),
  dueAt: timestamp.nullable(),
  resolvedBy: z.string().nullable().meta({ description: 'For a wait: EVENT, TIMEOUT or OPERATOR.' }),
  resolvedBranch: z.string().nullable(),
  error: z.string().nullable(),
  startedAt: timestamp.nullable(),
  finishedAt: timestamp.nullable(),
});

/** The console's executions.get answer: the execution, its step timeline, messages, events, audit entries and stuck reasons. */
export const executionDetailOutput = z.looseObject({
  ...executionOutput.shape,
  context: z.unknown().meta({ description: 'The execution context its steps read (`context.trigger.data`, what it was enrolled with).' }),
  stuck: z.array(z.looseObject({ reason: z.enum(STUCK_REASONS) })).meta({ description: 'Why it is stuck right now, with since when and where.' }),
  enrolledBy: z.looseObject({ kind: z.enum(['event', 'actor', 'engine']) }),
  steps: z.array(stepRunOutput).meta({ description: 'The step timeline, oldest first: each attempt, lease, due time, resolution, error and output.' }),
  messages: z.array(z.looseObject({ id: idOutput, status: z.string() })),
  events: z.array(z.looseObject({ id: idOutput, name: z.string(), role: z.enum(['source', 'resumed']) })),
  audit: z.array(z.looseObject({ id: idOutput, action: z.string(), outcome: z.string(), at: timestamp })),
  graceSeconds: z.number(),
});

export const cancelExecutionInput = z.object({
  id,
  /** The execution's `version` as you read it: a stale one is 409 STALE_VERSION and nothing changes. */
  expectedVersion: version.meta({ example: 3 }),
  /** Kept in the audit entry. */
  reason: reason.meta({ example: 'Customer asked to stop the onboarding emails' }),
});

export const cancelExecutionOutput = z.object({
  ok: z.literal(true),
  action: z.string().meta({ example: 'CANCEL' }),
  executionId: z.string().nullable(),
  eventId: z.string().nullable(),
  version: z.number().int().meta({ description: 'The execution’s version after the cancel.' }),
  change: z.string().meta({ description: 'What the cancel changed, in words.' }),
});
