import { Prisma, type DbTx } from '../db';
import type { MessageStatus } from '../generated/prisma/enums';
import { ACTIVE_STATUSES, executionFrom, NO_ROW, stepFrom, TRANSITIONS, type ClaimName, type Transition } from './transitions';

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

/**
 * I6: keep a long-running step's lease (and the execution's wake-up) from expiring. Only
 * a lease that is still live, held with the same claim token on a RUNNING step, is
 * extended: a lease that ran out belongs to whoever takes the step next (a worker's
 * re-claim, an operator's RETRY_STEP), and a stalled worker waking up late must not
 * revive it behind their back. Neither row is touched (nor locked) unless the step row
 * qualifies, so a refused renewal changes nothing.
 */
export async function renewLease(db: DbTx, claim: StepClaim, leaseSeconds: number): Promise<boolean> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    WITH exec AS (
      UPDATE "WorkflowExecution" e
         SET "readyAt" = now() + ${leaseSeconds}::float8 * interval '1 second'
       WHERE e.id = ${claim.executionId}::uuid AND e.version = ${claim.version} AND e.status = 'RUNNING'
         AND e."currentStepId" = ${claim.stepId}::uuid
         AND EXISTS (SELECT 1 FROM "StepExecution" h
                      WHERE h.id = ${claim.stepExecutionId}::uuid AND h."claimToken" = ${claim.claimToken}::uuid
                        AND h.status = 'RUNNING' AND h."leaseExpiresAt" >= now())
      RETURNING e.id
    )
    UPDATE "StepExecution" s
       SET "leaseExpiresAt" = now() + ${leaseSeconds}::float8 * interval '1 second'
      FROM exec
     WHERE s.id = ${claim.stepExecutionId}::uuid AND s."claimToken" = ${claim.claimToken}::uuid AND s.status = 'RUNNING'
       AND s."leaseExpiresAt" >= now()
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

/** A tracked event as a resolved wait hands it on (for the execution's context). */
export interface ResumeEvent {
  id: string;
  name: string;
  data: unknown;
  createdAt: Date;
}

export type ParkResult =
  | Won<{
      version: number;
      messageQueued: false;
      /**
       * Set when a WAIT_FOR_EVENT parked already resolved: its event had been accepted
       * since the wait began. The execution is WAITING with the wait resolved by EVENT;
       * the caller advances it (or the continuation sweeper does).
       */
      resumeEvent: ResumeEvent | null;
    }>
  | Lost<ExecutionState | null>;

/**
 * I6, I7 (and the timer of I4): park a claimed DELAY or WAIT_FOR_EVENT step. The step row
 * becomes WAITING with its dueAt (the row is the timer) and the execution WAITING, in
 * one statement fenced by version and claim token: no separate timer store to lose.
 *
 * A WAIT_FOR_EVENT (`awaitEvent` given) also looks back, in the same statement, for an
 * event of its contact with that name accepted inside its window [startedAt, dueAt) and
 * not consumed by this execution yet: one that arrived while the wait was being set up,
 * retried or redriven. It then parks already resolved by EVENT. The caller must hold
 * lockEventChannel for (contact, name) in this transaction, taken in an earlier
 * statement, so this statement's snapshot sees every event accepted before it, and an
 * event accepted after it waits for our commit and then finds the wait parked.
 */
