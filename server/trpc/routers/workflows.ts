import { TRPCError } from '@trpc/server';
import type { DbTx } from '../../db';
import { createWorkflow } from '../../engine/workflows';
import { ExecutionStatus } from '../../generated/prisma/enums';
import { audit, inTransaction } from '../audit';
import { conflictError, marketerProcedure, router, viewerProcedure } from '../trpc';
import { createWorkflowInput, getWorkflowInput, setWorkflowEnabledInput } from './workflows.schema';

export type ExecutionCounts = Record<ExecutionStatus, number>;

function emptyCounts(): ExecutionCounts {
  return Object.fromEntries(Object.values(ExecutionStatus).map((status) => [status, 0])) as ExecutionCounts;
}

function isUniqueViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'P2002';
}

const NOT_FOUND = () => new TRPCError({ code: 'NOT_FOUND', message: 'No such workflow in this project.' });

export const workflowsRouter = router({
  /** The project's workflows with their step count and how many executions are in each status. */
  list: viewerProcedure.query(async ({ ctx }) => {
    const workflows = await ctx.db.workflow.findMany({
      where: { projectId: ctx.actor.projectId },
      orderBy: [{ name: 'asc' }, { id: 'asc' }],
      select: {
        id: true,
        name: true,
        description: true,
        trigger: true,
        triggerEvent: true,
        enabled: true,
        allowReentry: true,
        createdAt: true,
        _count: { select: { steps: true } },
      },
    });
    const counts = await ctx.db.workflowExecution.groupBy({
      by: ['workflowId', 'status'],
      where: { projectId: ctx.actor.projectId },
      _count: { _all: true },
    });
    const byWorkflow = new Map(workflows.map((w) => [w.id, emptyCounts()]));
    for (const row of counts) {
      const workflowCounts = byWorkflow.get(row.workflowId);
      if (workflowCounts) workflowCounts[row.status] = row._count._all;
    }
    return workflows.map(({ _count, ...workflow }) => ({
      ...workflow,
      stepCount: _count.steps,
      executions: byWorkflow.get(workflow.id)!,
    }));
  }),

  /** A workflow's graph, with how many active executions stand at each step right now. */
  get: viewerProcedure.input(getWorkflowInput).query(async ({ ctx, input }) => {
    const workflow = await ctx.db.workflow.findFirst({
      where: { id: input.id, projectId: ctx.actor.projectId },
      include: {
        steps: { orderBy: [{ createdAt: 'asc' }, { key: 'asc' }] },
        transitions: true,
      },
    });
    if (!workflow) throw NOT_FOUND();
    // Served by the partial index on active executions (workflowId, currentStepId).
    const live = await ctx.db.$queryRaw<{ stepId: string; n: bigint }[]>`
      SELECT "currentStepId" AS "stepId", count(*) AS n
        FROM "WorkflowExecution"
       WHERE "workflowId" = ${workflow.id}::uuid AND status IN ('RUNNING', 'WAITING')
       GROUP BY "currentStepId"`;
    const liveByStep = new Map(live.map((r) => [r.stepId, Number(r.n)]));
    const keyOf = new Map(workflow.steps.map((s) => [s.id, s.key]));
    return {
      id: workflow.id,
      name: workflow.name,
      description: workflow.description,
      trigger: workflow.trigger,
      triggerEvent: workflow.triggerEvent,
      enabled: workflow.enabled,
      allowReentry: workflow.allowReentry,
      createdAt: workflow.createdAt,
      updatedAt: workflow.updatedAt,
      steps: workflow.steps.map((s) => ({
        id: s.id,
        key: s.key,
        type: s.type,
        name: s.name,
        config: s.config,
        live: liveByStep.get(s.id) ?? 0,
      })),
      transitions: workflow.transitions.map((t) => ({
        id: t.id,
        fromStepId: t.fromStepId,
        toStepId: t.toStepId,
        from: keyOf.get(t.fromStepId)!,
        to: keyOf.get(t.toStepId)!,
        branch: t.branch,
      })),
      live: Array.from(liveByStep.values()).reduce((a, b) => a + b, 0),
    };
  }),

  /**
   * Validate and store a workflow. Names are unique per project: a taken name is a
   * CONFLICT { reason: 'NAME_TAKEN', workflowId } naming the workflow that holds it.
   */
  create: marketerProcedure.input(createWorkflowInput).mutation(async ({ ctx, input }) => {
    const rejectTaken = async (tx: DbTx) => {
      const holder = await tx.workflow.findFirst({ where: { projectId: ctx.actor.projectId, name: input.name }, select: { id: true } });
      await audit(tx, ctx.actor, {
        action: 'workflows.create',
        targetType: 'workflow',
        targetId: holder?.id ?? input.name,
        outcome: 'REJECTED',
        after: { reason: 'NAME_TAKEN', name: input.name },
      });
      return { ok: false as const, workflowId: holder?.id ?? null };
    };
    let result: { ok: true; id: string } | { ok: false; workflowId: string | null };
    try {
      result = await inTransaction(ctx.db, async (tx) => {
        const taken = await tx.workflow.findFirst({ where: { projectId: ctx.actor.projectId, name: input.name }, select: { id: true } });
        if (taken) return rejectTaken(tx);
        // createWorkflow opens its own transaction; inside ours, it runs as part of it.
        const created = await createWorkflow({ $transaction: (fn) => fn(tx) }, ctx.actor.projectId, input);
        await audit(tx, ctx.actor, {
          action: 'workflows.create',
          targetType: 'workflow',
          targetId: created.id,
          outcome: 'APPLIED',
          after: { name: input.name, trigger: input.trigger, triggerEvent: input.triggerEvent ?? null, steps: input.steps.length },
        });
        return { ok: true as const, id: created.id };
      });
    } catch (error) {
      // Two creates with one name at once: both passed the check, the unique index
      // refused the second, and its transaction is gone; audit the refusal on its own.
      if (!isUniqueViolation(error)) throw error;
      result = await inTransaction(ctx.db, rejectTaken);
    }
    if (!result.ok) {
      throw conflictError({ reason: 'NAME_TAKEN', workflowId: result.workflowId }, `A workflow named "${input.name}" already exists.`);
    }
    return { id: result.id };
  }),

  /** Enable or disable enrollment into a workflow; executions already running go on. */
  setEnabled: marketerProcedure.input(setWorkflowEnabledInput).mutation(async ({ ctx, input }) => {
    const result = await inTransaction(ctx.db, async (tx) => {
      const [row] = await tx.$queryRaw<{ id: string; enabled: boolean }[]>`
        SELECT id, enabled FROM "Workflow"
         WHERE id = ${input.id}::uuid AND "projectId" = ${ctx.actor.projectId}::uuid
         FOR UPDATE`;
      if (!row) {
        await audit(tx, ctx.actor, {
          action: 'workflows.setEnabled',
          targetType: 'workflow',
          targetId: input.id,
          outcome: 'REJECTED',
          after: { reason: 'NOT_FOUND' },
        });
        return null;
      }
      await tx.workflow.update({ where: { id: row.id }, data: { enabled: input.enabled } });
      await audit(tx, ctx.actor, {
        action: 'workflows.setEnabled',
        targetType: 'workflow',
        targetId: row.id,
        outcome: 'APPLIED',
        before: { enabled: row.enabled },
        after: { enabled: input.enabled },
      });
      return { id: row.id, enabled: input.enabled };
    });
    if (!result) throw NOT_FOUND();
    return result;
  }),
});
