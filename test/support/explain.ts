import type { DbTx, Prisma } from '../../server/db';

// Reading PostgreSQL's plans in tests that prove a query stays index-driven at scale.

export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Total Cost': number;
  Plans?: PlanNode[];
}

/** The plan of a query, as EXPLAIN (FORMAT JSON) gives it (estimated, not run). */
export async function explain(db: DbTx, query: Prisma.Sql): Promise<PlanNode> {
  const [row] = await db.$queryRaw<{ 'QUERY PLAN': [{ Plan: PlanNode }] }[]>`EXPLAIN (FORMAT JSON) ${query}`;
  return row!['QUERY PLAN'][0].Plan;
}

/** Every node of a plan, the root first. */
export function planNodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(planNodes)];
}