export async function parkExecution(
  db: DbTx,
  claim: StepClaim,
  opts: { dueInSeconds: number; output: Record<string, unknown>; awaitEvent?: string | null },
): Promise<ParkResult> {
  const awaitEvent = opts.awaitEvent ?? null;
  const rows = await db.$queryRaw<{ version: number; eventId: string | null; name: string; data: unknown; createdAt: Date }[]>`
    -- parkExecution
    WITH exec AS (
      UPDATE "WorkflowExecution" e
         SET version = e.version + 1, status = 'WAITING', "readyAt" = NULL, "updatedAt" = now()
       WHERE e.id = ${claim.executionId}::uuid AND e.version = ${claim.version}
         AND e.status = 'RUNNING' AND e."currentStepId" = ${claim.stepId}::uuid
         AND EXISTS (SELECT 1 FROM "StepExecution" s
                      WHERE s.id = ${claim.stepExecutionId}::uuid AND s."claimToken" = ${claim.claimToken}::uuid
                        AND s.status = 'RUNNING')
      RETURNING e.id, e.version, e."projectId", e."contactId"
    ), match AS (
      SELECT ev.id, ev.name, ev.data, ev."createdAt"
        FROM exec
        JOIN "StepExecution" w ON w.id = ${claim.stepExecutionId}::uuid
        JOIN "Event" ev ON ev."contactId" = exec."contactId" AND ev."projectId" = exec."projectId"
       WHERE ${awaitEvent}::text IS NOT NULL AND ev.name = ${awaitEvent}::text
         AND ev."createdAt" >= w."startedAt"
         AND ev."createdAt" < now() + ${opts.dueInSeconds}::float8 * interval '1 second'
         AND ${notConsumedBy(Prisma.sql`exec.id`)}
       ORDER BY ev."createdAt", ev.id
       LIMIT 1
    ), step AS (
      UPDATE "StepExecution" s
         SET status = 'WAITING', "dueAt" = now() + ${opts.dueInSeconds}::float8 * interval '1 second',
             "leaseExpiresAt" = NULL, output = ${JSON.stringify(opts.output)}::jsonb,
             "resolvedBy" = CASE WHEN match.id IS NOT NULL THEN 'EVENT'::"WaitResolver" END,
             "resolvedAt" = CASE WHEN match.id IS NOT NULL THEN now() END,
             "resolvedBranch" = CASE WHEN match.id IS NOT NULL THEN 'EVENT' END,
             "resumeEventId" = match.id
        FROM exec LEFT JOIN match ON true
       WHERE s.id = ${claim.stepExecutionId}::uuid AND s."claimToken" = ${claim.claimToken}::uuid AND s.status = 'RUNNING'
      RETURNING s.id
    )
    SELECT exec.version, match.id AS "eventId", match.name, match.data, match."createdAt"
      FROM exec LEFT JOIN match ON true`;
  const row = rows[0];
  if (!row) return { won: false, current: await readExecutionState(db, claim.executionId) };
  const resumeEvent = row.eventId ? { id: row.eventId, name: row.name, data: row.data, createdAt: row.createdAt } : null;
  return { won: true, version: row.version, messageQueued: false, resumeEvent };
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

// Event time decides (DESIGN.md section 4): an event accepted inside a wait's window
// [startedAt, dueAt) resumes it by EVENT, however late its dispatch runs or however early
// the timer fires; one accepted at or after dueAt never does. Three parties meet on that
// rule: the event's dispatch (claimWaitsForEvent), the wait parking (parkExecution looks
// back) and the timer (claimDueWaits looks back). They serialise on one lock per
// (contact, event name), the event channel: storeEvent takes it while inserting an event
// and stamps createdAt after it, a parking wait and the timer take it before the
// statement that looks back, so a look-back can never miss an event accepted before it.

/** The event channel's advisory-lock key: one per (contact, event name). */
function eventChannelKey(contactId: Prisma.Sql, eventName: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`hashtextextended((${contactId})::text || '/' || (${eventName})::text, 7)`;
}

/** An event not yet consumed (as resumeEventId) by any wait of execution `executionId`. */
function notConsumedBy(executionId: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`NOT EXISTS (SELECT 1 FROM "StepExecution" c
                     WHERE c."executionId" = ${executionId} AND c."resumeEventId" = ev.id)`;
}

/**
 * Hold the event channel of (contact, event name) until this transaction ends; a
 * WAIT_FOR_EVENT takes it in the statement before parkExecution. Inside a transaction
 * only: outside one the lock ends with the statement.
 */
export async function lockEventChannel(db: DbTx, opts: { contactId: string; eventName: string }): Promise<void> {
  await db.$queryRaw`
    -- lockEventChannel
    SELECT pg_advisory_xact_lock(${eventChannelKey(Prisma.sql`${opts.contactId}::uuid`, Prisma.sql`${opts.eventName}::text`)})::text AS locked`;
}

export interface EventWaitClaim extends WaitClaim {
  resumeEventId: string;
}

/**
 * I4 (event time decides): an event's dispatch resolves, by EVENT, every parked wait of
 * its contact for its name whose window [startedAt, dueAt) holds the event's acceptance
 * time, in one statement. The same CAS as claimWait (WAITING, resolvedBy IS NULL, after
 * the execution row is locked, executions in id order), so it races the timer, other
 * dispatchers and operators fairly. A wait not parked yet is no loss: parkExecution
 * looks back for the event when it parks.
 */
export async function claimWaitsForEvent(
  db: DbTx,
  event: { id: string; projectId: string; contactId: string; name: string; createdAt: Date },
): Promise<EventWaitClaim[]> {
  return db.$queryRaw<EventWaitClaim[]>`
    -- claimWaitsForEvent
    WITH candidate AS (
      SELECT s.id, s."executionId" FROM "StepExecution" s
        JOIN "WorkflowExecution" e ON e.id = s."executionId" AND e."currentStepId" = s."stepId"
        JOIN "WorkflowStep" ws ON ws.id = s."stepId"
        JOIN "Event" ev ON ev.id = ${event.id}::uuid
       WHERE e."contactId" = ${event.contactId}::uuid AND e."projectId" = ${event.projectId}::uuid
         AND e.status = 'WAITING' AND s.status = 'WAITING' AND s."resolvedBy" IS NULL
         AND ws.type = 'WAIT_FOR_EVENT' AND ws.config->>'eventName' = ${event.name}
         AND s."startedAt" <= ev."createdAt" AND ev."createdAt" < s."dueAt"
         AND ${notConsumedBy(Prisma.sql`e.id`)}
    ), locked AS (
      SELECT e.id, e.status, e."currentStepId" FROM "WorkflowExecution" e
       WHERE e.id IN (SELECT "executionId" FROM candidate)
       ORDER BY e.id
       FOR UPDATE
    ), w AS (
      UPDATE "StepExecution" s
         SET "resolvedBy" = 'EVENT', "resolvedAt" = now(), "resolvedBranch" = 'EVENT', "resumeEventId" = ${event.id}::uuid
        FROM candidate, locked
       WHERE s.id = candidate.id AND locked.id = candidate."executionId"
         AND s.status = 'WAITING' AND s."resolvedBy" IS NULL
         AND locked.status = 'WAITING' AND locked."currentStepId" = s."stepId"
      RETURNING s.id, s."executionId", s."stepId"
    ), exec AS (
      UPDATE "WorkflowExecution" e
         SET version = e.version + 1, "updatedAt" = now()
        FROM w
       WHERE e.id = w."executionId" AND e.status = 'WAITING' AND e."currentStepId" = w."stepId"
      RETURNING e.id, e.version, e."workflowId"
    )
    SELECT exec.id AS "executionId", exec.version, w.id AS "stepExecutionId", w."stepId", exec."workflowId",
           'EVENT' AS "resolvedBy", 'EVENT' AS branch, ${event.id}::uuid AS "resumeEventId"
      FROM w JOIN exec ON exec.id = w."executionId"`;
}

/**
 * The timer's first statement: lock up to `limit` due, unresolved waits (step row, then
 * execution row, both SKIP LOCKED: the timer never waits on a row, so it joins no
 * deadlock) and, for a WAIT_FOR_EVENT, its event channel (try-lock: a channel busy
 * with an event being accepted is left for the next pass). Holding the channel is what
 * lets claimDueWaits, in the next statement of the same transaction, see every event
 * accepted before the deadline. Inside a transaction only.
 */
export async function lockDueWaits(db: DbTx, opts: { limit: number }): Promise<string[]> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    -- lockDueWaits
    WITH due AS (
      SELECT s.id, s."executionId", s."stepId" FROM "StepExecution" s
       WHERE s.status = 'WAITING' AND s."resolvedBy" IS NULL AND s."dueAt" <= now()
       ORDER BY s."dueAt"
       LIMIT ${opts.limit}::int
       FOR UPDATE SKIP LOCKED
    ), locked AS (
      SELECT e.id, e.status, e."currentStepId", e."contactId" FROM "WorkflowExecution" e
       WHERE e.id IN (SELECT "executionId" FROM due)
       FOR UPDATE SKIP LOCKED
    )
    SELECT due.id
      FROM due
      JOIN locked ON locked.id = due."executionId" AND locked.status = 'WAITING' AND locked."currentStepId" = due."stepId"
      JOIN "WorkflowStep" ws ON ws.id = due."stepId"
     WHERE ws.type <> 'WAIT_FOR_EVENT'
        OR pg_try_advisory_xact_lock(${eventChannelKey(Prisma.sql`locked."contactId"`, Prisma.sql`ws.config->>'eventName'`)})`;
  return rows.map((r) => r.id);
}

export interface DueWaitClaim extends WaitClaim {
  resumeEvent: ResumeEvent | null;
}

/**
 * I4: the timer's second statement, on the waits lockDueWaits locked in this
 * transaction. A DELAY elapses; a WAIT_FOR_EVENT first takes the earliest event of its
 * contact accepted inside its window [startedAt, dueAt) and not consumed by the
 * execution (its dispatch is late or failed) and resolves by EVENT; with none, it
 * resolves by TIMEOUT. The same CAS as every resolution (WAITING, resolvedBy IS NULL).
 */
export async function claimDueWaits(db: DbTx, opts: { stepExecutionIds: string[] }): Promise<DueWaitClaim[]> {
  if (opts.stepExecutionIds.length === 0) return [];
  const rows = await db.$queryRaw<(WaitClaim & { eventId: string | null; eventName: string; eventData: unknown; eventAt: Date })[]>`
    -- claimDueWaits
    WITH due AS (
      SELECT s.id, s."executionId", ws.type, m.id AS "eventId"
        FROM "StepExecution" s
        JOIN "WorkflowStep" ws ON ws.id = s."stepId"
        JOIN "WorkflowExecution" e ON e.id = s."executionId" AND e."currentStepId" = s."stepId"
        LEFT JOIN LATERAL (
          SELECT ev.id FROM "Event" ev
           WHERE ws.type = 'WAIT_FOR_EVENT' AND ev."contactId" = e."contactId" AND ev."projectId" = e."projectId"
             AND ev.name = ws.config->>'eventName'
             AND ev."createdAt" >= s."startedAt" AND ev."createdAt" < s."dueAt"
             AND ${notConsumedBy(Prisma.sql`e.id`)}
           ORDER BY ev."createdAt", ev.id
           LIMIT 1) m ON true
       WHERE s.id = ANY(${opts.stepExecutionIds}::uuid[]) AND s.status = 'WAITING' AND s."resolvedBy" IS NULL
         AND s."dueAt" <= now() AND e.status = 'WAITING'
    ), w AS (
      UPDATE "StepExecution" s
         SET "resolvedBy" = CASE WHEN due."eventId" IS NULL THEN 'TIMEOUT' ELSE 'EVENT' END::"WaitResolver",
             "resolvedAt" = now(),
             "resolvedBranch" = CASE WHEN due.type <> 'WAIT_FOR_EVENT' THEN NULL
                                     WHEN due."eventId" IS NULL THEN 'TIMEOUT' ELSE 'EVENT' END,
             "resumeEventId" = due."eventId"
        FROM due
       WHERE s.id = due.id AND s.status = 'WAITING' AND s."resolvedBy" IS NULL
      RETURNING s.id, s."executionId", s."stepId", s."resolvedBy", s."resolvedBranch", s."resumeEventId"
    ), exec AS (
      UPDATE "WorkflowExecution" e
         SET version = e.version + 1, "updatedAt" = now()
        FROM w
       WHERE e.id = w."executionId" AND e.status = 'WAITING' AND e."currentStepId" = w."stepId"
      RETURNING e.id, e.version, e."workflowId"
    )
    SELECT exec.id AS "executionId", exec.version, w.id AS "stepExecutionId", w."stepId", exec."workflowId",
           w."resolvedBy"::text AS "resolvedBy", w."resolvedBranch" AS branch,
           ev.id AS "eventId", ev.name AS "eventName", ev.data AS "eventData", ev."createdAt" AS "eventAt"
      FROM w JOIN exec ON exec.id = w."executionId"
      LEFT JOIN "Event" ev ON ev.id = w."resumeEventId"`;
  return rows.map(({ eventId, eventName, eventData, eventAt, ...wait }) => ({
    ...wait,
    resumeEvent: eventId ? { id: eventId, name: eventName, data: eventData, createdAt: eventAt } : null,
  }));
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
 * I7 (accepted means durable; I3's source events): store a tracked event, once per
 * idempotency key (ON CONFLICT DO NOTHING; the caller reads the first one back). An event
 * of a contact holds the contact's event channel while it is inserted and takes its
 * acceptance time (createdAt) after the lock: a timer holding the channel has then
 * either seen this event or decided before it was accepted (DESIGN.md section 4).
 */
export async function insertEvent(
  db: DbTx,
  e: {
    projectId: string;
    contactId: string | null;
    name: string;
    data: Record<string, unknown>;
    idempotencyKey: string | null;
    dispatchInSeconds: number;
  },
): Promise<string | null> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    -- insertEvent
    WITH channel AS MATERIALIZED (
      SELECT pg_advisory_xact_lock(${eventChannelKey(Prisma.sql`${e.contactId}::uuid`, Prisma.sql`${e.name}::text`)})
       WHERE ${e.contactId}::uuid IS NOT NULL
    )
    INSERT INTO "Event" (id, "projectId", "contactId", name, data, "idempotencyKey", "createdAt", "nextDispatchAt")
    SELECT gen_random_uuid(), ${e.projectId}::uuid, ${e.contactId}::uuid, ${e.name}::text, ${JSON.stringify(e.data)}::jsonb,
           ${e.idempotencyKey}::text, clock_timestamp(), clock_timestamp() + ${e.dispatchInSeconds}::float8 * interval '1 second'
      FROM (SELECT count(*) FROM channel) locked
    ON CONFLICT ("projectId", "idempotencyKey") DO NOTHING
    RETURNING id`;
  return rows[0]?.id ?? null;
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
  /** The message's version after the claim: the fence for recording this delivery. */
  version: number;
}

