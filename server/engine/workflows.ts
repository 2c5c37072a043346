import { transaction, type Db, type DbTx, type RawDb } from '../db';
import { processSingleton } from '../process-registry';
import { writeAudit, type Acting } from './audit';
import { workflowInput, stepConfigSchemas, type WorkflowInput } from '../common/workflow-definition';
import type { StepNode, WorkflowGraph } from './workflow-graph';

// Workflows are immutable once created (a change is a new workflow), so a process may
// cache their graphs: the worker reads a step's config and transitions from memory.

export class WorkflowDefinitionError extends Error {
  override name = 'WorkflowDefinitionError';
  constructor(readonly issues: { message: string; path: (string | number)[] }[]) {
    super(issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
  }
}

/** Validate and store a workflow with its steps and transitions, in one transaction. */
export async function createWorkflow(
  db: Db | DbTx,
  projectId: string,
  input: WorkflowInput,
): Promise<{ id: string }> {
  const parsed = workflowInput.safeParse(input);
  if (!parsed.success) {
    throw new WorkflowDefinitionError(
      parsed.error.issues.map((i) => ({ message: i.message, path: i.path.map((p) => p as string | number) })),
    );
  }
  const wf = parsed.data;
  return transaction(db, 'ENGINE', async (tx) => {
    const workflow = await tx.workflow.create({
      data: {
        projectId,
        name: wf.name,
        description: wf.description ?? null,
        trigger: wf.trigger,
        triggerEvent: wf.triggerEvent ?? null,
        allowReentry: wf.allowReentry,
        enabled: wf.enabled,
      },
    });
    const ids = new Map<string, string>();
    for (const step of wf.steps) {
      const config = stepConfigSchemas[step.type].parse(step.config) as object;
      const row = await tx.workflowStep.create({
        data: { workflowId: workflow.id, key: step.key, type: step.type, name: step.name, config },
      });
      ids.set(step.key, row.id);
    }
    await tx.workflowTransition.createMany({
      data: wf.transitions.map((t) => ({
        workflowId: workflow.id,
        fromStepId: ids.get(t.from)!,
        toStepId: ids.get(t.to)!,
        branch: t.branch,
      })),
    });
    return { id: workflow.id };
  });
}

function isUniqueViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'P2002';
}

export type CreateWorkflowResult = { ok: true; id: string } | { ok: false; reason: 'NAME_TAKEN'; workflowId: string | null };

/**
 * workflows.create: store a workflow and its audit entry in one transaction. Names are
 * unique per project: a taken name is refused (and audited) naming the workflow that holds it.
 */
