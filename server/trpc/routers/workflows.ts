import { ExecutionStatus } from '../../generated/prisma/enums';
import { router, viewerProcedure } from '../trpc';

export type ExecutionCounts = Record<ExecutionStatus, number>;

function emptyCounts(): ExecutionCounts {
  return Object.fromEntries(Object.values(ExecutionStatus).map((status) => [status, 0])) as ExecutionCounts;
}

export const workflowsRouter = router({
  /** Every workflow with its shape and how many of its executions are in each status. */
  list: viewerProcedure.query(async ({ ctx }) => {
    const workflows = await ctx.db.workflow.findMany({
      orderBy: [{ name: 'asc' }, { id: 'asc' }],
      select: {
        id: true,
        name: true,
        trigger: true,
        triggerEvent: true,
        enabled: true,
        allowReentry: true,
        _count: { select: { steps: true } },
      },
    });
    const counts = await ctx.db.workflowExecution.groupBy({
      by: ['workflowId', 'status'],
      where: { workflowId: { in: workflows.map((w) => w.id) } },
      _count: { _all: true },
    });
    const byWorkflow = new Map(workflows.map((w) => [w.id, emptyCounts()]));
    for (const row of counts) byWorkflow.get(row.workflowId)![row.status] = row._count._all;
    return workflows.map(({ _count, ...workflow }) => ({
      ...workflow,
      stepCount: _count.steps,
      executions: byWorkflow.get(workflow.id)!,
    }));
  }),
});
