import { Prisma, type DbTx } from '../db';

// Every state change of the engine, one named function each, one SQL statement each.
//
// The shape is always a compare-and-swap: UPDATE ... SET ..., version = version + 1
// WHERE id = $id AND version = $expected AND status = $expected_status ... RETURNING.
// Zero rows means the caller lost; it gets a typed Lost result, never an exception.
// A multi-table change is one statement with data-modifying CTEs, so it commits (or
// not) as a unit with a single round trip and a single WAL flush: fewer, shorter
// transactions per step is what makes the engine fast (DESIGN.md section 7).
//
// Lock order: a claim that touches an execution and its step row locks the execution row
// first (its UPDATE or a FOR UPDATE comes first in the statement), so no two claims can
// deadlock; the timer's batch claim takes its locks with SKIP LOCKED and never waits.
//
// The first comment line of each function names the invariant it protects.
// test/claims-lint.test.ts checks that every exported claim is one statement with a
// version or status predicate.

export type ExecutionStatus = 'RUNNING' | 'WAITING' | 'COMPLETED' | 'EXITED' | 'FAILED' | 'CANCELLED';
export type WaitResolver = 'EVENT' | 'TIMEOUT' | 'OPERATOR';

export interface ExecutionState {
  id: string;
  status: ExecutionStatus;
  version: number;
  currentStepId: string | null;
  updatedAt: Date;
}

export type Lost<C> = { won: false; current: C };
export type Won<T> = { won: true } & T;

const TERMINAL = ['COMPLETED', 'EXITED', 'FAILED', 'CANCELLED'] as const;
export function isTerminal(status: ExecutionStatus): boolean {
  return (TERMINAL as readonly string[]).includes(status);
}

/** The current state of an execution, for telling a loser what won. */
export async function readExecutionState(db: DbTx, executionId: string): Promise<ExecutionState | null> {
  const rows = await db.$queryRaw<ExecutionState[]>`
    SELECT id, status::text AS status, version, "currentStepId", "updatedAt"
      FROM "WorkflowExecution" WHERE id = ${executionId}::uuid`;
  return rows[0] ?? null;
}

// ---------------------------------------------------------------------------
// Enrollment