/**
 * I5: take queued messages for delivery. A message leaves QUEUED exactly once; if the
 * sender dies while SENDING it is not sent again automatically (at most once), and the
 * console shows it (MESSAGE_UNCONFIRMED) for an operator to decide.
 */
export async function claimQueuedMessages(
  db: DbTx,
  opts: { owner: string; leaseSeconds: number; limit: number },
): Promise<QueuedMessage[]> {
  return db.$queryRaw<QueuedMessage[]>`
    UPDATE "Message"
       SET status = 'SENDING', version = version + 1, "leaseOwner" = ${opts.owner},
           "leaseExpiresAt" = now() + ${opts.leaseSeconds}::float8 * interval '1 second'
     WHERE id IN (
       SELECT id FROM "Message" WHERE status = 'QUEUED'
        ORDER BY "createdAt" LIMIT ${opts.limit}::int
        FOR UPDATE SKIP LOCKED)
       AND status = 'QUEUED'
    RETURNING id, "projectId", "to", subject, body, version`;
}

/**
 * I5: record the outcome of one delivery, only by the sender that claimed it, fenced by
 * the version of its claim: after an operator marked the message sent, resent it or gave
 * up on it, a stalled sender's late write changes nothing.
 */
export async function recordDelivery(
  db: DbTx,
  opts: { messageId: string; owner: string; version: number; providerId?: string | null; error?: string | null },
): Promise<boolean> {
  const sent = !opts.error;
  const rows = await db.$queryRaw<{ id: string }[]>`
    UPDATE "Message"
       SET status = CASE WHEN ${sent} THEN 'SENT'::"MessageStatus" ELSE 'FAILED'::"MessageStatus" END,
           version = version + 1,
           "sentAt" = CASE WHEN ${sent} THEN now() END,
           "providerId" = ${opts.providerId ?? null}, error = ${opts.error ?? null},
           "leaseOwner" = NULL, "leaseExpiresAt" = NULL
     WHERE id = ${opts.messageId}::uuid AND status = 'SENDING' AND "leaseOwner" = ${opts.owner}
       AND version = ${opts.version}
    RETURNING id`;
  return rows.length > 0;
}

