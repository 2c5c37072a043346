import { z } from 'zod';
import { Prisma } from '../../db';
import { limit, text } from '../inputs';
import { cursor, page } from '../keyset';
import { router, viewerProcedure } from '../trpc';

export const listAuditInput = z
  .object({
    /** Entries about one execution, event, workflow or contact. */
    targetId: text(500, 1).optional(),
    /** "user:<id>", "apikey:<id>", ... */
    actor: text(200, 1).optional(),
    /** e.g. "enrollments.enroll", "repair.CANCEL". */
    action: text(100, 1).optional(),
    cursor: cursor.optional(),
    limit,
  })
  .prefault({});

interface AuditRow {
  id: string;
  actor: string;
  action: string;
  targetType: string;
  targetId: string;
  reason: string | null;
  before: unknown;
  after: unknown;
  outcome: string;
  at: Date;
}

export const auditRouter = router({
  /** The project's audit log, newest first, keyset-paginated on (at, id). */
  list: viewerProcedure.input(listAuditInput).query(async ({ ctx, input }) => {
    const conditions: Prisma.Sql[] = [Prisma.sql`"projectId" = ${ctx.actor.projectId}::uuid`];
    if (input.targetId) conditions.push(Prisma.sql`"targetId" = ${input.targetId}`);
    if (input.actor) conditions.push(Prisma.sql`actor = ${input.actor}`);
    if (input.action) conditions.push(Prisma.sql`action = ${input.action}`);
    if (input.cursor) conditions.push(Prisma.sql`(at, id) < (${input.cursor.at}::timestamptz, ${input.cursor.id}::uuid)`);
    const rows = await ctx.db.$queryRaw<AuditRow[]>`
      SELECT id, actor, action, "targetType", "targetId", reason, before, after, outcome::text AS outcome, at
        FROM "AuditEntry"
       WHERE ${Prisma.join(conditions, ' AND ')}
       ORDER BY at DESC, id DESC
       LIMIT ${input.limit + 1}::int`;
    return page(rows, input.limit, (r) => ({ at: r.at, id: r.id }));
  }),
});
