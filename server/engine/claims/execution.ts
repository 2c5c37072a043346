import { Prisma, type RawDb } from '../../db';
import { claimValues, executionStillClaimed, secondsFromNow, stepRowClaim, stepStillClaimed } from './fragments';
import { lost, type Lost, type Won } from './result';

// Execution claims, the workers' side: enroll (insert executions), claim a step and keep
// its lease. Completing the step (advance, park, fail) is in completion.ts.

export type ExecutionStatus = 'RUNNING' | 'WAITING' | 'COMPLETED' | 'EXITED' | 'FAILED' | 'CANCELLED';

export interface ExecutionState {
  id: string;
  status: ExecutionStatus;
  version: number;
  currentStepId: string | null;
  updatedAt: Date;
}

/** The current state of an execution, for telling a loser what won. */
export async function readExecutionState(db: RawDb, executionId: string): Promise<ExecutionState | null> {
  const rows = await db.$queryRaw<ExecutionState[]>`
    -- readExecutionState
    SELECT id, status::text AS status, version, "currentStepId", "updatedAt"
      FROM "WorkflowExecution" WHERE id = ${executionId}::uuid`;
  return rows[0] ?? null;
}

// ---------------------------------------------------------------------------
// Enrollment

export interface NewExecutions {
  projectId: string;
  workflowId: string;
  /** The version they enroll on (the latest at enrollment); firstStepId is its TRIGGER. */
  workflowVersionId: string;
  firstStepId: string;
  /** The workflow forbids re-entry: each (workflow, contact) may have one execution ever. */
  enrollOnce: boolean;
  rows: { contactId: string; context: Record<string, unknown>; sourceEventId: string | null }[];
}

/**
 * I1, I3 (and allowReentry = false): insert an execution per row unless a unique index
 * says an active one, one for the same source event, or (once-only) any one exists.
 * ON CONFLICT DO NOTHING without a target covers all three indexes, between rows of the
 * batch too; it waits for a concurrent insert of the same key and then skips. Rows are
 * inserted in the order given (callers sort them, so batches never deadlock). Returns
 * the rows inserted.
 */
export async function insertExecutions(db: RawDb, e: NewExecutions): Promise<{ id: string; contactId: string }[]> {
  if (e.rows.length === 0) return [];
  return db.$queryRaw<{ id: string; contactId: string }[]>`
    -- insertExecutions
    INSERT INTO "WorkflowExecution"
           (id, "projectId", "workflowId", "workflowVersionId", "contactId", status, "currentStepId", context,
            "sourceEventId", "enrollOnce", "readyAt", "startedAt", "updatedAt")
    SELECT gen_random_uuid(), ${e.projectId}::uuid, ${e.workflowId}::uuid, ${e.workflowVersionId}::uuid, u.contact,
           'RUNNING', ${e.firstStepId}::uuid, u.context::jsonb, u.source, ${e.enrollOnce}, now(), now(), now()
      FROM unnest(${e.rows.map((r) => r.contactId)}::uuid[],
                  ${e.rows.map((r) => JSON.stringify(r.context))}::text[],
                  ${e.rows.map((r) => r.sourceEventId)}::uuid[]) WITH ORDINALITY AS u(contact, context, source, n)
     ORDER BY u.n
    ON CONFLICT DO NOTHING
    RETURNING id, "contactId"`;
}

// ---------------------------------------------------------------------------
// Step claims

export interface StepClaim {
  executionId: string;
  /** The execution's version after the claim: the fence for completing this step. */
  version: number;
  stepId: string;
  stepExecutionId: string;
  claimToken: string;
  attempt: number;
  projectId: string;
  workflowId: string;
  /** The version whose graph the execution runs on: the worker reads that graph (docs/versions.md). */
  workflowVersionId: string;
  contactId: string;
  context: Record<string, unknown>;
  contactEmail: string;
  contactData: Record<string, unknown>;
  contactSubscribed: boolean;
}

/** A claimed execution whose step row was in no claimable state (should never happen). */
export interface UnclaimableStep {
  executionId: string;
  version: number;
  stepId: string;
}

type ClaimRow = Omit<StepClaim, 'stepExecutionId' | 'claimToken' | 'attempt'> & {
  stepExecutionId: string | null;
  claimToken: string | null;
  attempt: number | null;
};

function splitClaims(rows: ClaimRow[]): { claims: StepClaim[]; unclaimable: UnclaimableStep[] } {
  const claims: StepClaim[] = [];
  const unclaimable: UnclaimableStep[] = [];
  for (const row of rows) {
    if (row.stepExecutionId && row.claimToken && row.attempt !== null) {
      claims.push(row as StepClaim);
    } else {
      unclaimable.push({ executionId: row.executionId, version: row.version, stepId: row.stepId });
    }
  }
  return { claims, unclaimable };
}

