import { z } from 'zod';
import { BULK_MAX } from '../../repair/bulk';
import { REPAIR_ACTIONS } from '../../repair/planner';
import { MESSAGE_REPAIR_ACTIONS } from '../../repair/messages';
import { STUCK_REASONS } from '../../common/stuck-reasons';
import { id, label, limit, reason, version } from '../../common/inputs';
import { cursor } from '../keyset';
import { executionFilterInput } from './executions.schema';

export const stuckInput = z
  .object({
    reason: z.enum(STUCK_REASONS).optional(),
    workflowId: id.optional(),
    cursor: cursor.optional(),
    limit,
  })
  .prefault({});

/** repair.options: the execution whose repairs the console's panel lists. */
export const optionsInput = z.object({ executionId: id });

/**
 * Every action targets an execution, except REDRIVE_EVENT, which targets a tracked event,
 * and the message repairs (MARK_SENT, RESEND, GIVE_UP), which target an email.
 */
function requireTarget(
  input: { action: string; executionId?: string | undefined; eventId?: string | undefined; messageId?: string | undefined },
  ctx: z.RefinementCtx,
) {
  if ((MESSAGE_REPAIR_ACTIONS as readonly string[]).includes(input.action)) {
    if (!input.messageId) ctx.addIssue({ code: 'custom', message: `${input.action} needs the messageId of the email`, path: ['messageId'] });
  } else if (input.action === 'REDRIVE_EVENT') {
    if (!input.eventId) ctx.addIssue({ code: 'custom', message: 'REDRIVE_EVENT needs the eventId of the tracked event', path: ['eventId'] });
  } else if (!input.executionId) {
    ctx.addIssue({ code: 'custom', message: `${input.action} needs an executionId`, path: ['executionId'] });
  }
}

/**
 * FORCE_TIMEOUT: time the wait out even though an event accepted inside its window would
 * resume it by EVENT (the timer's rule, which FORCE_TIMEOUT otherwise follows). Audited.
 */
const ignoreInWindowEvents = z.boolean().optional();

/** MIGRATE's choices (server/repair/plan-migrate.ts): the version to move to (default the latest), keys mapped, re-sends accepted. */
const stepKey = z.string().trim().min(1).max(64).regex(/^[a-z0-9_-]+$/, 'a step key: lower-case letters, digits, _ and - only');
const migrateChoices = {
  toVersion: z.number().int().min(1).max(1_000_000).optional(),
  stepMap: z.record(stepKey, stepKey).refine((m) => Object.keys(m).length <= 100, 'at most 100 mapped steps').optional(),
  allowResend: z.boolean().optional(),
};

function choicesFit(
  input: { action: string; ignoreInWindowEvents?: boolean | undefined; toVersion?: number | undefined; stepMap?: Record<string, string> | undefined; allowResend?: boolean | undefined },
  ctx: z.RefinementCtx,
) {
  if (input.ignoreInWindowEvents !== undefined && input.action !== 'FORCE_TIMEOUT') {
    ctx.addIssue({ code: 'custom', message: 'ignoreInWindowEvents goes with FORCE_TIMEOUT only', path: ['ignoreInWindowEvents'] });
  }
  for (const key of ['toVersion', 'stepMap', 'allowResend'] as const) {
    if (input[key] !== undefined && input.action !== 'MIGRATE') {
      ctx.addIssue({ code: 'custom', message: `${key} goes with MIGRATE only`, path: [key] });
    }
  }
}

/** One repair (preview, apply): an execution's or event's action, or a message repair. */
const oneAction = z.enum([...REPAIR_ACTIONS, ...MESSAGE_REPAIR_ACTIONS]);
/** Why the operator is doing this, for the audit log: mandatory. */

export const previewInput = z
  .object({
    executionId: id.optional(),
    action: oneAction,
    /** MARK_SENT, RESEND, GIVE_UP: the email. */
    messageId: id.optional(),
    /** REDRIVE_EVENT: the event; DELIVER_EVENT: optionally, the event to deliver. */
    eventId: id.optional(),
    ignoreInWindowEvents,
    ...migrateChoices,
  })
  .superRefine(requireTarget)
  .superRefine(choicesFit);