export interface NewExecutions {
  projectId: string;
  workflowId: string;
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
export async function insertExecutions(db: DbTx, e: NewExecutions): Promise<{ id: string; contactId: string }[]> {
  if (e.rows.length === 0) return [];
  return db.$queryRaw<{ id: string; contactId: string }[]>`
    INSERT INTO "WorkflowExecution"
           (id, "projectId", "workflowId", "contactId", status, "currentStepId", context,
            "sourceEventId", "enrollOnce", "readyAt", "startedAt", "updatedAt")
    SELECT gen_random_uuid(), ${e.projectId}::uuid, ${e.workflowId}::uuid, u.contact,
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

/**
 * The second half of both step claims, after an `exec` CTE has claimed executions: the
 * step row of each (I2: unique per execution and step) is created, or re-claimed as a new
 * attempt when its last attempt failed, an operator reset it (PENDING) or its lease ran
 * out. A step a live worker holds is never taken: the DO UPDATE's WHERE leaves it, and
 * the claim comes back without a step row (unclaimable). A re-claim keeps the row's
 * startedAt: a step (a wait, say) began at its first claim, whatever its attempts.
 */
function claimedStepRows(leaseSeconds: number): Prisma.Sql {
  return Prisma.sql`step AS (
      INSERT INTO "StepExecution" AS s
             (id, "executionId", "stepId", status, attempt, "claimToken", "leaseExpiresAt", "startedAt")
      SELECT gen_random_uuid(), exec.id, exec."currentStepId", 'RUNNING', 1, gen_random_uuid(),
             now() + ${leaseSeconds}::float8 * interval '1 second', now()
        FROM exec
      ON CONFLICT ("executionId", "stepId") DO UPDATE
         SET status = 'RUNNING', attempt = s.attempt + 1, "claimToken" = EXCLUDED."claimToken",
             "leaseExpiresAt" = EXCLUDED."leaseExpiresAt", error = NULL
       WHERE s.status IN ('PENDING', 'FAILED') OR (s.status = 'RUNNING' AND s."leaseExpiresAt" < now())
      RETURNING s.id, s."executionId", s."claimToken", s.attempt
    )
    SELECT exec.id AS "executionId", exec.version, exec."currentStepId" AS "stepId", exec."projectId",
           exec."workflowId", exec."contactId", exec.context,
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
  db: DbTx,
  opts: {
    limit: number;
    leaseSeconds: number;
    /**
     * A step whose lease ran out on this many attempts is killing its workers (a poison
     * step): leave it LEASE_EXPIRED for an operator instead of crash-looping the fleet.
     */
    maxAttempts?: number;
  },
): Promise<{ claims: StepClaim[]; unclaimable: UnclaimableStep[] }> {
  const rows = await db.$queryRaw<ClaimRow[]>`
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
             "readyAt" = now() + ${opts.leaseSeconds}::float8 * interval '1 second',
             "updatedAt" = now()
        FROM picked
       WHERE e.id = picked.id AND e.status = 'RUNNING'
      RETURNING e.id, e.version, e."currentStepId", e."projectId", e."workflowId", e."contactId", e.context
    ), ${claimedStepRows(opts.leaseSeconds)}`;
  return splitClaims(rows);
}

/**
 * I2, I6: claim the step of one execution, fenced by the version the caller saw. Used
 * when a worker continues an execution it just advanced, and by operators' retries;
 * a duplicate or stale caller loses on the version.
 */
export async function claimStep(
  db: DbTx,
  opts: { executionId: string; expectedVersion: number; leaseSeconds: number },
): Promise<Won<{ claim: StepClaim }> | Lost<ExecutionState | null> | { won: false; unclaimable: UnclaimableStep }> {
  const rows = await db.$queryRaw<ClaimRow[]>`
    WITH exec AS (
      UPDATE "WorkflowExecution" e
         SET version = e.version + 1,
             "readyAt" = now() + ${opts.leaseSeconds}::float8 * interval '1 second',
             "updatedAt" = now()
       WHERE e.id = ${opts.executionId}::uuid AND e.version = ${opts.expectedVersion} AND e.status = 'RUNNING'
      RETURNING e.id, e.version, e."currentStepId", e."projectId", e."workflowId", e."contactId", e.context
    ), ${claimedStepRows(opts.leaseSeconds)}`;
  if (rows.length === 0) return { won: false, current: await readExecutionState(db, opts.executionId) };
  const { claims, unclaimable } = splitClaims(rows);
  if (claims[0]) return { won: true, claim: claims[0] };
  return { won: false, unclaimable: unclaimable[0]! };
}

/** I6: keep a long-running step's lease (and the execution's wake-up) from expiring. */
export async function renewLease(db: DbTx, claim: StepClaim, leaseSeconds: number): Promise<boolean> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    WITH exec AS (
      UPDATE "WorkflowExecution" e
         SET "readyAt" = now() + ${leaseSeconds}::float8 * interval '1 second'
       WHERE e.id = ${claim.executionId}::uuid AND e.version = ${claim.version} AND e.status = 'RUNNING'
      RETURNING e.id
    )
    UPDATE "StepExecution" s
       SET "leaseExpiresAt" = now() + ${leaseSeconds}::float8 * interval '1 second'
      FROM exec
     WHERE s.id = ${claim.stepExecutionId}::uuid AND s."claimToken" = ${claim.claimToken}::uuid AND s.status = 'RUNNING'
    RETURNING s.id`;
  return rows.length > 0;
}

// ---------------------------------------------------------------------------
// Completing a claimed step

export interface OutgoingMessage {
  to: string;
  subject: string;
  body: string;
}

export interface Advance {
  /** Where the execution goes next; with status other than RUNNING it stays at the current step. */
  nextStepId: string;
  status: 'RUNNING' | 'COMPLETED' | 'EXITED';
  exitReason?: string | null;
  output: Record<string, unknown>;
  contextPatch?: Record<string, unknown>;
  /** Keys to merge into contact.data (null values remove the key). */
  contactPatch?: Record<string, unknown> | null;
  /** SEND_EMAIL: queued in the same statement, at most once per step execution (I5). */
  message?: OutgoingMessage | null;
}

export type CompleteResult = Won<{ version: number; messageQueued: boolean }> | Lost<ExecutionState | null>;

/**
 * I5, I6: complete a claimed step and advance the execution, in one statement. Fenced by
 * the execution's version (bumped by every claim, so a re-claim after lease expiry or
 * any other writer makes this lose) and by the step's claim token. The contact update
 * and the queued message ride along only if the fence held; the message's unique
 * stepExecutionId makes a second one impossible.
 */
export async function advanceExecution(db: DbTx, claim: StepClaim, a: Advance): Promise<CompleteResult> {
  const patch = a.contactPatch ?? null;
  const setKeys = patch ? Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== null)) : {};
  const dropKeys = patch ? Object.keys(patch).filter((k) => patch[k] === null) : [];
  const rows = await db.$queryRaw<{ version: number; steps: bigint; messages: bigint }[]>`
    WITH exec AS (
      UPDATE "WorkflowExecution" e
         SET version = e.version + 1,
             status = ${a.status}::"ExecutionStatus",
             "currentStepId" = ${a.nextStepId}::uuid,
             "readyAt" = CASE WHEN ${a.status} = 'RUNNING' THEN now() END,
             "finishedAt" = CASE WHEN ${a.status} = 'RUNNING' THEN NULL ELSE now() END,
             "exitReason" = ${a.exitReason ?? null},
             "lastError" = NULL,
             context = e.context || ${JSON.stringify(a.contextPatch ?? {})}::jsonb,
             "updatedAt" = now()
       WHERE e.id = ${claim.executionId}::uuid AND e.version = ${claim.version}
         AND e.status = 'RUNNING' AND e."currentStepId" = ${claim.stepId}::uuid
         AND EXISTS (SELECT 1 FROM "StepExecution" s
                      WHERE s.id = ${claim.stepExecutionId}::uuid AND s."claimToken" = ${claim.claimToken}::uuid
                        AND s.status = 'RUNNING')
      RETURNING e.id, e.version, e."projectId", e."contactId"
    ), step AS (
      UPDATE "StepExecution" s
         SET status = 'COMPLETED', output = ${JSON.stringify(a.output)}::jsonb,
             "finishedAt" = now(), "leaseExpiresAt" = NULL
        FROM exec
       WHERE s.id = ${claim.stepExecutionId}::uuid AND s."claimToken" = ${claim.claimToken}::uuid AND s.status = 'RUNNING'
      RETURNING s.id
    ), contact AS (
      UPDATE "Contact" c
         SET data = (c.data || ${JSON.stringify(setKeys)}::jsonb) - ${dropKeys}::text[], "updatedAt" = now()
        FROM exec
       WHERE ${patch !== null} AND c.id = exec."contactId"
      RETURNING c.id
    ), message AS (
      INSERT INTO "Message" (id, "projectId", "executionId", "stepExecutionId", "to", subject, body)
      SELECT gen_random_uuid(), exec."projectId", exec.id, ${claim.stepExecutionId}::uuid,
             ${a.message?.to ?? ''}, ${a.message?.subject ?? ''}, ${a.message?.body ?? ''}
        FROM exec
       WHERE ${a.message != null}
      ON CONFLICT ("stepExecutionId") DO NOTHING
      RETURNING id
    )
    SELECT exec.version, (SELECT count(*) FROM step) AS steps, (SELECT count(*) FROM message) AS messages
      FROM exec`;
  const row = rows[0];
  if (!row) return { won: false, current: await readExecutionState(db, claim.executionId) };
  return { won: true, version: row.version, messageQueued: Number(row.messages) > 0 };
}

/**
 * I6 (and the timer of I4): park a claimed DELAY or WAIT_FOR_EVENT step. The step row
 * becomes WAITING with its dueAt (the row is the timer) and the execution WAITING, in
 * one statement fenced by version and claim token: no separate timer store to lose.
 */
export async function parkExecution(
  db: DbTx,
  claim: StepClaim,
  opts: { dueInSeconds: number; output: Record<string, unknown> },
): Promise<CompleteResult> {
  const rows = await db.$queryRaw<{ version: number }[]>`
    WITH exec AS (
      UPDATE "WorkflowExecution" e
         SET version = e.version + 1, status = 'WAITING', "readyAt" = NULL, "updatedAt" = now()
       WHERE e.id = ${claim.executionId}::uuid AND e.version = ${claim.version}
         AND e.status = 'RUNNING' AND e."currentStepId" = ${claim.stepId}::uuid
         AND EXISTS (SELECT 1 FROM "StepExecution" s
                      WHERE s.id = ${claim.stepExecutionId}::uuid AND s."claimToken" = ${claim.claimToken}::uuid
                        AND s.status = 'RUNNING')
      RETURNING e.id, e.version
    ), step AS (
      UPDATE "StepExecution" s
         SET status = 'WAITING', "dueAt" = now() + ${opts.dueInSeconds}::float8 * interval '1 second',
             "leaseExpiresAt" = NULL, output = ${JSON.stringify(opts.output)}::jsonb
        FROM exec
       WHERE s.id = ${claim.stepExecutionId}::uuid AND s."claimToken" = ${claim.claimToken}::uuid AND s.status = 'RUNNING'
      RETURNING s.id
    )
    SELECT exec.version FROM exec`;
  const row = rows[0];
  if (!row) return { won: false, current: await readExecutionState(db, claim.executionId) };
  return { won: true, version: row.version, messageQueued: false };
}

/**
 * I6: record a failed attempt. With attempts left the execution stays RUNNING and wakes
 * after a backoff (the next claim re-claims the FAILED step row as a new attempt);
 * otherwise the execution becomes FAILED. Fenced like every completion.
 */
export async function failStep(
  db: DbTx,
  claim: StepClaim,
  opts: { error: string; retryInSeconds: number | null },
): Promise<CompleteResult> {
  const final = opts.retryInSeconds === null;
  const rows = await db.$queryRaw<{ version: number }[]>`
    WITH exec AS (
      UPDATE "WorkflowExecution" e
         SET version = e.version + 1,
             status = CASE WHEN ${final} THEN 'FAILED'::"ExecutionStatus" ELSE 'RUNNING'::"ExecutionStatus" END,
             "readyAt" = CASE WHEN ${final} THEN NULL ELSE now() + ${opts.retryInSeconds ?? 0}::float8 * interval '1 second' END,
             "finishedAt" = CASE WHEN ${final} THEN now() END,
             "lastError" = ${opts.error},
             "updatedAt" = now()
       WHERE e.id = ${claim.executionId}::uuid AND e.version = ${claim.version}
         AND e.status = 'RUNNING' AND e."currentStepId" = ${claim.stepId}::uuid
         AND EXISTS (SELECT 1 FROM "StepExecution" s
                      WHERE s.id = ${claim.stepExecutionId}::uuid AND s."claimToken" = ${claim.claimToken}::uuid
                        AND s.status = 'RUNNING')
      RETURNING e.id, e.version
    ), step AS (
      UPDATE "StepExecution" s
         SET status = 'FAILED', error = ${opts.error}, "finishedAt" = now(), "leaseExpiresAt" = NULL
        FROM exec
       WHERE s.id = ${claim.stepExecutionId}::uuid AND s."claimToken" = ${claim.claimToken}::uuid AND s.status = 'RUNNING'
      RETURNING s.id
    )
    SELECT exec.version FROM exec`;
  const row = rows[0];
  if (!row) return { won: false, current: await readExecutionState(db, claim.executionId) };
  return { won: true, version: row.version, messageQueued: false };
}

/**
 * I6: an execution was claimed but its step row was in no claimable state (e.g. written
 * by hand). Fail it visibly rather than re-claiming it forever.
 */
export async function failUnclaimable(db: DbTx, u: UnclaimableStep, error: string): Promise<boolean> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    UPDATE "WorkflowExecution"
       SET version = version + 1, status = 'FAILED', "readyAt" = NULL, "finishedAt" = now(),
           "lastError" = ${error}, "updatedAt" = now()
     WHERE id = ${u.executionId}::uuid AND version = ${u.version} AND status = 'RUNNING'
    RETURNING id`;
  return rows.length > 0;
}

