import type { StepType } from '../common/workflow-definition';

// A workflow's graph as a process holds it (loaded by workflows.ts loadWorkflowGraph), and
// the pure walks over it. Nothing here reaches the database, so the repair planner, which
// is tested without one, can use it.

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

/** Where an execution goes after `stepId` leaves by `branch`; null means it is finished. */
export function nextStepId(graph: WorkflowGraph, stepId: string, branch: string | null): string | null {
  return graph.transitions.get(`${stepId}:${branch ?? ''}`) ?? null;
}

export function stepOf(graph: WorkflowGraph, stepId: string): StepNode {
  const step = graph.steps.get(stepId);
  if (!step) throw new Error(`step ${stepId} is not part of workflow ${graph.id}`);
  return step;
}
