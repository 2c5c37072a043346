import { Prisma, type DbTx } from '../../db';
import { readExecutionState, type ExecutionState, type StepClaim, type UnclaimableStep } from './execution';
import { executionStillClaimed, moveTo, notConsumedBy, secondsFromNow, stepRowClaim, stepStillClaimed } from './fragments';
import type { Lost, Won } from './index';

// Completing a claimed step, the workers' side: advance the execution, park it at a wait,
// or record a failed attempt. Each is one statement fenced by the claim it completes
// (fragments.ts, the completion fence), so a worker whose claim was superseded (its lease
// ran out and another took the step, or an operator moved the execution) changes nothing.

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
  /**
   * With status RUNNING: claim the next step in the same statement, as claimStep would
   * with the version this advance writes (so the execution's version moves by two, as
   * it does when the two are separate statements).
   */
  claimNext?: { leaseSeconds: number; owner: string | null } | null;
  /**
   * A DELAY whose time is up as it is claimed (DELAY 0): it goes on at once instead of
   * parking and waiting for the timer, and its step row records what that round trip
   * would have: due and resolved by TIMEOUT now. The output carries the resolution too.
   */
  elapsed?: boolean;
}

export type CompleteResult =
  | Won<{
      version: number;
      messageQueued: boolean;
      /** The next step, claimed (Advance.claimNext); null if not asked for or its step row was not claimable. */
      next?: StepClaim | null;
    }>
  | Lost<ExecutionState | null>;

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
  const chain = a.status === 'RUNNING' && a.claimNext ? a.claimNext : null;
  const rows = await db.$queryRaw<(ChainedClaimRow & { steps: bigint; messages: bigint })[]>`
    -- advanceExecution
    WITH exec AS (
      UPDATE "WorkflowExecution" e
         SET version = e.version + ${chain ? 2 : 1}::int,
             ${moveTo(a.status, a.nextStepId, chain ? secondsFromNow(chain.leaseSeconds) : undefined)},
             "exitReason" = ${a.exitReason ?? null},
             "lastError" = NULL,
             context = e.context || ${JSON.stringify(a.contextPatch ?? {})}::jsonb,
             "updatedAt" = now()
       WHERE ${executionStillClaimed(claim)}
      RETURNING e.id, e.version, e."projectId", e."contactId", e."workflowId", e."currentStepId", e.context
    ), step AS (
      UPDATE "StepExecution" s
         SET status = 'COMPLETED', output = ${JSON.stringify(a.output)}::jsonb,
             "finishedAt" = now(), "leaseExpiresAt" = NULL,
             "dueAt" = CASE WHEN ${a.elapsed ?? false} THEN now() ELSE s."dueAt" END,
             "resolvedBy" = CASE WHEN ${a.elapsed ?? false} THEN 'TIMEOUT'::"WaitResolver" ELSE s."resolvedBy" END,
             "resolvedAt" = CASE WHEN ${a.elapsed ?? false} THEN now() ELSE s."resolvedAt" END
        FROM exec
       WHERE ${stepStillClaimed(claim)}
      RETURNING s.id
    ), contact AS (
      UPDATE "Contact" c
         SET data = (c.data || ${JSON.stringify(setKeys)}::jsonb) - ${dropKeys}::text[], "updatedAt" = now()
        FROM exec
       WHERE ${patch !== null} AND c.id = exec."contactId"
      RETURNING c.id, c.data
    ), message AS (
      INSERT INTO "Message" (id, "projectId", "executionId", "stepExecutionId", "to", subject, body)
      SELECT gen_random_uuid(), exec."projectId", exec.id, ${claim.stepExecutionId}::uuid,
             ${a.message?.to ?? ''}, ${a.message?.subject ?? ''}, ${a.message?.body ?? ''}
        FROM exec
       WHERE ${a.message != null}
      ON CONFLICT ("stepExecutionId") DO NOTHING
      RETURNING id
    ), next AS (
      ${stepRowClaim(chain?.leaseSeconds ?? 0, chain?.owner ?? null, Prisma.sql`${chain !== null}`)}
    )
    SELECT exec.version, (SELECT count(*) FROM step) AS steps, (SELECT count(*) FROM message) AS messages,
           next.id AS "stepExecutionId", next."claimToken", next.attempt, exec."currentStepId" AS "stepId",
           exec."projectId", exec."workflowId", exec."contactId", exec.context,
           c.email AS "contactEmail", COALESCE(contact.data, c.data) AS "contactData", c.subscribed AS "contactSubscribed"
      FROM exec
      LEFT JOIN next ON next."executionId" = exec.id
      LEFT JOIN contact ON contact.id = exec."contactId"
      JOIN "Contact" c ON c.id = exec."contactId"`;
  const row = rows[0];
  if (!row) return { won: false, current: await readExecutionState(db, claim.executionId) };
  const { steps: _steps, messages, ...next } = row;
  const claimed = chain && next.stepExecutionId && next.claimToken && next.attempt !== null ? ({ ...next, executionId: claim.executionId } as StepClaim) : null;
  return { won: true, version: row.version, messageQueued: Number(messages) > 0, next: claimed };
}

