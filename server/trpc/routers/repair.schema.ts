import { z } from 'zod';
import { BULK_MAX } from '../../repair/bulk';
import { REPAIR_ACTIONS } from '../../repair/actions';
import { STUCK_REASONS } from '../../repair/stuck';
import { id, label, limit, version } from '../inputs';
import { cursor } from '../keyset';

export const stuckInput = z
  .object({
    reason: z.enum(STUCK_REASONS).optional(),
    workflowId: id.optional(),
    cursor: cursor.optional(),
    limit,
  })
  .prefault({});

/** Every action targets an execution, except REDRIVE_EVENT, which targets a tracked event. */
function requireTarget(input: { action: string; executionId?: string | undefined; eventId?: string | undefined }, ctx: z.RefinementCtx) {
  if (input.action === 'REDRIVE_EVENT') {
    if (!input.eventId) ctx.addIssue({ code: 'custom', message: 'REDRIVE_EVENT needs the eventId of the tracked event', path: ['eventId'] });
  } else if (!input.executionId) {
    ctx.addIssue({ code: 'custom', message: `${input.action} needs an executionId`, path: ['executionId'] });
  }
}

const action = z.enum(REPAIR_ACTIONS);
/** Why the operator is doing this, for the audit log: mandatory. */
const reason = label(500, 3);

export const previewInput = z
  .object({
    executionId: id.optional(),
    action,
    /** REDRIVE_EVENT: the event; DELIVER_EVENT: optionally, the event to deliver. */
    eventId: id.optional(),
  })
  .superRefine(requireTarget);

export const applyInput = z
  .object({
    executionId: id.optional(),
    action,
    /** The version the preview showed: if the target moved since, this loses (CONFLICT). */
    expectedVersion: version,
    reason,
    eventId: id.optional(),
  })
  .superRefine(requireTarget);

export const applyManyInput = z.object({
  filter: z
    .object({
      reason: z.enum(STUCK_REASONS).optional(),
      workflowId: id.optional(),
      status: z.enum(['RUNNING', 'WAITING', 'FAILED']).optional(),
      executionIds: z.array(id).min(1).max(BULK_MAX).optional(),
    })
    .superRefine((f, ctx) => {
      if (!f.reason && !f.status && !f.executionIds) {
        ctx.addIssue({ code: 'custom', message: 'select by a stuck reason, a status or execution ids', path: ['reason'] });
      }
    }),
  action,
  reason,
  /** Count what the filter selects and change nothing. */
  dryRun: z.boolean().default(false),
});
