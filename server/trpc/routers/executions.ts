import { TRPCError } from '@trpc/server';
import { executionDetail, executionStats, listExecutions } from '../../read/executions';
import { executionFilterOf } from '../execution-filter';
import { requireWorkflow, stuckScope } from '../scope';
import { router, viewerProcedure } from '../trpc';
import { executionStatsInput, getExecutionInput, listExecutionsInput } from './executions.schema';

// Browsing executions: the router validates, authorizes and calls the read model
// (server/read/executions/), which holds the SQL.

export type { ExecutionFilter, ExecutionListItem, ExecutionListRow } from '../../read/executions';
export { executionListQuery } from '../../read/executions';

export const executionsRouter = router({
  /**
   * Executions newest first, keyset-paginated on (startedAt, id) both ways (`cursor` for
   * the next page, `before` for the previous one), filtered in one SQL query; each row
   * with the stuck reasons it has right now.
   */
  list: viewerProcedure.input(listExecutionsInput).query(async ({ ctx, input }) => {
    const projectId = ctx.actor.projectId;
    const filter = await executionFilterOf(ctx.db, projectId, input);
    return listExecutions(ctx.db, {
      ...filter,
      cursor: input.cursor,
      before: input.before,
      limit: input.limit,
      graceSeconds: stuckScope(projectId).graceSeconds,
    });
  }),

  /**
   * One execution and its story: how it was enrolled, the step timeline (attempts, leases,
   * who resolved each wait, when it was due, errors, outputs), its messages, the events
   * that started and resumed it, the audit entries about it, why it is stuck right now,
   * and what happens next.
   */
  get: viewerProcedure.input(getExecutionInput).query(async ({ ctx, input }) => {
    const detail = await executionDetail(ctx.db, stuckScope(ctx.actor.projectId), input.id);
    if (!detail) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such execution in this project.' });
    return detail;
  }),

  /** How many executions are in each status, and how many items are stuck for each reason. */
  stats: viewerProcedure.input(executionStatsInput).query(async ({ ctx, input }) => {
    const projectId = ctx.actor.projectId;
    await requireWorkflow(ctx.db, projectId, input.workflowId);
    return executionStats(ctx.db, stuckScope(projectId, input.workflowId));
  }),
});
