import type { DbTx, Prisma } from '../db';
import { ExecutionStatus, type StepType, type WorkflowTrigger } from '../generated/prisma/enums';
import type { StuckReason } from '../common/stuck-reasons';
import type { StuckScope } from '../stuck/predicates';
import { projectCountsFigure, type ProjectCounts } from './console-figures';
import { actorLabel, actorLabels } from './actors';

// What a workflow's graph shows at each step: how many executions stand there RUNNING or
// WAITING, and how many of those (or of the failed ones left there) are stuck; and each
// workflow's executions per status. All read from the project's counts figure
// (server/read/console-figures.ts): counted for the read while that is cheap, else as of
// their last counting (`countsAsOf`).

/** The stuck reasons an execution has *at a step* (its detail names the step). */
export const STEP_STUCK_REASONS: readonly StuckReason[] = ['WAIT_OVERDUE', 'LEASE_EXPIRED', 'MISSING_STEP', 'CONTINUATION_PENDING', 'FAILED'];

export interface StepCounts {
  running: number;
  waiting: number;
  /** Distinct executions stuck at the step, for any reason. */
  stuck: number;
  stuckReasons: Partial<Record<StuckReason, number>>;
}

/** Every step's counts of one workflow (steps with none are absent), from the project's counts. */
export function stepCountsOf(counts: ProjectCounts, workflowId: string): Map<string, StepCounts> {
  const byStep = new Map<string, StepCounts>();
  const of = (stepId: string) => {
    let c = byStep.get(stepId);
    if (!c) byStep.set(stepId, (c = { running: 0, waiting: 0, stuck: 0, stuckReasons: {} }));
    return c;
  };
  for (const row of counts.executions) {
    if (row.workflowId !== workflowId || !row.stepId) continue;
    if (row.status === 'RUNNING') of(row.stepId).running += row.n;
    if (row.status === 'WAITING') of(row.stepId).waiting += row.n;
  }
  for (const row of counts.stuck) {
    if (row.workflowId !== workflowId || !row.stepId || !STEP_STUCK_REASONS.includes(row.reason)) continue;
    const c = of(row.stepId);
    c.stuckReasons[row.reason] = (c.stuckReasons[row.reason] ?? 0) + row.n;
  }
  // One execution is stuck for at most one reason at a time (each predicate fixes the
  // execution's and its step row's status), and once per reason (one step row per
  // execution and step, I2), so the reasons' counts add up.
  for (const c of byStep.values()) c.stuck = Object.values(c.stuckReasons).reduce((a, b) => a + (b ?? 0), 0);
  return byStep;
}

export type ExecutionCounts = Record<ExecutionStatus, number>;

function emptyCounts(): ExecutionCounts {
  return Object.fromEntries(Object.values(ExecutionStatus).map((status) => [status, 0])) as ExecutionCounts;
}

/** A workflow's own columns, as workflows.list and workflows.get read them. */
interface WorkflowRow {
  id: string;
  name: string;
  description: string | null;
  trigger: WorkflowTrigger;
  triggerEvent: string | null;
  enabled: boolean;
  allowReentry: boolean;
  createdAt: Date;
}

/**
 * The project's workflows with their step count and how many executions are in each
 * status (`countsAsOf`: null when counted for this read, else when they were counted).
 * One statement for the workflows (their step counts from the steps' unique index), read
 * beside the counts figure.
 */
export async function listWorkflows(db: DbTx, s: StuckScope) {
  const [workflows, counts] = await Promise.all([
    db.$queryRaw<(WorkflowRow & { stepCount: number; latestVersion: number })[]>`
      -- listWorkflows
      SELECT w.id, w.name, w.description, w.trigger::text AS trigger, w."triggerEvent", w.enabled, w."allowReentry", w."createdAt",
             w."latestVersion",
             (SELECT count(*)::int FROM "WorkflowStep" st JOIN "WorkflowVersion" v ON v.id = st."versionId"
               WHERE v."workflowId" = w.id AND v.number = w."latestVersion") AS "stepCount"
        FROM "Workflow" w
       WHERE w."projectId" = ${s.projectId}::uuid
       ORDER BY w.name, w.id`,
    projectCountsFigure(db, s),
  ]);
  const byWorkflow = new Map(workflows.map((w) => [w.id, emptyCounts()]));
  for (const row of counts.value.executions) {
    const workflowCounts = byWorkflow.get(row.workflowId);
    if (workflowCounts) workflowCounts[row.status as ExecutionStatus] += row.n;
  }
  return workflows.map((workflow) => ({
    ...workflow,
    executions: byWorkflow.get(workflow.id)!,
    countsAsOf: counts.asOf,
  }));
}

