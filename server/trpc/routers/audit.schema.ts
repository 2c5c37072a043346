import { z } from 'zod';
import { AUDIT_OUTCOMES } from '../../read/audit';
import { instant, limit, text } from '../../common/inputs';
import { cursor } from '../keyset';

export const listAuditInput = z
  .object({
    /** Entries about one execution, event, workflow or contact. */
    targetId: text(500, 1).optional(),
    /** "user:<id>", "apikey:<id>", ... */
    actor: text(200, 1).optional(),
    /** e.g. "enrollments.enroll", "repair.CANCEL". */
    action: text(100, 1).optional(),
    /** Any of these outcomes (none: all). */
    outcome: z.array(z.enum(AUDIT_OUTCOMES)).max(AUDIT_OUTCOMES.length).optional(),
    /** At or after. */
    since: instant.optional(),
    /** Before. */
    until: instant.optional(),
    /** The next (older) page: a nextCursor this list returned. */
    cursor: cursor.optional(),
    /** The previous (newer) page: a prevCursor this list returned. Wins over cursor. */
    before: cursor.optional(),
    limit,
  })
  .prefault({});
