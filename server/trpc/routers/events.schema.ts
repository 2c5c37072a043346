import { z } from 'zod';
import { DISPATCH_STATES } from '../../read/events';
import { label, limit, text } from '../inputs';
import { cursor } from '../keyset';

export const listEventsInput = z
  .object({
    /** The exact event name. */
    name: label(100).optional(),
    /** Any of these dispatch states (none: all). */
    state: z.array(z.enum(DISPATCH_STATES)).max(DISPATCH_STATES.length).optional(),
    /** A contact's id or exact email (any case). */
    contact: text(320, 1).optional(),
    /** The next (older) page: a nextCursor this list returned. */
    cursor: cursor.optional(),
    /** The previous (newer) page: a prevCursor this list returned. Wins over cursor. */
    before: cursor.optional(),
    limit,
  })
  .prefault({});