/** The Message.status enum, as Prisma generates it from the schema (one home). */
export type { MessageStatus };

export interface MessageState {
  id: string;
  projectId: string;
  executionId: string;
  stepExecutionId: string;
  status: MessageStatus;
  /** The message's CAS token: bumped by every change (sender or operator). */
  version: number;
  leaseOwner: string | null;
  leaseExpiresAt: Date | null;
  providerId: string | null;
  error: string | null;
  sentAt: Date | null;
}

/** The current state of a message, for telling a loser what won. */
export async function readMessageState(db: DbTx, messageId: string): Promise<MessageState | null> {
  const rows = await db.$queryRaw<MessageState[]>`
    SELECT id, "projectId", "executionId", "stepExecutionId", status::text AS status, version, "leaseOwner",
           "leaseExpiresAt", "providerId", error, "sentAt"
      FROM "Message" WHERE id = ${messageId}::uuid`;
  return rows[0] ?? null;
}

/**
 * The message repairs' guard: message `m`'s fate is for an operator to decide. It FAILED,
 * or it is SENDING and its sender's lease ran out (the sender died mid-send). A SENDING
 * message whose lease is live belongs to the sender working on it.
 */
const messageAwaitsOperator = Prisma.sql`(m.status = 'FAILED' OR (m.status = 'SENDING' AND m."leaseExpiresAt" < now()))`;

