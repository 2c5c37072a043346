import { TRPCError } from '@trpc/server';
import { createWorkflowAudited, setWorkflowEnabled } from '../../engine/workflows';
import { listWorkflows, workflowDetail } from '../../read/workflows';
import { stuckScope } from '../scope';
import { acting } from '../audit';
import { conflictError, marketerProcedure, router, viewerProcedure } from '../trpc';
import { createWorkflowInput, getWorkflowInput, setWorkflowEnabledInput } from './workflows.schema';

const NOT_FOUND = () => new TRPCError({ code: 'NOT_FOUND', message: 'No such workflow in this project.' });

export const workflowsRouter = router({
  /** The project's workflows with their step count and how many executions are in each status (as of countsAsOf, null: now). */
  list: viewerProcedure.query(({ ctx }) => listWorkflows(ctx.db, stuckScope(ctx.actor.projectId))),

  /** A workflow's graph, with how many active executions stand at each step right now. */
  get: viewerProcedure.input(getWorkflowInput).query(async ({ ctx, input }) => {
    const workflow = await workflowDetail(ctx.db, { ...stuckScope(ctx.actor.projectId, input.id), workflowId: input.id });
    if (!workflow) throw NOT_FOUND();
    return workflow;
  }),

  /**
   * Validate and store a workflow. Names are unique per project: a taken name is a
   * CONFLICT { reason: 'NAME_TAKEN', workflowId } naming the workflow that holds it.
   */
  create: marketerProcedure.input(createWorkflowInput).mutation(async ({ ctx, input }) => {
    const result = await createWorkflowAudited(ctx.db, acting(ctx.actor), input);
    if (!result.ok) {
      throw conflictError({ reason: result.reason, workflowId: result.workflowId }, `A workflow named "${input.name}" already exists.`);
    }
    return { id: result.id };
  }),

  /** Enable or disable enrollment into a workflow; executions already running go on. */
  setEnabled: marketerProcedure.input(setWorkflowEnabledInput).mutation(async ({ ctx, input }) => {
    const result = await setWorkflowEnabled(ctx.db, acting(ctx.actor), input.id, input.enabled);
    if (!result.ok) throw NOT_FOUND();
    return { id: result.id, enabled: result.enabled };
  }),
});