// ---------------------------------------------------------------------------
// Waits: event, timeout and operator compete for the same claim (I4)

export interface WaitClaim {
  executionId: string;
  version: number;
  stepExecutionId: string;
  stepId: string;
  workflowId: string;
  resolvedBy: WaitResolver;
  branch: string | null;
}

export interface WaitState {
  stepExecutionId: string;
  executionId: string;
  status: string;
  resolvedBy: WaitResolver | null;
  resolvedAt: Date | null;
  resolvedBranch: string | null;
  resumeEventId: string | null;
  dueAt: Date | null;
  execution: ExecutionState | null;
}

export async function readWaitState(db: DbTx, stepExecutionId: string): Promise<WaitState | null> {
  const rows = await db.$queryRaw<Omit<WaitState, 'execution'>[]>`
    SELECT id AS "stepExecutionId", "executionId", status::text AS status, "resolvedBy"::text AS "resolvedBy",
           "resolvedAt", "resolvedBranch", "resumeEventId", "dueAt"
      FROM "StepExecution" WHERE id = ${stepExecutionId}::uuid`;
  const row = rows[0];
  if (!row) return null;
  return { ...row, execution: await readExecutionState(db, row.executionId) };
}

/**
 * I4: resolve a wait at most once. The event path, the timeout path and operators all
 * call this same CAS on the WAITING step row (resolvedBy IS NULL); the loser changes
 * nothing and reads who won and when. A timeout cannot fire before the row's dueAt, and
 * with expectedVersion the caller also loses if the execution moved since it looked.
 * Bumps the execution's version: resolving is a state change.
 */
