import { Prisma, type DbTx } from '../db';
import { ExecutionStatus } from '../generated/prisma/enums';
import { stuckQuery, type StuckReason, type StuckScope } from '../repair/stuck';

// What a workflow's graph shows at each step right now: how many executions stand there
// RUNNING or WAITING, and how many of those (or of the failed ones left there) are stuck.
// Both reads start from the workflow's own small indexes, never from all its history.

/** The stuck reasons an execution has *at a step* (its detail names the step). */
export const STEP_STUCK_REASONS: readonly StuckReason[] = ['WAIT_OVERDUE', 'LEASE_EXPIRED', 'MISSING_STEP', 'CONTINUATION_PENDING', 'FAILED'];

/** Active executions per (current step, status): the partial index on active executions. */
export function activeByStepQuery(workflowId: string): Prisma.Sql {
  return Prisma.sql`
    SELECT "currentStepId" AS "stepId", status::text AS status, count(*)::int AS n
      FROM "WorkflowExecution"
     WHERE "workflowId" = ${workflowId}::uuid AND status IN ('RUNNING', 'WAITING')
     GROUP BY "currentStepId", status`;
}

/**
 * Stuck executions per (step, reason): the stuck predicates of server/repair/stuck.ts,
 * scoped to one workflow, so the graph's counts are exactly what /stuck and
 * executions.list({ stuck }) list. An execution counts once per reason.
 */
export function stuckByStepQuery(s: StuckScope & { workflowId: string }): Prisma.Sql {
  const branches = STEP_STUCK_REASONS.map((r) => Prisma.sql`(${stuckQuery(r, s)})`);
  return Prisma.sql`
    SELECT x.detail->>'stepId' AS "stepId", x.reason, count(DISTINCT x."executionId")::int AS n
      FROM (${Prisma.join(branches, ' UNION ALL ')}) x
     WHERE x.detail->>'stepId' IS NOT NULL
     GROUP BY 1, 2`;
}

export interface StepCounts {
  running: number;
  waiting: number;
  /** Distinct executions stuck at the step, for any reason. */
  stuck: number;
  stuckReasons: Partial<Record<StuckReason, number>>;
}

/** Every step's live counts (steps with none are absent). */
export async function stepCounts(db: DbTx, s: StuckScope & { workflowId: string }): Promise<Map<string, StepCounts>> {
  const [active, stuck] = await Promise.all([
    db.$queryRaw<{ stepId: string | null; status: 'RUNNING' | 'WAITING'; n: number }[]>(activeByStepQuery(s.workflowId)),
    db.$queryRaw<{ stepId: string; reason: StuckReason; n: number }[]>(stuckByStepQuery(s)),
  ]);
  const byStep = new Map<string, StepCounts>();
  const of = (stepId: string) => {
    let counts = byStep.get(stepId);
    if (!counts) byStep.set(stepId, (counts = { running: 0, waiting: 0, stuck: 0, stuckReasons: {} }));
    return counts;
  };
  for (const row of active) {
    if (!row.stepId) continue;
    if (row.status === 'RUNNING') of(row.stepId).running += row.n;
    else of(row.stepId).waiting += row.n;
  }
  for (const row of stuck) {
    const counts = of(row.stepId);
    counts.stuckReasons[row.reason] = row.n;
  }
  // One execution is stuck for at most one reason at a time (each predicate fixes the
  // execution's and its step row's status), so the reasons' counts add up.
  for (const counts of byStep.values()) counts.stuck = Object.values(counts.stuckReasons).reduce((a, b) => a + (b ?? 0), 0);
  return byStep;
}

export type ExecutionCounts = Record<ExecutionStatus, number>;

function emptyCounts(): ExecutionCounts {
  return Object.fromEntries(Object.values(ExecutionStatus).map((status) => [status, 0])) as ExecutionCounts;
}

/** The project's workflows with their step count and how many executions are in each status. */
export async function listWorkflows(db: DbTx, projectId: string) {
  const workflows = await db.workflow.findMany({
    where: { projectId },
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
  const counts = await db.workflowExecution.groupBy({
    by: ['workflowId', 'status'],
    where: { projectId },
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
}

/** A step's counts as workflows.get reports them: `live` (active, as before) plus the breakdown. */
function liveOf(c: StepCounts) {
  return { live: c.running + c.waiting, running: c.running, waiting: c.waiting, stuck: c.stuck, stuckReasons: c.stuckReasons };
}

const NO_COUNTS: StepCounts = { running: 0, waiting: 0, stuck: 0, stuckReasons: {} };

/**
 * A workflow's graph, with how many active executions stand at each step right now;
 * null when the scope's project has no such workflow.
 */
export async function workflowDetail(db: DbTx, s: StuckScope & { workflowId: string }) {
  const workflow = await db.workflow.findFirst({
    where: { id: s.workflowId, projectId: s.projectId },
    include: {
      steps: { orderBy: [{ createdAt: 'asc' }, { key: 'asc' }] },
      transitions: true,
    },
  });
  if (!workflow) return null;
  // Served by the partial index on active executions (workflowId, currentStepId) and
  // the stuck predicates scoped to this workflow.
  const counts = await stepCounts(db, s);
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
  };
}