/** A row of advanceExecution: its version, and the next step's claim when one was asked for. */
type ChainedClaimRow = Omit<StepClaim, 'executionId' | 'stepExecutionId' | 'claimToken' | 'attempt'> & {
  stepExecutionId: string | null;
  claimToken: string | null;
  attempt: number | null;
};

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
       WHERE ${executionStillClaimed(claim)}
      RETURNING e.id, e.version, e."projectId", e."contactId"
    ), match AS (
      SELECT ev.id, ev.name, ev.data, ev."createdAt"
        FROM exec
        JOIN "StepExecution" w ON w.id = ${claim.stepExecutionId}::uuid
        JOIN "Event" ev ON ev."contactId" = exec."contactId" AND ev."projectId" = exec."projectId"
       WHERE ${awaitEvent}::text IS NOT NULL AND ev.name = ${awaitEvent}::text
         AND ev."createdAt" >= w."startedAt"
         AND ev."createdAt" < ${secondsFromNow(opts.dueInSeconds)}
         AND ${notConsumedBy(Prisma.sql`exec.id`)}
       ORDER BY ev."createdAt", ev.id
       LIMIT 1
    ), step AS (
      UPDATE "StepExecution" s
         SET status = 'WAITING', "dueAt" = ${secondsFromNow(opts.dueInSeconds)},
             "leaseExpiresAt" = NULL, output = ${JSON.stringify(opts.output)}::jsonb,
             "resolvedBy" = CASE WHEN match.id IS NOT NULL THEN 'EVENT'::"WaitResolver" END,
             "resolvedAt" = CASE WHEN match.id IS NOT NULL THEN now() END,
             "resolvedBranch" = CASE WHEN match.id IS NOT NULL THEN 'EVENT' END,
             "resumeEventId" = match.id
        FROM exec LEFT JOIN match ON true
       WHERE ${stepStillClaimed(claim)}
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
    -- failStep
    WITH exec AS (
      UPDATE "WorkflowExecution" e
         SET version = e.version + 1,
             status = CASE WHEN ${final} THEN 'FAILED'::"ExecutionStatus" ELSE 'RUNNING'::"ExecutionStatus" END,
             "readyAt" = CASE WHEN ${final} THEN NULL ELSE ${secondsFromNow(opts.retryInSeconds ?? 0)} END,
             "finishedAt" = CASE WHEN ${final} THEN now() END,
             "lastError" = ${opts.error},
             "updatedAt" = now()
       WHERE ${executionStillClaimed(claim)}
      RETURNING e.id, e.version
    ), step AS (
      UPDATE "StepExecution" s
         SET status = 'FAILED', error = ${opts.error}, "finishedAt" = now(), "leaseExpiresAt" = NULL
        FROM exec
       WHERE ${stepStillClaimed(claim)}
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
    -- failUnclaimable
    UPDATE "WorkflowExecution"
       SET version = version + 1, status = 'FAILED', "readyAt" = NULL, "finishedAt" = now(),
           "lastError" = ${error}, "updatedAt" = now()
     WHERE id = ${u.executionId}::uuid AND version = ${u.version} AND status = 'RUNNING'
    RETURNING id`;
  return rows.length > 0;
}