export type MessageClaimResult = Won<{ version: number; status: MessageStatus }> | Lost<MessageState | null>;

/**
 * I5, I6: an operator who checked the provider records an unconfirmed or failed email as
 * SENT, without sending it again; fenced by the message version the operator saw.
 */
export async function markMessageSent(
  db: DbTx,
  opts: { messageId: string; expectedVersion: number; providerId?: string | null },
): Promise<MessageClaimResult> {
  const rows = await db.$queryRaw<{ version: number; status: MessageStatus }[]>`
    UPDATE "Message" m
       SET status = 'SENT', version = m.version + 1, "sentAt" = COALESCE(m."sentAt", now()),
           "providerId" = COALESCE(${opts.providerId ?? null}, m."providerId"),
           "leaseOwner" = NULL, "leaseExpiresAt" = NULL
     WHERE m.id = ${opts.messageId}::uuid AND m.version = ${opts.expectedVersion} AND ${messageAwaitsOperator}
    RETURNING m.version, m.status::text AS status`;
  if (rows[0]) return { won: true, ...rows[0] };
  return { won: false, current: await readMessageState(db, opts.messageId) };
}

/**
 * I5, I6: an operator resends an unconfirmed or failed email: it goes back to QUEUED (the
 * same row, still one per step execution) and a sender delivers it once more. Fenced by
 * the version the operator saw, so two operators cannot both resend it.
 */
