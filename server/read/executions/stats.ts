import type { DbTx } from '../../db';
import { stuckByReason } from '../../stuck/counts';
import type { StuckScope } from '../../stuck/predicates';
import { projectCountsFigure } from '../console-figures';
import { EXECUTION_STATUSES } from '../../common/execution-status';
import type { ExecutionStatus } from '../../generated/prisma/enums';


// ---------------------------------------------------------------------------
// Counts

/**
 * How many executions are in each status, and how many items are stuck for each reason:
 * the project's counts figure (server/read/console-figures.ts), narrowed to the workflow
 * when one is given. `asOf` null: counted for this read; else when they were counted.
 */
export async function executionStats(db: DbTx, s: StuckScope) {
  const { value, asOf } = await projectCountsFigure(db, s);
  const inScope = (c: { workflowId: string | null }) => !s.workflowId || c.workflowId === s.workflowId;
  const byStatus = Object.fromEntries(EXECUTION_STATUSES.map((st) => [st, 0])) as Record<ExecutionStatus, number>;
  for (const c of value.executions) if (inScope(c)) byStatus[c.status as ExecutionStatus] += c.n;
  const byStuckReason = stuckByReason(value.stuck.filter(inScope));
  return { byStatus, byStuckReason, total: Object.values(byStatus).reduce((a, b) => a + b, 0), asOf };
}
