import { Prisma, type RawDb } from '../db';
import { STUCK_REASONS, type StuckReason } from '../common/stuck-reasons';
import { itemStep, union, type StuckScope } from './predicates';

// How many stuck items there are, per reason and per place (workflow and step): the
// predicates (predicates.ts) counted in one pass. The console's figures and the workflow
// graph's per-step counts are sums of these.

/** How many items each reason has at one place (workflow and step; null for events, and for emails' step). */
export interface StuckCount {
  reason: StuckReason;
  workflowId: string | null;
  stepId: string | null;
  n: number;
}

/** The counting query (exported for its EXPLAIN test): items per (reason, workflow, step), in one pass over the predicates. */
export function stuckCountsQuery(s: StuckScope): Prisma.Sql {
  return Prisma.sql`
    -- stuckCounts
    SELECT x.reason, x."workflowId", ${itemStep} AS "stepId", count(*)::int AS n
      FROM (${union(STUCK_REASONS, s)}) x
     GROUP BY 1, 2, 3`;
}

/** How many items each reason has, per workflow and step (the console's counts are sums of these). */
export async function countStuckByPlace(db: RawDb, s: StuckScope): Promise<StuckCount[]> {
  return db.$queryRaw<StuckCount[]>(stuckCountsQuery(s));
}

/** The items per reason of some stuck counts (all reasons, zero included). */
export function stuckByReason(counts: readonly StuckCount[]): Record<StuckReason, number> {
  const byReason = Object.fromEntries(STUCK_REASONS.map((r) => [r, 0])) as Record<StuckReason, number>;
  for (const c of counts) byReason[c.reason] += c.n;
  return byReason;
}

/** How many items each reason has (all reasons, zero included). */
export async function countStuck(db: RawDb, s: StuckScope): Promise<Record<StuckReason, number>> {
  return stuckByReason(await countStuckByPlace(db, s));
}