export const applyInput = z
  .object({
    executionId: id.optional(),
    action: oneAction,
    /** MARK_SENT, RESEND, GIVE_UP: the email. */
    messageId: id.optional(),
    /** MARK_SENT: the provider's id for the email, if the operator found it there. */
    providerId: label(500).optional(),
    /** The version the preview showed: if the target moved since, this loses (CONFLICT). */
    expectedVersion: version,
    /** The step execution the preview showed (expectedStepExecutionId): if the execution moved to another, this loses (CONFLICT). */
    expectedStepExecutionId: id.nullable().optional(),
    reason,
    eventId: id.optional(),
    ignoreInWindowEvents,
    ...migrateChoices,
  })
  .superRefine(requireTarget)
  .superRefine(choicesFit);

/** A stuck group's error pattern (stuckGroups' errorPattern), as long as it can be. */
const errorPattern = z.string().max(300);

const bulkFilter = z
  .object({
    reason: z.enum(STUCK_REASONS).optional(),
    workflowId: id.optional(),
    /** With a reason: one stuck group's step (null: items without a step, such as events). */
    stepId: id.nullable().optional(),
    /** With a reason: one stuck group's normalised error (null: items without an error). */
    errorPattern: errorPattern.nullable().optional(),
    status: z.enum(['RUNNING', 'WAITING', 'FAILED']).optional(),
    /** The active executions standing at this step (a step of one version): what MIGRATE moves from the publish dialog. */
    atStep: id.optional(),
    executionIds: z.array(id).min(1).max(BULK_MAX).optional(),
    /** The executions a list's filters select (executions.list's filters, without paging): the Executions page's "repair matching". */
    executions: executionFilterInput.optional(),
  })
  .superRefine((f, ctx) => {
    if (!f.reason && !f.status && !f.executionIds && !f.executions && !f.atStep) {
      ctx.addIssue({ code: 'custom', message: 'select by a stuck reason, a status, a step (atStep), execution ids or an executions filter', path: ['reason'] });
    }
    if (f.executions && (f.reason || f.status || f.executionIds || f.workflowId)) {
      ctx.addIssue({ code: 'custom', message: 'an executions filter selects on its own (its workflowId is inside it)', path: ['executions'] });
    }
    if (!f.reason && (f.stepId !== undefined || f.errorPattern !== undefined)) {
      ctx.addIssue({ code: 'custom', message: 'a stuck group (stepId, errorPattern) needs its reason', path: ['reason'] });
    }
  });

const bulkFields = {
  filter: bulkFilter,
  /** A MESSAGE_* group takes MARK_SENT, RESEND or GIVE_UP (each email); any other selection an execution's or event's action. */
  action: oneAction,
  reason,
  ignoreInWindowEvents,
  ...migrateChoices,
};

function bulkActionFits(input: { filter: { reason?: string | undefined }; action: string }, ctx: z.RefinementCtx) {
  const emails = input.filter.reason === 'MESSAGE_UNCONFIRMED' || input.filter.reason === 'MESSAGE_FAILED';
  const messageAction = (MESSAGE_REPAIR_ACTIONS as readonly string[]).includes(input.action);
  if (emails && !messageAction) {
    ctx.addIssue({ code: 'custom', path: ['action'], message: `${input.filter.reason} selects emails: repair them with MARK_SENT, RESEND or GIVE_UP` });
  } else if (!emails && messageAction) {
    ctx.addIssue({ code: 'custom', path: ['action'], message: `${input.action} repairs emails: select them with reason MESSAGE_UNCONFIRMED or MESSAGE_FAILED` });
  }
}

export const applyManyInput = z
  .object({
    ...bulkFields,
    /** Count what the filter selects and change nothing. */
    dryRun: z.boolean().default(false),
  })
  .superRefine(bulkActionFits)
  .superRefine(choicesFit);

/** repair.applyManyLive: the same selection and action, streamed row by row. */
export const applyManyLiveInput = z
  .object({
    ...bulkFields,
    /** Set by the SSE client when it reconnects (tracked events): a run is never restarted by a reconnect. */
    lastEventId: z.string().nullish(),
  })
  .superRefine(bulkActionFits)
  .superRefine(choicesFit);

/** repair.stuckGroups: every stuck item grouped by cause, optionally of one workflow or reason. */
export const stuckGroupsInput = z
  .object({
    workflowId: id.optional(),
    reason: z.enum(STUCK_REASONS).optional(),
  })
  .prefault({});
