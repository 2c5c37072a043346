import { TRPCError } from '@trpc/server';
import { executionDetail, executionStats, listExecutions } from '../../read/executions';
import { executionFilterOf } from '../execution-filter';
import { requireWorkflow, stuckScope } from '../scope';
import { applyOneRepair } from '../../repair/apply-one';
import { asOutput, nextLink } from '../rest';
import { operatorProcedure, router, viewerProcedure } from '../trpc';
import { repairAnswer } from './repair';
import {
  cancelExecutionInput,
  cancelExecutionOutput,
  executionDetailOutput,
  executionPageInput,
  executionPageOutput,
  executionStatsInput,
  getExecutionInput,
  listExecutionsInput,
} from './executions.schema';

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

  /**
   * /api/v1: executions.get's answer, described for the document (a separate procedure: an
   * output schema on \`get\` would replace the console's inferred types with the document's looser ones).
   */
  find: viewerProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/executions/{id}',
        operationId: 'getExecution',
        tags: ['executions'],
        summary: 'Get an execution with its steps and timeline',
        description:
          'The execution, how it was enrolled (`enrolledBy`), its step timeline (attempts, leases, due times, who resolved each wait, errors, outputs), its emails, the events that started and resumed it, the audit entries about it and why it is stuck right now.',
        protect: true,
        errorResponses: [400, 401, 403, 404],
      },
    })
    .input(getExecutionInput)
    .output(executionDetailOutput)
    .query(async ({ ctx, input }) => {
      const detail = await executionDetail(ctx.db, stuckScope(ctx.actor.projectId), input.id);
      if (!detail) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such execution in this project.' });
      return asOutput(executionDetailOutput, detail);
    }),

  /** /api/v1: `list` as pages with `next` links (the console's filters). */
  page: viewerProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/executions',
        operationId: 'listExecutions',
        tags: ['executions'],
        summary: 'List executions',
        description:
          "Newest first, with the console's filters: workflow, current step, statuses, stuck reasons, contact (id or the start of an email), start time. Each row says why it is stuck right now. Follow `next` for the following page (null on the last).",
        protect: true,
        errorResponses: [400, 401, 403, 404],
      },
    })
    .input(executionPageInput)
    .output(executionPageOutput)
    .query(async ({ ctx, input }) => {
      const projectId = ctx.actor.projectId;
      const { cursor, limit, ...filters } = input;
      const filter = await executionFilterOf(ctx.db, projectId, {
        ...filters,
        since: filters.since === undefined ? undefined : new Date(filters.since),
        until: filters.until === undefined ? undefined : new Date(filters.until),
      });
      const page = await listExecutions(ctx.db, { ...filter, cursor, limit, graceSeconds: stuckScope(projectId).graceSeconds });
      return asOutput(executionPageOutput, { items: page.items, next: nextLink('/executions', { ...filters, limit }, page.nextCursor) });
    }),

  /** /api/v1: cancel one execution, as the console's repair panel does (repair.applyOne CANCEL: fenced, audited). */
  cancel: operatorProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/executions/{id}/cancel',
        operationId: 'cancelExecution',
        tags: ['executions'],
        summary: 'Cancel an execution',
        description:
          "The console's CANCEL repair: a compare-and-swap on `expectedVersion` (the `version` you read), audited `repair.CANCEL` with your `reason`. A stale version is 409 (`conflict.reason` STALE_VERSION, with who won); an execution already finished is 412 (NOT_ALLOWED). Needs an OPERATOR key.",
        protect: true,
        errorResponses: [400, 401, 403, 404, 409, 412],
      },
    })
    .input(cancelExecutionInput)
    .output(cancelExecutionOutput)
    .mutation(async ({ ctx, input }) => {
      const applied = await applyOneRepair(
        ctx.db,
        { action: 'CANCEL', executionId: input.id, expectedVersion: input.expectedVersion, reason: input.reason, projectId: ctx.actor.projectId, actor: ctx.actor.id },
        stuckScope(ctx.actor.projectId),
      );
      const result = repairAnswer(applied);
      if (!('eventId' in result)) throw new Error('a CANCEL is an execution repair');
      return result;
    }),

  /** How many executions are in each status, and how many items are stuck for each reason. */
  stats: viewerProcedure.input(executionStatsInput).query(async ({ ctx, input }) => {
    const projectId = ctx.actor.projectId;
    await requireWorkflow(ctx.db, projectId, input.workflowId);
    return executionStats(ctx.db, stuckScope(projectId, input.workflowId));
  }),
});
