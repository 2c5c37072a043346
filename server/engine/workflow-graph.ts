import type { StepType } from '../common/workflow-definition';

// A workflow's graph as a process holds it (one published version, loaded by graphs.ts loadVersionGraph), and
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
  /** The published version this graph is (docs/versions.md). */
  versionId: string;
  versionNumber: number;
  /** The workflow's newest version number when the graph was read. */
  latestVersion: number;
  triggerStepId: string;
  steps: Map<string, StepNode>;
  /** `${fromStepId}:${branch ?? ''}` -> toStepId */
  transitions: Map<string, string>;
}

/** Where an execution goes after `stepId` leaves by `branch`; null means it is finished. */
export function nextStepId(graph: WorkflowGraph, stepId: string, branch: string | null): string | null {
  return graph.transitions.get(`${stepId}:${branch ?? ''}`) ?? null;
}

/** The step of this version with `key`, if it has one (step identity across versions). */
export function stepByKey(graph: WorkflowGraph, key: string): StepNode | undefined {
  for (const step of graph.steps.values()) if (step.key === key) return step;
  return undefined;
}

export function stepOf(graph: WorkflowGraph, stepId: string): StepNode {
  const step = graph.steps.get(stepId);
  if (!step) throw new Error(`step ${stepId} is not part of workflow ${graph.id} version ${graph.versionNumber}`);
  return step;
}