export async function requeueMessage(
  db: DbTx,
  opts: { messageId: string; expectedVersion: number },
): Promise<MessageClaimResult> {
  const rows = await db.$queryRaw<{ version: number; status: MessageStatus }[]>`
    UPDATE "Message" m
       SET status = 'QUEUED', version = m.version + 1, "leaseOwner" = NULL, "leaseExpiresAt" = NULL,
           "providerId" = NULL, error = NULL, "sentAt" = NULL
     WHERE m.id = ${opts.messageId}::uuid AND m.version = ${opts.expectedVersion} AND ${messageAwaitsOperator}
    RETURNING m.version, m.status::text AS status`;
  if (rows[0]) return { won: true, ...rows[0] };
  return { won: false, current: await readMessageState(db, opts.messageId) };
}

/**
 * I5, I6: an operator gives up on an unconfirmed or failed email: ABANDONED, never sent
 * again and no longer listed as stuck. Fenced by the version the operator saw.
 */
export async function abandonMessage(
  db: DbTx,
  opts: { messageId: string; expectedVersion: number },
): Promise<MessageClaimResult> {
  const rows = await db.$queryRaw<{ version: number; status: MessageStatus }[]>`
    UPDATE "Message" m
       SET status = 'ABANDONED', version = m.version + 1, "leaseOwner" = NULL, "leaseExpiresAt" = NULL
     WHERE m.id = ${opts.messageId}::uuid AND m.version = ${opts.expectedVersion} AND ${messageAwaitsOperator}
    RETURNING m.version, m.status::text AS status`;
  if (rows[0]) return { won: true, ...rows[0] };
  return { won: false, current: await readMessageState(db, opts.messageId) };
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

// The operators' claims take their from-statuses from the transitions table
// (server/engine/transitions.ts), which the repair planner reads too.

const executionStatuses = (list: readonly string[]) => Prisma.join(list.map((s) => Prisma.sql`${s}::"ExecutionStatus"`));
const stepStatuses = (list: readonly string[]) => Prisma.join(list.map((s) => Prisma.sql`${s}::"StepStatus"`));

/** Execution `e` is in one of the statuses `claim` moves from. */
function executionMayMove(claim: ClaimName): Prisma.Sql {
  return Prisma.sql`e.status IN (${executionStatuses(executionFrom(claim))})`;
}

/** Execution `e`'s current step row is one `claim` may move (or absent, where the table lists NONE). */
function stepRowMayMove(claim: ClaimName): Prisma.Sql {
  const gate = (TRANSITIONS[claim] as Transition).step;
  if (!gate?.gate) return Prisma.sql`TRUE`;
  const row = Prisma.sql`SELECT 1 FROM "StepExecution" g WHERE g."executionId" = e.id AND g."stepId" = e."currentStepId"`;
  return (gate.from as readonly string[]).includes(NO_ROW)
    ? Prisma.sql`NOT EXISTS (${row} AND g.status NOT IN (${stepStatuses(stepFrom(claim))}))`
    : Prisma.sql`EXISTS (${row} AND g.status IN (${stepStatuses(stepFrom(claim))}))`;
}

/** I1: another execution of `e`'s (workflow, contact) is active. */
const activeSiblingOf = (e: Prisma.Sql) => Prisma.sql`SELECT o.id FROM "WorkflowExecution" o
   WHERE o."workflowId" = ${e}."workflowId" AND o."contactId" = ${e}."contactId" AND o.id <> ${e}.id
     AND o.status IN (${executionStatuses(ACTIVE_STATUSES)})`;

/** The unique index of I1: at most one active execution per (workflow, contact). */
export const ACTIVE_EXECUTION_INDEX = 'WorkflowExecution_active_workflowId_contactId_key';

/** A repair refused because it would make a second active execution of a (workflow, contact) (I1). */
export interface ActiveExecutionLoss {
  won: false;
  reason: 'ACTIVE_EXECUTION';
  /** The execution that is active. */
  executionId: string;
  current: ExecutionState | null;
}

export type OperatorClaimResult = Won<{ version: number }> | Lost<ExecutionState | null> | ActiveExecutionLoss;

/** Is this error the I1 index refusing a second active execution (unique_violation)? */
export function isActiveExecutionViolation(error: unknown): boolean {
  const cause = (error as { meta?: { driverAdapterError?: { cause?: { originalCode?: string; constraint?: { index?: string } } } } } | null)
    ?.meta?.driverAdapterError?.cause;
  if (cause?.originalCode !== '23505') return false;
  return cause.constraint?.index === ACTIVE_EXECUTION_INDEX || String((error as Error).message).includes(ACTIVE_EXECUTION_INDEX);
}

/**
 * Run a claim's one statement so that I1 refusing it is a value, not an exception: the
 * statement checks for an active sibling itself, but one enrolled concurrently (its
 * insert not yet committed) is only seen by the unique index. The statement runs in its
 * own savepoint (a nested transaction; inside no transaction, a transaction of its own),
 * which alone rolls back, so the caller's transaction can still record the loss.
 */
async function unlessActiveExecution<T>(db: DbTx, statement: (db: DbTx) => Promise<T>): Promise<{ refused: false; value: T } | { refused: true }> {
  try {
    const nested = db as unknown as { $transaction<R>(fn: (tx: DbTx) => Promise<R>): Promise<R> };
    return { refused: false, value: await nested.$transaction((inner) => statement(inner)) };
  } catch (error) {
    if (isActiveExecutionViolation(error)) return { refused: true };
    throw error;
  }
}

/** The active execution of this execution's (workflow, contact), other than itself. */
export async function readActiveSibling(db: DbTx, executionId: string): Promise<string | null> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    SELECT x.id FROM "WorkflowExecution" e
      JOIN LATERAL (${activeSiblingOf(Prisma.sql`e`)} LIMIT 1) x ON true
     WHERE e.id = ${executionId}::uuid`;
  return rows[0]?.id ?? null;
}

/** The loser's answer of an operator claim that moved no row. */
async function operatorLoss(
  db: DbTx,
  executionId: string,
  activeExecutionId: string | null,
): Promise<Lost<ExecutionState | null> | ActiveExecutionLoss> {
  const current = await readExecutionState(db, executionId);
  if (activeExecutionId) return { won: false, reason: 'ACTIVE_EXECUTION', executionId: activeExecutionId, current };
  return { won: false, current };
}

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
    -- cancelExecution
    WITH exec AS (
      UPDATE "WorkflowExecution" e
         SET version = e.version + 1, status = 'CANCELLED', "readyAt" = NULL, "finishedAt" = now(),
             "exitReason" = ${opts.reason}, "updatedAt" = now()
       WHERE e.id = ${opts.executionId}::uuid AND e.version = ${opts.expectedVersion}
         AND ${executionMayMove('cancelExecution')}
      RETURNING e.id, e.version, e."currentStepId"
    ), step AS (
      UPDATE "StepExecution" s
         SET status = 'SKIPPED', "finishedAt" = now(), "leaseExpiresAt" = NULL,
             error = COALESCE(s.error, 'cancelled by an operator')
        FROM exec
       WHERE s."executionId" = exec.id AND s."stepId" = exec."currentStepId"
         AND s.status IN (${stepStatuses(stepFrom('cancelExecution'))})
      RETURNING s.id
    )
    SELECT exec.version FROM exec`;
  if (rows[0]) return { won: true, version: rows[0].version };
  return { won: false, current: await readExecutionState(db, opts.executionId) };
}

