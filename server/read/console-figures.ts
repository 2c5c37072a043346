import { Prisma, type DbTx } from '../db';
import { executionIsActive } from '../engine/claims/fragments';
import { checkInvariants, type InvariantResult } from '../engine/invariants';
import type { StuckReason } from '../common/stuck-reasons';
import { countStuckByPlace, type StuckCount } from '../stuck/counts';
import { type StuckGroup, stuckGroups } from '../stuck/groups';
import type { StuckScope } from '../stuck/predicates';
import { consoleFigure, recomputeFigure, type Figure } from './figures';

// The console's figures over a whole project, each computed by one query set and served
// through server/read/figures.ts (live while cheap, else as of their last computation):
// - counts: executions per (workflow, status, step) and stuck items per (reason, workflow,
//   step), from which executions.stats (project or workflow), workflows.list and
//   workflows.get's step counts are all read: one computation serves every scope;
// - stuck groups (repair.stuckGroups), per filter;
// - invariant violations (health.invariants). The checks themselves stay in
//   server/engine/invariants.ts, exact, for tests, the bench and the drills.

/** Executions of one workflow in one status; stepId is where active (RUNNING, WAITING) ones stand, else null. */
export interface ExecutionCount {
  workflowId: string;
  status: string;
  stepId: string | null;
  n: number;
}

export interface ProjectCounts {
  executions: ExecutionCount[];
  stuck: StuckCount[];
}

/** The execution counting query (exported for its EXPLAIN test): one pass over the project's executions. */
export function executionCountsQuery(projectId: string): Prisma.Sql {
  return Prisma.sql`
    -- executionCounts
    SELECT "workflowId", status::text AS status,
           CASE WHEN ${executionIsActive(Prisma.sql`status`)} THEN "currentStepId" END AS "stepId", count(*)::int AS n
      FROM "WorkflowExecution"
     WHERE "projectId" = ${projectId}::uuid
     GROUP BY 1, 2, 3`;
}

async function projectCounts(db: DbTx, s: StuckScope): Promise<ProjectCounts> {
  const [executions, stuck] = await Promise.all([
    db.$queryRaw<ExecutionCount[]>(executionCountsQuery(s.projectId)),
    countStuckByPlace(db, { ...s, workflowId: null }),
  ]);
  return { executions, stuck };
}

const countsKey = (s: StuckScope) => ({ projectId: s.projectId, kind: 'counts' as const, scope: `grace=${s.graceSeconds}` });

/** The project's counts (whatever s.workflowId: readers pick their workflow's rows). */
export function projectCountsFigure(db: DbTx, s: StuckScope): Promise<Figure<ProjectCounts>> {
  return consoleFigure(db, countsKey(s), (d) => projectCounts(d, s));
}

type StuckGroupsScope = StuckScope & { reasons?: readonly StuckReason[] };

const stuckGroupsKey = (s: StuckGroupsScope) => ({
  projectId: s.projectId,
  kind: 'stuckGroups' as const,
  scope: `grace=${s.graceSeconds};workflow=${s.workflowId ?? ''};reasons=${[...(s.reasons ?? [])].sort().join(',')}`,
});

/** Every stuck item grouped by cause, as repair.stuckGroups shows them (bulk repair reads stuckGroups itself, live). */
export function stuckGroupsFigure(db: DbTx, s: StuckGroupsScope): Promise<Figure<StuckGroup[]>> {
  return consoleFigure(db, stuckGroupsKey(s), (d) => stuckGroups(d, s));
}

const invariantsKey = (projectId: string) => ({ projectId, kind: 'invariants' as const, scope: '' });

/** The project's invariant violations, as the console's health panel shows them. */
export function invariantsFigure(db: DbTx, projectId: string): Promise<Figure<InvariantResult[]>> {
  return consoleFigure(db, invariantsKey(projectId), (d) => checkInvariants(d, { projectId }));
}

/**
 * Compute and store every project-wide figure now, whatever it costs, and say what each
 * cost: what one full recompute of the console's figures takes (the bench reports it).
 */
export async function recomputeConsoleFigures(db: DbTx, s: StuckScope): Promise<{ figure: string; costMs: number }[]> {
  const whole = { ...s, workflowId: null };
  return [
    { figure: 'counts', costMs: (await recomputeFigure(db, countsKey(whole), (d) => projectCounts(d, whole))).costMs },
    { figure: 'stuckGroups', costMs: (await recomputeFigure(db, stuckGroupsKey(whole), (d) => stuckGroups(d, whole))).costMs },
    { figure: 'invariants', costMs: (await recomputeFigure(db, invariantsKey(s.projectId), (d) => checkInvariants(d, { projectId: s.projectId }))).costMs },
  ];
}
