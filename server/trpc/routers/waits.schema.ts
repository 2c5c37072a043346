import { z } from 'zod';
import { id, version } from '../../inputs';

export const resolveWaitInput = z
  .object({
    stepExecutionId: id,
    outcome: z.enum(['EVENT', 'TIMEOUT']),
    /** For EVENT: the tracked event (of the execution's contact) that resolves the wait. */
    eventId: id.optional(),
    /** The execution's version the caller saw: a move since then makes this lose. */
    expectedVersion: version,
  })
  .superRefine((input, ctx) => {
    if (input.eventId && input.outcome !== 'EVENT') {
      ctx.addIssue({ code: 'custom', message: 'eventId goes with outcome EVENT only', path: ['eventId'] });
    }
  });