/**
 * I1, I5, I6: give the current step a new attempt: a FAILED execution, or a RUNNING one
 * whose step no live worker holds (lease expired, or never claimed), becomes due now.
 * The step row goes back to PENDING, so the next claim is attempt + 1; a SEND_EMAIL
 * step whose message exists does not send again (the message is unique per step
 * execution). A FAILED execution whose (workflow, contact) has since got another active
 * execution stays FAILED: the claim answers ACTIVE_EXECUTION naming it (I1), whether it
 * sees that execution or the unique index does.
 */
export async function retryStep(
  db: DbTx,
  opts: { executionId: string; expectedVersion: number },
): Promise<OperatorClaimResult> {
  const claimed = await unlessActiveExecution(db, (inner) => inner.$queryRaw<{ version: number | null; sibling: string | null }[]>`
    -- retryStep
    WITH target AS (
      SELECT (${activeSiblingOf(Prisma.sql`x`)} LIMIT 1) AS sibling
        FROM "WorkflowExecution" x WHERE x.id = ${opts.executionId}::uuid
    ), exec AS (
      UPDATE "WorkflowExecution" e
         SET version = e.version + 1, status = 'RUNNING', "readyAt" = now(), "finishedAt" = NULL,
             "lastError" = NULL, "updatedAt" = now()
       WHERE e.id = ${opts.executionId}::uuid AND e.version = ${opts.expectedVersion}
         AND ${executionMayMove('retryStep')}
         AND ${stepRowMayMove('retryStep')}
         AND ${noLiveWorkerHoldsStep}
         AND NOT EXISTS (${activeSiblingOf(Prisma.sql`e`)})
      RETURNING e.id, e.version, e."currentStepId"
    ), step AS (
      UPDATE "StepExecution" s
         SET status = 'PENDING', "claimToken" = NULL, "leaseExpiresAt" = NULL, "finishedAt" = NULL
        FROM exec
       WHERE s."executionId" = exec.id AND s."stepId" = exec."currentStepId"
         AND s.status IN (${stepStatuses(stepFrom('retryStep'))})
      RETURNING s.id
    )
    SELECT (SELECT version FROM exec) AS version, (SELECT sibling FROM target) AS sibling`);
  const row = claimed.refused ? null : claimed.value[0];
  if (row?.version != null) return { won: true, version: row.version };
  return operatorLoss(db, opts.executionId, claimed.refused ? await readActiveSibling(db, opts.executionId) : (row?.sibling ?? null));
}