export async function claimWait(
  db: DbTx,
  opts: {
    stepExecutionId: string;
    resolvedBy: WaitResolver;
    branch: string | null;
    eventId?: string | null;
    expectedVersion?: number | null;
  },
): Promise<Won<{ wait: WaitClaim }> | Lost<WaitState | null>> {
  // Lock order, as in every claim: the execution row first, then its step row, so two
  // claims can never deadlock. FOR UPDATE hands back the execution as it is once any
  // writer ahead of us has committed; the step row is re-checked the same way.
  const rows = await db.$queryRaw<WaitClaim[]>`
    WITH locked AS (
      SELECT e.id, e.version, e.status, e."currentStepId" FROM "WorkflowExecution" e
       WHERE e.id = (SELECT "executionId" FROM "StepExecution" WHERE id = ${opts.stepExecutionId}::uuid)
       FOR UPDATE
    ), w AS (
      UPDATE "StepExecution" s
         SET "resolvedBy" = ${opts.resolvedBy}::"WaitResolver", "resolvedAt" = now(),
             -- A DELAY has one way on (the plain next), whatever the caller named.
             "resolvedBranch" = CASE WHEN ws.type = 'DELAY' THEN NULL ELSE ${opts.branch} END,
             "resumeEventId" = ${opts.eventId ?? null}::uuid
        FROM locked, "WorkflowStep" ws
       WHERE s.id = ${opts.stepExecutionId}::uuid AND s.status = 'WAITING' AND s."resolvedBy" IS NULL
         AND (${opts.resolvedBy} <> 'TIMEOUT' OR s."dueAt" <= now())
         AND s."executionId" = locked.id AND locked.status = 'WAITING' AND locked."currentStepId" = s."stepId"
         AND ws.id = s."stepId"
         AND (${opts.expectedVersion ?? null}::int IS NULL OR locked.version = ${opts.expectedVersion ?? null}::int)
      RETURNING s.id, s."executionId", s."stepId", s."resolvedBy", s."resolvedBranch"
    ), exec AS (
      UPDATE "WorkflowExecution" e
         SET version = e.version + 1, "updatedAt" = now()
        FROM w
       WHERE e.id = w."executionId" AND e.status = 'WAITING' AND e."currentStepId" = w."stepId"
      RETURNING e.id, e.version, e."workflowId"
    )
    SELECT exec.id AS "executionId", exec.version, w.id AS "stepExecutionId", w."stepId", exec."workflowId",
           w."resolvedBy"::text AS "resolvedBy", w."resolvedBranch" AS branch
      FROM w JOIN exec ON exec.id = w."executionId"`;
  if (rows[0]) return { won: true, wait: rows[0] };
  return { won: false, current: await readWaitState(db, opts.stepExecutionId) };
}

