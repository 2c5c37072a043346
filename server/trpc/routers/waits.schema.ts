import { z } from 'zod';
import { id, version } from '../../common/inputs';

export const resolveWaitInput = z
  .object({
    stepExecutionId: id,
    outcome: z.enum(['EVENT', 'TIMEOUT']),
    /** For EVENT: the tracked event (of the execution's contact) that resolves the wait. */
    eventId: id.optional(),
    /**
     * For TIMEOUT: time the wait out even though an event accepted inside its window would
     * resume it by EVENT (the timer's rule, which a TIMEOUT otherwise follows). Audited.
     */
    ignoreInWindowEvents: z.boolean().optional(),
    /** The execution's version the caller saw: a move since then makes this lose. */
    expectedVersion: version,
  })
  .superRefine((input, ctx) => {
    if (input.eventId && input.outcome !== 'EVENT') {
      ctx.addIssue({ code: 'custom', message: 'eventId goes with outcome EVENT only', path: ['eventId'] });
    }
    if (input.ignoreInWindowEvents !== undefined && input.outcome !== 'TIMEOUT') {
      ctx.addIssue({ code: 'custom', message: 'ignoreInWindowEvents goes with outcome TIMEOUT only', path: ['ignoreInWindowEvents'] });
    }
  });
