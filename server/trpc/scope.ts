import { TRPCError } from '@trpc/server';
import type { DbTx } from '../db';
import { env } from '../env';
import type { StuckScope } from '../stuck/predicates';

// Every query runs in the caller's project. An id of another project answers NOT_FOUND,
// exactly as an id that does not exist, so a caller cannot learn what other projects hold.

/** The stuck predicates' scope: the caller's project, its grace period (STUCK_GRACE_SECONDS). */
export function stuckScope(projectId: string, workflowId?: string | null): StuckScope {
  return { projectId, workflowId: workflowId ?? null, graceSeconds: env().STUCK_GRACE_SECONDS };
}

/** A workflow id given as a filter must be one of the caller's project. */
export async function requireWorkflow(db: DbTx, projectId: string, workflowId: string | undefined): Promise<void> {
  if (!workflowId) return;
  const found = await db.workflow.findFirst({ where: { id: workflowId, projectId }, select: { id: true } });
  if (!found) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such workflow in this project.' });
}