/**
 * I1, I6: skip the current step: record it SKIPPED (creating its row if it never ran)
 * and move the execution along its plain next transition. Allowed on a FAILED
 * execution, a RUNNING one whose step no live worker holds, or one WAITING on an
 * unresolved DELAY. Moving a FAILED execution on (to RUNNING) while its (workflow,
 * contact) has another active execution answers ACTIVE_EXECUTION naming it (I1).
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
): Promise<OperatorClaimResult> {
  const claimed = await unlessActiveExecution(db, (inner) => inner.$queryRaw<{ version: number | null; sibling: string | null }[]>`
    -- skipStep
    WITH target AS (
      SELECT (${activeSiblingOf(Prisma.sql`x`)} LIMIT 1) AS sibling
        FROM "WorkflowExecution" x WHERE x.id = ${opts.executionId}::uuid AND ${opts.status}::text = 'RUNNING'
    ), exec AS (
      UPDATE "WorkflowExecution" e
         SET version = e.version + 1, status = ${opts.status}::"ExecutionStatus",
             "currentStepId" = ${opts.nextStepId}::uuid,
             "readyAt" = CASE WHEN ${opts.status} = 'RUNNING' THEN now() END,
             "finishedAt" = CASE WHEN ${opts.status} = 'RUNNING' THEN NULL ELSE now() END,
             "lastError" = NULL, "updatedAt" = now()
       WHERE e.id = ${opts.executionId}::uuid AND e.version = ${opts.expectedVersion}
         AND e."currentStepId" = ${opts.stepId}::uuid
         AND ${executionMayMove('skipStep')}
         AND ${stepRowMayMove('skipStep')}
         AND (e.status <> 'WAITING' OR EXISTS (
               SELECT 1 FROM "StepExecution" w JOIN "WorkflowStep" ws ON ws.id = w."stepId"
                WHERE w."executionId" = e.id AND w."stepId" = e."currentStepId"
                  AND ws.type = 'DELAY' AND w.status = 'WAITING' AND w."resolvedBy" IS NULL))
         AND ${noLiveWorkerHoldsStep}
         AND (${opts.status}::text <> 'RUNNING' OR NOT EXISTS (${activeSiblingOf(Prisma.sql`e`)}))
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
    SELECT (SELECT version FROM exec) AS version, (SELECT sibling FROM target) AS sibling`);
  const row = claimed.refused ? null : claimed.value[0];
  if (row?.version != null) return { won: true, version: row.version };
  return operatorLoss(db, opts.executionId, claimed.refused ? await readActiveSibling(db, opts.executionId) : (row?.sibling ?? null));
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
    -- redriveEvent
    UPDATE "Event"
       SET "deadAt" = NULL, "nextDispatchAt" = now(), "leaseOwner" = NULL, "leaseExpiresAt" = NULL
     WHERE id = ${opts.eventId}::uuid AND "processedAt" IS NULL AND "dispatchAttempts" = ${opts.expectedAttempts}
       AND ("leaseExpiresAt" IS NULL OR "leaseExpiresAt" < now())
    RETURNING id`;
  return rows.length > 0;
}