/**
 * I4: the timer. Resolve up to `limit` waits whose dueAt has passed by TIMEOUT, skipping
 * rows another worker holds; an event resolving the same row concurrently either wins
 * first (the row no longer matches) or waits for this statement and then loses.
 */
export async function claimDueWaits(db: DbTx, opts: { limit: number }): Promise<WaitClaim[]> {
  // Both locks are taken with SKIP LOCKED: the timer never waits on a row, so it cannot
  // join a deadlock with the claims that lock an execution and then wait for its step.
  return db.$queryRaw<WaitClaim[]>`
    WITH due AS (
      SELECT s.id, s."executionId" FROM "StepExecution" s
       WHERE s.status = 'WAITING' AND s."resolvedBy" IS NULL AND s."dueAt" <= now()
       ORDER BY s."dueAt"
       LIMIT ${opts.limit}::int
       FOR UPDATE SKIP LOCKED
    ), locked AS (
      SELECT e.id, e.status, e."currentStepId" FROM "WorkflowExecution" e
       WHERE e.id IN (SELECT "executionId" FROM due)
       FOR UPDATE SKIP LOCKED
    ), w AS (
      UPDATE "StepExecution" s
         SET "resolvedBy" = 'TIMEOUT', "resolvedAt" = now(),
             "resolvedBranch" = CASE WHEN ws.type = 'WAIT_FOR_EVENT' THEN 'TIMEOUT' END
        FROM due, locked, "WorkflowStep" ws
       WHERE s.id = due.id AND locked.id = due."executionId" AND ws.id = s."stepId"
         AND s.status = 'WAITING' AND s."resolvedBy" IS NULL
         AND locked.status = 'WAITING' AND locked."currentStepId" = s."stepId"
      RETURNING s.id, s."executionId", s."stepId", s."resolvedBranch"
    ), exec AS (
      UPDATE "WorkflowExecution" e
         SET version = e.version + 1, "updatedAt" = now()
        FROM w
       WHERE e.id = w."executionId" AND e.status = 'WAITING' AND e."currentStepId" = w."stepId"
      RETURNING e.id, e.version, e."workflowId"
    )
    SELECT exec.id AS "executionId", exec.version, w.id AS "stepExecutionId", w."stepId", exec."workflowId",
           'TIMEOUT' AS "resolvedBy", w."resolvedBranch" AS branch
      FROM w JOIN exec ON exec.id = w."executionId"`;
}

/**
 * I6 (continuations survive crashes): advance an execution past a resolved wait. Fenced
 * by the version seen after the wait was claimed; re-running it after the execution has
 * moved on changes nothing, so a delivered step is never replayed.
 */
export async function advanceFromWait(
  db: DbTx,
  opts: {
    executionId: string;
    expectedVersion: number;
    stepExecutionId: string;
    waitStepId: string;
    nextStepId: string;
    status: 'RUNNING' | 'COMPLETED';
    contextPatch?: Record<string, unknown>;
  },
): Promise<Won<{ version: number }> | Lost<ExecutionState | null>> {
  const rows = await db.$queryRaw<{ version: number }[]>`
    WITH exec AS (
      UPDATE "WorkflowExecution" e
         SET version = e.version + 1,
             status = ${opts.status}::"ExecutionStatus",
             "currentStepId" = ${opts.nextStepId}::uuid,
             "readyAt" = CASE WHEN ${opts.status} = 'RUNNING' THEN now() END,
             "finishedAt" = CASE WHEN ${opts.status} = 'RUNNING' THEN NULL ELSE now() END,
             context = e.context || ${JSON.stringify(opts.contextPatch ?? {})}::jsonb,
             "updatedAt" = now()
       WHERE e.id = ${opts.executionId}::uuid AND e.version = ${opts.expectedVersion}
         AND e.status = 'WAITING' AND e."currentStepId" = ${opts.waitStepId}::uuid
         AND EXISTS (SELECT 1 FROM "StepExecution" s
                      WHERE s.id = ${opts.stepExecutionId}::uuid AND s.status = 'WAITING' AND s."resolvedBy" IS NOT NULL)
      RETURNING e.id, e.version
    ), step AS (
      UPDATE "StepExecution" s
         SET status = 'COMPLETED', "finishedAt" = now(),
             output = COALESCE(s.output, '{}'::jsonb)
                      || jsonb_build_object('resolvedBy', s."resolvedBy", 'branch', s."resolvedBranch")
        FROM exec
       WHERE s.id = ${opts.stepExecutionId}::uuid AND s.status = 'WAITING' AND s."resolvedBy" IS NOT NULL
      RETURNING s.id
    )
    SELECT exec.version FROM exec`;
  if (rows[0]) return { won: true, version: rows[0].version };
  return { won: false, current: await readExecutionState(db, opts.executionId) };
}