/** The second half of both step claims, after an `exec` CTE has claimed executions (fragments.ts, stepRowClaim). */
function claimedStepRows(leaseSeconds: number, owner: string | null): Prisma.Sql {
  return Prisma.sql`step AS (
      ${stepRowClaim(leaseSeconds, owner)}
    )
    SELECT exec.id AS "executionId", exec.version, exec."currentStepId" AS "stepId", exec."projectId",
           exec."workflowId", exec."workflowVersionId", exec."contactId", exec.context,
           step.id AS "stepExecutionId", step."claimToken", step.attempt,
           c.email AS "contactEmail", c.data AS "contactData", c.subscribed AS "contactSubscribed"
      FROM exec
      LEFT JOIN step ON step."executionId" = exec.id
      JOIN "Contact" c ON c.id = exec."contactId"`;
}

/**
 * I2, I6: pick up to `limit` RUNNING executions whose step is due, skipping rows another
 * worker holds; bump each version and insert (or re-claim, if its lease expired or its
 * last attempt failed) the step row with a fresh claim token and lease. The unique
 * (execution, step) index makes a second step row impossible; the new version fences
 * out any earlier holder.
 */
export async function claimReadySteps(
  db: RawDb,
  opts: {
    limit: number;
    leaseSeconds: number;
    /** Who holds the lease (the worker's name), shown to operators; not a fence: claimToken is. */
    owner?: string;
    /**
     * A step whose lease ran out on this many attempts is killing its workers (a poison
     * step): leave it LEASE_EXPIRED for an operator instead of crash-looping the fleet.
     */
    maxAttempts?: number;
  },
): Promise<{ claims: StepClaim[]; unclaimable: UnclaimableStep[] }> {
  const rows = await db.$queryRaw<ClaimRow[]>`
    -- claimReadySteps
    WITH picked AS (
      SELECT x.id FROM "WorkflowExecution" x
       WHERE status = 'RUNNING' AND "readyAt" <= now()
         AND NOT EXISTS (SELECT 1 FROM "StepExecution" p
                          WHERE p."executionId" = x.id AND p."stepId" = x."currentStepId"
                            AND p.status = 'RUNNING' AND p.attempt >= ${opts.maxAttempts ?? 2147483647}::int)
       ORDER BY "readyAt"
       LIMIT ${opts.limit}::int
       FOR UPDATE SKIP LOCKED
    ), exec AS (
      UPDATE "WorkflowExecution" e
         SET version = e.version + 1,
             "readyAt" = ${secondsFromNow(opts.leaseSeconds)},
             "updatedAt" = now()
        FROM picked
       WHERE e.id = picked.id AND e.status = 'RUNNING'
      RETURNING e.id, e.version, e."currentStepId", e."projectId", e."workflowId", e."workflowVersionId", e."contactId", e.context
    ), ${claimedStepRows(opts.leaseSeconds, opts.owner ?? null)}`;
  return splitClaims(rows);
}

/**
 * I2, I6: claim the step of one execution, fenced by the version the caller saw. Used
 * when a worker continues an execution it just advanced, and by operators' retries;
 * a duplicate or stale caller loses on the version.
 */
export async function claimStep(
  db: RawDb,
  opts: { executionId: string; expectedVersion: number; leaseSeconds: number; owner?: string },
): Promise<Won<{ claim: StepClaim }> | Lost<ExecutionState | null> | { won: false; unclaimable: UnclaimableStep }> {
  const rows = await db.$queryRaw<ClaimRow[]>`
    -- claimStep
    WITH exec AS (
      UPDATE "WorkflowExecution" e
         SET version = e.version + 1,
             "readyAt" = ${secondsFromNow(opts.leaseSeconds)},
             "updatedAt" = now()
       WHERE e.id = ${opts.executionId}::uuid AND e.version = ${opts.expectedVersion} AND e.status = 'RUNNING'
      RETURNING e.id, e.version, e."currentStepId", e."projectId", e."workflowId", e."workflowVersionId", e."contactId", e.context
    ), ${claimedStepRows(opts.leaseSeconds, opts.owner ?? null)}`;
  if (rows.length === 0) return lost('claimStep', await readExecutionState(db, opts.executionId));
  const { claims, unclaimable } = splitClaims(rows);
  if (claims[0]) return { won: true, claim: claims[0] };
  return { won: false, unclaimable: unclaimable[0]! };
}

/**
 * I6: keep a long-running step's lease (and the execution's wake-up) from expiring. Only
 * a lease that is still live, held with the same claim token on a RUNNING step, is
 * extended: a lease that ran out belongs to whoever takes the step next (a worker's
 * re-claim, an operator's RETRY_STEP), and a stalled worker waking up late must not
 * revive it behind their back. Neither row is touched (nor locked) unless the step row
 * qualifies, so a refused renewal changes nothing.
 */
export async function renewLease(db: RawDb, claim: StepClaim, leaseSeconds: number): Promise<boolean> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    -- renewLease
    WITH exec AS (
      UPDATE "WorkflowExecution" e
         SET "readyAt" = ${secondsFromNow(leaseSeconds)}
       WHERE ${executionStillClaimed(claimValues(claim), { liveLease: true })}
      RETURNING e.id
    )
    UPDATE "StepExecution" s
       SET "leaseExpiresAt" = ${secondsFromNow(leaseSeconds)}
      FROM exec
     WHERE ${stepStillClaimed(claimValues(claim), { liveLease: true })}
    RETURNING s.id`;
  return rows.length > 0;
}