/** A step's counts as workflows.get reports them: `live` (active, as before) plus the breakdown. */
function liveOf(c: StepCounts) {
  return { live: c.running + c.waiting, running: c.running, waiting: c.waiting, stuck: c.stuck, stuckReasons: c.stuckReasons };
}

const NO_COUNTS: StepCounts = { running: 0, waiting: 0, stuck: 0, stuckReasons: {} };

/**
 * A workflow's graph, with how many active executions stand at each step (as of
 * countsAsOf when not counted for this read);
 * null when the scope's project has no such workflow.
 */
export async function workflowDetail(db: DbTx, s: StuckScope & { workflowId: string; version?: number | undefined }) {
  // One statement: the workflow with its steps (in the order they were defined) and its
  // transitions; then, for a workflow of the project only, the counts figure (which a
  // read may compute and store: a refused read writes nothing).
  const [workflow] = await db.$queryRaw<
      (WorkflowRow & {
        updatedAt: Date;
        latestVersion: number;
        versionNumber: number;
        versionBasedOn: number | null;
        publishedBy: string;
        publishedAt: Date;
        draft: { definition: Prisma.JsonValue; basedOnVersion: number; updatedBy: string; updatedAt: string } | null;
        steps: { id: string; key: string; type: StepType; name: string; config: Prisma.JsonValue }[];
        transitions: { id: string; fromStepId: string; toStepId: string; branch: string | null }[];
      })[]
    >`
      -- workflowDetail
      SELECT w.id, w.name, w.description, w.trigger::text AS trigger, w."triggerEvent", w.enabled, w."allowReentry",
             w."createdAt", w."updatedAt", w."latestVersion",
             v.number AS "versionNumber", v."basedOn" AS "versionBasedOn", v."publishedBy", v."publishedAt",
             (SELECT json_build_object('definition', d.definition, 'basedOnVersion', d."basedOnVersion",
                                       'updatedBy', d."updatedBy", 'updatedAt', d."updatedAt")
                FROM "WorkflowDraft" d WHERE d."workflowId" = w.id) AS draft,
             COALESCE((SELECT json_agg(json_build_object('id', st.id, 'key', st.key, 'type', st.type, 'name', st.name, 'config', st.config)
                                       ORDER BY st."createdAt", st.key)
                         FROM "WorkflowStep" st WHERE st."versionId" = v.id), '[]'::json) AS steps,
             COALESCE((SELECT json_agg(json_build_object('id', t.id, 'fromStepId', t."fromStepId", 'toStepId', t."toStepId", 'branch', t.branch)
                                       ORDER BY t.id)
                         FROM "WorkflowTransition" t WHERE t."versionId" = v.id), '[]'::json) AS transitions
        FROM "Workflow" w
        JOIN "WorkflowVersion" v ON v."workflowId" = w.id AND v.number = COALESCE(${s.version ?? null}::int, w."latestVersion")
       WHERE w.id = ${s.workflowId}::uuid AND w."projectId" = ${s.projectId}::uuid`;
  if (!workflow) return null;
  const [figure, labels] = await Promise.all([
    projectCountsFigure(db, s),
    actorLabels(db, s.projectId, [workflow.publishedBy, ...(workflow.draft ? [workflow.draft.updatedBy] : [])]),
  ]);
  const counts = stepCountsOf(figure.value, s.workflowId);
  const keyOf = new Map(workflow.steps.map((step) => [step.id, step.key]));
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
    /** The version shown (docs/versions.md); its publisher by email or key name. */
    version: {
      number: workflow.versionNumber,
      basedOn: workflow.versionBasedOn,
      publishedBy: actorLabel(labels, workflow.publishedBy),
      publishedAt: workflow.publishedAt,
    },
    latestVersion: workflow.latestVersion,
    draft: workflow.draft
      ? {
          definition: workflow.draft.definition,
          basedOnVersion: workflow.draft.basedOnVersion,
          updatedBy: actorLabel(labels, workflow.draft.updatedBy),
          updatedAt: new Date(workflow.draft.updatedAt),
        }
      : null,
    steps: workflow.steps.map((step) => ({
      id: step.id,
      key: step.key,
      type: step.type,
      name: step.name,
      config: step.config,
      ...liveOf(counts.get(step.id) ?? NO_COUNTS),
    })),
    transitions: workflow.transitions.map((t) => ({
      id: t.id,
      fromStepId: t.fromStepId,
      toStepId: t.toStepId,
      from: keyOf.get(t.fromStepId)!,
      to: keyOf.get(t.toStepId)!,
      branch: t.branch,
    })),
    live: Array.from(counts.values()).reduce((a, c) => a + c.running + c.waiting, 0),
    /** Null: the step counts were counted for this read; else when they were counted. */
    countsAsOf: figure.asOf,
  };
}