export interface PendingContinuation {
  executionId: string;
  version: number;
  stepExecutionId: string;
  stepId: string;
  workflowId: string;
  branch: string | null;
  resumeEventId: string | null;
}

/** Waits resolved at least `olderThanSeconds` ago whose execution has not moved past them. */
export async function findPendingContinuations(
  db: DbTx,
  opts: { olderThanSeconds: number; limit: number },
): Promise<PendingContinuation[]> {
  return db.$queryRaw<PendingContinuation[]>`
    SELECT e.id AS "executionId", e.version, s.id AS "stepExecutionId", s."stepId", e."workflowId",
           s."resolvedBranch" AS branch, s."resumeEventId"
      FROM "StepExecution" s
      JOIN "WorkflowExecution" e ON e.id = s."executionId"
     WHERE s.status = 'WAITING' AND s."resolvedBy" IS NOT NULL
       AND s."resolvedAt" <= now() - ${opts.olderThanSeconds}::float8 * interval '1 second'
       AND e.status = 'WAITING' AND e."currentStepId" = s."stepId"
     ORDER BY s."resolvedAt"
     LIMIT ${opts.limit}::int`;
}

// ---------------------------------------------------------------------------
// Tracked events: the outbox

export interface EventRow {
  id: string;
  projectId: string;
  contactId: string | null;
  name: string;
  data: Record<string, unknown>;
  createdAt: Date;
  dispatchAttempts: number;
}

/**
 * I7 (nothing accepted is lost): take the dispatch lease of one pending event. A second
 * dispatcher loses until the lease expires, so a crash mid-dispatch is retried later.
 */
export async function claimEventDispatch(
  db: DbTx,
  opts: { eventId: string; owner: string; leaseSeconds: number },
): Promise<EventRow | null> {
  const rows = await db.$queryRaw<EventRow[]>`
    UPDATE "Event"
       SET "leaseOwner" = ${opts.owner}, "leaseExpiresAt" = now() + ${opts.leaseSeconds}::float8 * interval '1 second',
           "dispatchAttempts" = "dispatchAttempts" + 1
     WHERE id = ${opts.eventId}::uuid AND "processedAt" IS NULL AND "deadAt" IS NULL
       AND ("leaseExpiresAt" IS NULL OR "leaseExpiresAt" < now())
    RETURNING id, "projectId", "contactId", name, data, "createdAt", "dispatchAttempts"`;
  return rows[0] ?? null;
}

/** I7: the sweeper's batch form: events due for (re)dispatch whose lease is free. */
export async function claimDueEvents(
  db: DbTx,
  opts: { owner: string; leaseSeconds: number; limit: number },
): Promise<EventRow[]> {
  return db.$queryRaw<EventRow[]>`
    UPDATE "Event"
       SET "leaseOwner" = ${opts.owner}, "leaseExpiresAt" = now() + ${opts.leaseSeconds}::float8 * interval '1 second',
           "dispatchAttempts" = "dispatchAttempts" + 1
     WHERE id IN (
       SELECT id FROM "Event"
        WHERE "processedAt" IS NULL AND "deadAt" IS NULL AND "nextDispatchAt" <= now()
          AND ("leaseExpiresAt" IS NULL OR "leaseExpiresAt" < now())
        ORDER BY "nextDispatchAt"
        LIMIT ${opts.limit}::int
        FOR UPDATE SKIP LOCKED)
       AND "processedAt" IS NULL AND "deadAt" IS NULL
    RETURNING id, "projectId", "contactId", name, data, "createdAt", "dispatchAttempts"`;
}

