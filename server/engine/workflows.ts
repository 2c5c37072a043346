import type { DbTx } from '../db';
import { workflowInput, stepConfigSchemas, type StepType, type WorkflowInput } from './definition';

// Workflows are immutable once created (a change is a new workflow), so a process may
// cache their graphs: the worker reads a step's config and transitions from memory.

export interface StepNode {
  id: string;
  key: string;
  type: StepType;
  name: string;
  config: Record<string, unknown>;
}

export interface WorkflowGraph {
  id: string;
  projectId: string;
  name: string;
  enabled: boolean;
  trigger: 'EVENT' | 'MANUAL';
  triggerEvent: string | null;
  allowReentry: boolean;
  triggerStepId: string;
  steps: Map<string, StepNode>;
  /** `${fromStepId}:${branch ?? ''}` -> toStepId */
  transitions: Map<string, string>;
}

export class WorkflowDefinitionError extends Error {
  override name = 'WorkflowDefinitionError';
  constructor(readonly issues: { message: string; path: (string | number)[] }[]) {
    super(issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
  }
}

/** Validate and store a workflow with its steps and transitions, in one transaction. */
export async function createWorkflow(
  db: { $transaction<T>(fn: (tx: DbTx) => Promise<T>): Promise<T> },
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
  return db.$transaction(async (tx) => {
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

const cache = new Map<string, WorkflowGraph>();

/** The workflow's graph; throws if the workflow does not exist. */
export async function loadWorkflowGraph(db: DbTx, workflowId: string): Promise<WorkflowGraph> {
  const hit = cache.get(workflowId);
  if (hit) return hit;
  const wf = await db.workflow.findUnique({
    where: { id: workflowId },
    include: { steps: true, transitions: true },
  });
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

/** Where an execution goes after `stepId` leaves by `branch`; null means it is finished. */
export function nextStepId(graph: WorkflowGraph, stepId: string, branch: string | null): string | null {
  return graph.transitions.get(`${stepId}:${branch ?? ''}`) ?? null;
}

export function stepOf(graph: WorkflowGraph, stepId: string): StepNode {
  const step = graph.steps.get(stepId);
  if (!step) throw new Error(`step ${stepId} is not part of workflow ${graph.id}`);
  return step;
}
