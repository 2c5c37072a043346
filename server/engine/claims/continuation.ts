import { Prisma, type RawDb } from '../../db';
import { readExecutionState, type ExecutionState, type StepClaim } from './execution';
import { moveTo, secondsFromNow, stepRowClaim } from './fragments';
import { lost, type Lost, type Won } from './result';

// The continuation: moving executions past their resolved waits, along each wait's branch.
// One statement for any number of them (the timer resolves waits in batches, and advances
// a batch as the workers advance their completed steps: one round trip, one commit), each
// row fenced on its own.

export interface WaitAdvance {
  executionId: string;
  /** The version seen after the wait was claimed. */
  expectedVersion: number;
  stepExecutionId: string;
  waitStepId: string;
  nextStepId: string;
  status: 'RUNNING' | 'COMPLETED';
  contextPatch?: Record<string, unknown>;
  /** Claim the next step in the same statement (with the batch's lease), when moving to RUNNING. */
  claimNext?: boolean;
}

export type WaitAdvanceResult = Won<{ version: number; next: StepClaim | null }> | Lost<ExecutionState | null>;

/**
 * I6 (continuations survive crashes): advance an execution past a resolved wait. Fenced
 * by the version seen after the wait was claimed; re-running it after the execution has
 * moved on changes nothing, so a delivered step is never replayed. With `claimNext`, the
 * next step of each row moving to RUNNING is claimed in the same statement, as claimStep
 * would claim it with the version this advance writes (the version moves by two).
 */
export async function advanceFromWait(
  db: RawDb,
  advance: WaitAdvance,
  lease: { leaseSeconds: number; owner: string | null } | null = null,
): Promise<WaitAdvanceResult> {
  return (await advanceFromWaits(db, [advance], lease))[0]!;
}

/**
 * I6: advanceFromWait for many executions (each at most once) in one statement; the results in
 * their order. The rows with claimNext share one lease (one worker sends a batch).
 */
export async function advanceFromWaits(
  db: RawDb,
  advances: WaitAdvance[],
  lease: { leaseSeconds: number; owner: string | null } | null = null,
): Promise<WaitAdvanceResult[]> {
  if (advances.length === 0) return [];
  // Locks in one order (the executions' ids), as every batch claim takes them.
  const rows = [...advances].sort((a, b) => (a.executionId < b.executionId ? -1 : a.executionId > b.executionId ? 1 : 0));
  if (new Set(rows.map((r) => r.executionId)).size !== rows.length) throw new Error('advanceFromWaits: an execution appears twice in one batch');
  const column = <T>(f: (r: WaitAdvance) => T) => rows.map(f);
  if (!lease && rows.some((r) => r.claimNext)) throw new Error('advanceFromWaits: a row claims its next step but no lease was given');
  const claim = lease ?? { leaseSeconds: 0, owner: null };
  const won = await db.$queryRaw<(Omit<StepClaim, 'stepExecutionId' | 'claimToken' | 'attempt'> & { stepExecutionId: string | null; claimToken: string | null; attempt: number | null })[]>`
    -- advanceFromWaits
    WITH v AS (
      SELECT * FROM unnest(
        ${column((r) => r.executionId)}::uuid[], ${column((r) => r.expectedVersion)}::int[],
        ${column((r) => r.stepExecutionId)}::uuid[], ${column((r) => r.waitStepId)}::uuid[],
        ${column((r) => r.nextStepId)}::uuid[], ${column((r) => r.status)}::text[],
        ${column((r) => JSON.stringify(r.contextPatch ?? {}))}::jsonb[],
        ${column((r) => !!r.claimNext && r.status === 'RUNNING')}::boolean[]
      ) AS v("executionId", version, "stepExecutionId", "waitStepId", "nextStepId", status, "contextPatch", chain)
    ), exec AS (
      UPDATE "WorkflowExecution" e
         SET version = e.version + CASE WHEN v.chain THEN 2 ELSE 1 END,
             ${moveTo(Prisma.sql`v.status`, Prisma.sql`v."nextStepId"`, Prisma.sql`CASE WHEN v.chain THEN ${secondsFromNow(claim.leaseSeconds)} ELSE now() END`)},
             context = e.context || v."contextPatch",
             "updatedAt" = now()
        FROM v
       WHERE e.id = v."executionId" AND e.version = v.version
         AND e.status = 'WAITING' AND e."currentStepId" = v."waitStepId"
         AND EXISTS (SELECT 1 FROM "StepExecution" s
                      WHERE s.id = v."stepExecutionId" AND s.status = 'WAITING' AND s."resolvedBy" IS NOT NULL)
      RETURNING e.id, e.version, e."currentStepId", e."projectId", e."workflowId", e."workflowVersionId", e."contactId", e.context,
                v."stepExecutionId" AS "waitRowId", v.chain
    ), step AS (
      UPDATE "StepExecution" s
         SET status = 'COMPLETED', "finishedAt" = now(),
             output = COALESCE(s.output, '{}'::jsonb)
                      || jsonb_build_object('resolvedBy', s."resolvedBy", 'branch', s."resolvedBranch")
        FROM exec
       WHERE s.id = exec."waitRowId" AND s.status = 'WAITING' AND s."resolvedBy" IS NOT NULL
      RETURNING s.id
    ), next AS (
      ${stepRowClaim(claim.leaseSeconds, claim.owner, Prisma.sql`exec.chain`)}
    )
    SELECT exec.id AS "executionId", exec.version, exec."currentStepId" AS "stepId", exec."projectId",
           exec."workflowId", exec."workflowVersionId", exec."contactId", exec.context,
           next.id AS "stepExecutionId", next."claimToken", next.attempt,
           c.email AS "contactEmail", c.data AS "contactData", c.subscribed AS "contactSubscribed"
      FROM exec
      LEFT JOIN next ON next."executionId" = exec.id
      JOIN "Contact" c ON c.id = exec."contactId"`;
  const byExecution = new Map(won.map((row) => [row.executionId, row]));
  return Promise.all(
    advances.map(async (a): Promise<WaitAdvanceResult> => {
      const row = byExecution.get(a.executionId);
      if (!row) return lost('advanceFromWaits', await readExecutionState(db, a.executionId));
      const next = row.stepExecutionId && row.claimToken && row.attempt !== null ? (row as StepClaim) : null;
      return { won: true, version: row.version, next };
    }),
  );
}
