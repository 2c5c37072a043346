import { z } from 'zod';
import { EXECUTION_STATUSES } from '../../common/execution-status';
import { STUCK_REASONS } from '../../common/stuck-reasons';
import { id, instant, limit, text } from '../../common/inputs';
import { cursor } from '../keyset';

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