export async function createWorkflowAudited(db: Db, by: Acting, input: WorkflowInput): Promise<CreateWorkflowResult> {
  const rejectTaken = async (tx: DbTx): Promise<CreateWorkflowResult> => {
    const holder = await tx.workflow.findFirst({ where: { projectId: by.projectId, name: input.name }, select: { id: true } });
    await writeAudit(tx, {
      ...by,
      action: 'workflows.create',
      targetType: 'workflow',
      targetId: holder?.id ?? input.name,
      outcome: 'REJECTED',
      after: { reason: 'NAME_TAKEN', name: input.name },
    });
    return { ok: false, reason: 'NAME_TAKEN', workflowId: holder?.id ?? null };
  };
  try {
    return await transaction(db, 'ENGINE', async (tx) => {
      const taken = await tx.workflow.findFirst({ where: { projectId: by.projectId, name: input.name }, select: { id: true } });
      if (taken) return rejectTaken(tx);
      // createWorkflow opens its own transaction; inside ours, it runs as part of it.
      const created = await createWorkflow(tx, by.projectId, input);
      await writeAudit(tx, {
        ...by,
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
    return transaction(db, 'ENGINE', rejectTaken);
  }
}

export type SetWorkflowEnabledResult = { ok: true; id: string; enabled: boolean } | { ok: false; reason: 'WORKFLOW_NOT_FOUND' };

/** workflows.setEnabled: enable or disable enrollment into a workflow, audited; executions already running go on. */
export function setWorkflowEnabled(db: Db, by: Acting, workflowId: string, enabled: boolean): Promise<SetWorkflowEnabledResult> {
  return transaction(db, 'ENGINE', async (tx): Promise<SetWorkflowEnabledResult> => {
    const [row] = await tx.$queryRaw<{ id: string; enabled: boolean }[]>`
      -- setWorkflowEnabled
      SELECT id, enabled FROM "Workflow"
       WHERE id = ${workflowId}::uuid AND "projectId" = ${by.projectId}::uuid
       FOR UPDATE`;
    if (!row) {
      await writeAudit(tx, {
        ...by,
        action: 'workflows.setEnabled',
        targetType: 'workflow',
        targetId: workflowId,
        outcome: 'REJECTED',
        after: { reason: 'NOT_FOUND' },
      });
      return { ok: false, reason: 'WORKFLOW_NOT_FOUND' };
    }
    await tx.workflow.update({ where: { id: row.id }, data: { enabled } });
    await writeAudit(tx, {
      ...by,
      action: 'workflows.setEnabled',
      targetType: 'workflow',
      targetId: row.id,
      outcome: 'APPLIED',
      before: { enabled: row.enabled },
      after: { enabled },
    });
    return { ok: true, id: row.id, enabled };
  });
}

/** Graphs read in the last 5 s, by workflow id, once per process (server/process-registry.ts). */
const cache = processSingleton('engine.workflowGraphs', () => new Map<string, WorkflowGraph>());

/** The workflow's graph; throws if the workflow does not exist. */
export async function loadWorkflowGraph(db: RawDb, workflowId: string): Promise<WorkflowGraph> {
  const hit = cache.get(workflowId);
  if (hit) return hit;
  // One raw statement (not a Prisma model query): a worker's engine client sends it as a
  // prepared statement like its claims, so no Prisma query runs on a worker's hot path.
  const [wf] = await db.$queryRaw<
    (Pick<WorkflowGraph, 'id' | 'projectId' | 'name' | 'enabled' | 'trigger' | 'triggerEvent' | 'allowReentry'> & {
      steps: (Omit<StepNode, 'config'> & { config: unknown })[];
      transitions: { fromStepId: string; toStepId: string; branch: string | null }[];
    })[]
  >`
    -- loadWorkflowGraph
    SELECT w.id, w."projectId", w.name, w.enabled, w.trigger::text AS trigger, w."triggerEvent", w."allowReentry",
           (SELECT coalesce(json_agg(json_build_object('id', s.id, 'key', s.key, 'type', s.type, 'name', s.name, 'config', s.config)), '[]')
              FROM "WorkflowStep" s WHERE s."workflowId" = w.id) AS steps,
           (SELECT coalesce(json_agg(json_build_object('fromStepId', t."fromStepId", 'toStepId', t."toStepId", 'branch', t.branch)), '[]')
              FROM "WorkflowTransition" t WHERE t."workflowId" = w.id) AS transitions
      FROM "Workflow" w WHERE w.id = ${workflowId}::uuid`;
  if (!wf) throw new Error(`workflow ${workflowId} not found`);
  const trigger = wf.steps.find((s) => s.type === 'TRIGGER');
  if (!trigger) throw new Error(`workflow ${workflowId} has no TRIGGER step`);
  const graph: WorkflowGraph = {
    id: wf.id,
    projectId: wf.projectId,
    name: wf.name,
    enabled: wf.enabled,
    trigger: wf.trigger,
    triggerEvent: wf.triggerEvent,
    allowReentry: wf.allowReentry,
    triggerStepId: trigger.id,
    steps: new Map(
      wf.steps.map((s) => [
        s.id,
        { id: s.id, key: s.key, type: s.type, name: s.name, config: (s.config ?? {}) as Record<string, unknown> },
      ]),
    ),
    transitions: new Map(wf.transitions.map((t) => [`${t.fromStepId}:${t.branch ?? ''}`, t.toStepId])),
  };
  // enabled/allowReentry may change; only the graph itself is immutable. Keep it briefly.
  cache.set(workflowId, graph);
  setTimeout(() => cache.delete(workflowId), 5_000).unref?.();
  return graph;
}