/** I7: mark a dispatched event processed, only by the lease holder. */
export async function completeEventDispatch(db: DbTx, opts: { eventId: string; owner: string }): Promise<boolean> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    UPDATE "Event"
       SET "processedAt" = now(), "leaseOwner" = NULL, "leaseExpiresAt" = NULL, "lastError" = NULL
     WHERE id = ${opts.eventId}::uuid AND "leaseOwner" = ${opts.owner} AND "processedAt" IS NULL
    RETURNING id`;
  return rows.length > 0;
}

/**
 * I7: a failed dispatch backs off exponentially (2^attempts seconds, at most an hour) and
 * is dead-lettered after maxAttempts, where the console shows it as EVENT_DEAD.
 */
export async function failEventDispatch(
  db: DbTx,
  opts: { eventId: string; owner: string; error: string; maxAttempts: number },
): Promise<{ dead: boolean } | null> {
  const rows = await db.$queryRaw<{ dead: boolean }[]>`
    UPDATE "Event"
       SET "lastError" = ${opts.error}, "leaseOwner" = NULL, "leaseExpiresAt" = NULL,
           "nextDispatchAt" = now() + least(power(2, "dispatchAttempts"), 3600) * interval '1 second',
           "deadAt" = CASE WHEN "dispatchAttempts" >= ${opts.maxAttempts} THEN now() END
     WHERE id = ${opts.eventId}::uuid AND "leaseOwner" = ${opts.owner} AND "processedAt" IS NULL
    RETURNING "deadAt" IS NOT NULL AS dead`;
  return rows[0] ?? null;
}

// ---------------------------------------------------------------------------
// The email outbox

export interface QueuedMessage {
  id: string;
  projectId: string;
  to: string;
  subject: string;
  body: string;
}

/**
 * I5: take queued messages for delivery. A message leaves QUEUED exactly once; if the
 * sender dies while SENDING it is not sent again automatically (at most once), and the
 * console shows it for an operator to decide.
 */
export async function claimQueuedMessages(
  db: DbTx,
  opts: { owner: string; leaseSeconds: number; limit: number },
): Promise<QueuedMessage[]> {
  return db.$queryRaw<QueuedMessage[]>`
    UPDATE "Message"
       SET status = 'SENDING', "leaseOwner" = ${opts.owner},
           "leaseExpiresAt" = now() + ${opts.leaseSeconds}::float8 * interval '1 second'
     WHERE id IN (
       SELECT id FROM "Message" WHERE status = 'QUEUED'
        ORDER BY "createdAt" LIMIT ${opts.limit}::int
        FOR UPDATE SKIP LOCKED)
       AND status = 'QUEUED'
    RETURNING id, "projectId", "to", subject, body`;
}

/** I5: record the outcome of one delivery, only by the sender that claimed it. */
export async function recordDelivery(
  db: DbTx,
  opts: { messageId: string; owner: string; providerId?: string | null; error?: string | null },
): Promise<boolean> {
  const sent = !opts.error;
  const rows = await db.$queryRaw<{ id: string }[]>`
    UPDATE "Message"
       SET status = CASE WHEN ${sent} THEN 'SENT'::"MessageStatus" ELSE 'FAILED'::"MessageStatus" END,
           "sentAt" = CASE WHEN ${sent} THEN now() END,
           "providerId" = ${opts.providerId ?? null}, error = ${opts.error ?? null},
           "leaseOwner" = NULL, "leaseExpiresAt" = NULL
     WHERE id = ${opts.messageId}::uuid AND status = 'SENDING' AND "leaseOwner" = ${opts.owner}
    RETURNING id`;
  return rows.length > 0;
}

// ---------------------------------------------------------------------------
// Operators' claims (server/repair): the same fences as workers', carrying the version
// the operator saw in the preview. A step a live worker holds (unexpired lease) is never
// taken from it.

/**
 * The operators' claims' guard: execution `e`'s current step is not held by a live worker
 * (a RUNNING step row whose lease has not run out). Taking such a step would race the
 * worker finishing it.
 */
const noLiveWorkerHoldsStep = Prisma.sql`NOT EXISTS (
  SELECT 1 FROM "StepExecution" h
   WHERE h."executionId" = e.id AND h."stepId" = e."currentStepId"
     AND h.status = 'RUNNING' AND h."leaseExpiresAt" >= now())`;

/**
 * I6, I8: cancel an active or failed execution, fenced by the version the operator saw.
 * Its current step row, if still open, becomes SKIPPED in the same statement, so a wait
 * cannot be resolved afterwards and a worker's completion of it loses.
 */
export async function cancelExecution(
  db: DbTx,
  opts: { executionId: string; expectedVersion: number; reason: string },
): Promise<Won<{ version: number }> | Lost<ExecutionState | null>> {
  const rows = await db.$queryRaw<{ version: number }[]>`
    WITH exec AS (
      UPDATE "WorkflowExecution" e
         SET version = e.version + 1, status = 'CANCELLED', "readyAt" = NULL, "finishedAt" = now(),
             "exitReason" = ${opts.reason}, "updatedAt" = now()
       WHERE e.id = ${opts.executionId}::uuid AND e.version = ${opts.expectedVersion}
         AND e.status IN ('RUNNING', 'WAITING', 'FAILED')
      RETURNING e.id, e.version, e."currentStepId"
    ), step AS (
      UPDATE "StepExecution" s
         SET status = 'SKIPPED', "finishedAt" = now(), "leaseExpiresAt" = NULL,
             error = COALESCE(s.error, 'cancelled by an operator')
        FROM exec
       WHERE s."executionId" = exec.id AND s."stepId" = exec."currentStepId"
         AND s.status IN ('PENDING', 'RUNNING', 'WAITING', 'FAILED')
      RETURNING s.id
    )
    SELECT exec.version FROM exec`;
  if (rows[0]) return { won: true, version: rows[0].version };
  return { won: false, current: await readExecutionState(db, opts.executionId) };
}

/**
 * I5, I6: give the current step a new attempt: a FAILED execution, or a RUNNING one
 * whose step no live worker holds (lease expired, or never claimed), becomes due now.
 * The step row goes back to PENDING, so the next claim is attempt + 1; a SEND_EMAIL
 * step whose message exists does not send again (the message is unique per step
 * execution).
 */
export async function retryStep(
  db: DbTx,
  opts: { executionId: string; expectedVersion: number },
): Promise<Won<{ version: number }> | Lost<ExecutionState | null>> {
  const rows = await db.$queryRaw<{ version: number }[]>`
    WITH exec AS (
      UPDATE "WorkflowExecution" e
         SET version = e.version + 1, status = 'RUNNING', "readyAt" = now(), "finishedAt" = NULL,
             "lastError" = NULL, "updatedAt" = now()
       WHERE e.id = ${opts.executionId}::uuid AND e.version = ${opts.expectedVersion}
         AND e.status IN ('RUNNING', 'FAILED')
         AND ${noLiveWorkerHoldsStep}
      RETURNING e.id, e.version, e."currentStepId"
    ), step AS (
      UPDATE "StepExecution" s
         SET status = 'PENDING', "claimToken" = NULL, "leaseExpiresAt" = NULL, "finishedAt" = NULL
        FROM exec
       WHERE s."executionId" = exec.id AND s."stepId" = exec."currentStepId"
         AND (s.status = 'FAILED' OR (s.status = 'RUNNING' AND s."leaseExpiresAt" < now()))
      RETURNING s.id
    )
    SELECT exec.version FROM exec`;
  if (rows[0]) return { won: true, version: rows[0].version };
  return { won: false, current: await readExecutionState(db, opts.executionId) };
}

/**
 * I6: skip the current step: record it SKIPPED (creating its row if it never ran) and
 * move the execution along its plain next transition. Allowed on a FAILED execution, a
 * RUNNING one whose step no live worker holds, or one WAITING on an unresolved DELAY.
 */
export async function skipStep(
  db: DbTx,
  opts: {
    executionId: string;
    expectedVersion: number;
    stepId: string;
    nextStepId: string;
    status: 'RUNNING' | 'COMPLETED';
    note: string;
  },
): Promise<Won<{ version: number }> | Lost<ExecutionState | null>> {
  const rows = await db.$queryRaw<{ version: number }[]>`
    WITH exec AS (
      UPDATE "WorkflowExecution" e
         SET version = e.version + 1, status = ${opts.status}::"ExecutionStatus",
             "currentStepId" = ${opts.nextStepId}::uuid,
             "readyAt" = CASE WHEN ${opts.status} = 'RUNNING' THEN now() END,
             "finishedAt" = CASE WHEN ${opts.status} = 'RUNNING' THEN NULL ELSE now() END,
             "lastError" = NULL, "updatedAt" = now()
       WHERE e.id = ${opts.executionId}::uuid AND e.version = ${opts.expectedVersion}
         AND e."currentStepId" = ${opts.stepId}::uuid
         AND (e.status IN ('RUNNING', 'FAILED') OR (e.status = 'WAITING' AND EXISTS (
               SELECT 1 FROM "StepExecution" w JOIN "WorkflowStep" ws ON ws.id = w."stepId"
                WHERE w."executionId" = e.id AND w."stepId" = e."currentStepId"
                  AND ws.type = 'DELAY' AND w.status = 'WAITING' AND w."resolvedBy" IS NULL)))
         AND ${noLiveWorkerHoldsStep}
      RETURNING e.id, e.version
    ), step AS (
      INSERT INTO "StepExecution" AS s (id, "executionId", "stepId", status, attempt, output, "startedAt", "finishedAt")
      SELECT gen_random_uuid(), exec.id, ${opts.stepId}::uuid, 'SKIPPED', 1,
             jsonb_build_object('skipped', ${opts.note}::text), now(), now()
        FROM exec
      ON CONFLICT ("executionId", "stepId") DO UPDATE
         SET status = 'SKIPPED', "finishedAt" = now(), "leaseExpiresAt" = NULL, "claimToken" = NULL,
             output = COALESCE(s.output, '{}'::jsonb) || jsonb_build_object('skipped', ${opts.note}::text)
      RETURNING s.id
    )
    SELECT exec.version FROM exec`;
  if (rows[0]) return { won: true, version: rows[0].version };
  return { won: false, current: await readExecutionState(db, opts.executionId) };
}

/**
 * I7: send a dead-lettered or stuck-pending event round again: due now, lease freed,
 * fenced by the attempt count the operator saw (an event's version).
 */
export async function redriveEvent(
  db: DbTx,
  opts: { eventId: string; expectedAttempts: number },
): Promise<boolean> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    UPDATE "Event"
       SET "deadAt" = NULL, "nextDispatchAt" = now(), "leaseOwner" = NULL, "leaseExpiresAt" = NULL
     WHERE id = ${opts.eventId}::uuid AND "processedAt" IS NULL AND "dispatchAttempts" = ${opts.expectedAttempts}
       AND ("leaseExpiresAt" IS NULL OR "leaseExpiresAt" < now())
    RETURNING id`;
  return rows.length > 0;
}
