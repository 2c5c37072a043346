import { Prisma, type RawDb } from '../db';
import { STUCK_REASONS, type StuckReason } from '../common/stuck-reasons';
import { groupConditions, type StuckGroupFilter } from './groups';
import { stuckQuery, type StuckItem, type StuckScope } from './predicates';

// The stuck list (repair.stuck, bulk repairs): the predicates (predicates.ts) read a page
// at a time, newest first, optionally narrowed to one group of groups.ts.

export interface StuckCursor {
  since: Date;
  id: string;
}

export type StuckPageScope = StuckScope & StuckGroupFilter & { reasons?: readonly StuckReason[]; cursor?: StuckCursor | null; limit: number };

/** A page of stuck items, and one more row to know whether another page follows (exported for its EXPLAIN test). */
export function stuckPageQuery(s: StuckPageScope): Prisma.Sql {
  const reasons = s.reasons?.length ? s.reasons : STUCK_REASONS;
  const conditions = groupConditions(s);
  if (s.cursor) {
    // The first half lets the driving index start at the cursor; the second is exact.
    conditions.push(Prisma.sql`x.since <= ${s.cursor.since}::timestamptz`);
    conditions.push(Prisma.sql`(x.since, x."itemId") < (${s.cursor.since}::timestamptz, ${s.cursor.id}::uuid)`);
  }
  const where = conditions.length ? Prisma.sql`WHERE ${Prisma.join(conditions, ' AND ')}` : Prisma.empty;
  const page = Prisma.sql`ORDER BY x.since DESC, x."itemId" DESC LIMIT ${s.limit + 1}::int`;
  const pages = Prisma.join(
    reasons.map((r) => Prisma.sql`(SELECT * FROM (${stuckQuery(r, s, 'page')}) x ${where} ${page})`),
    ' UNION ALL ',
  );
  return Prisma.sql`-- listStuck.page
      SELECT * FROM (${pages}) x ${page}`;
}

/**
 * Stuck items, newest first, keyset-paginated on (since, itemId). Each reason's page is
 * taken on its own, in its driving index's order, and the pages are merged: reading a
 * page costs its rows, not the number of stuck items.
 */
export async function listStuck(
  db: RawDb,
  s: StuckPageScope,
): Promise<{ items: StuckItem[]; nextCursor: StuckCursor | null }> {
  const rows = await db.$queryRaw<StuckItem[]>(stuckPageQuery(s));
  const items = rows.slice(0, s.limit);
  const last = items[items.length - 1];
  return {
    items,
    nextCursor: rows.length > s.limit && last ? { since: last.since, id: last.itemId } : null,
  };
}
