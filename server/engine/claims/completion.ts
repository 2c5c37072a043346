import { Prisma, type RawDb } from '../../db';
import { readExecutionState, type ExecutionState, type StepClaim, type UnclaimableStep } from './execution';
import { batchClaimColumns, claimValues, eventResumesWait, executionStillClaimed, moveTo, secondsFromNow, stepRowClaim, stepStillClaimed } from './fragments';
import { countMessages, countWaitsResolved } from '../../metrics/counts';
import { lost, type Lost, type Won } from './result';

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

/** One claimed step's completion in a batch (advanceExecutions). */
export interface Completion {
  claim: StepClaim;
  advance: Advance;
}

/**
 * I5, I6: complete claimed steps and advance their executions, in one statement for the
 * whole batch (a worker records the steps it ran in the same turn together: one round
 * trip and one commit instead of one per step). Each row is fenced on its own by its
 * execution's version (bumped by every claim, so a re-claim after lease expiry or any
 * other writer makes that row lose) and by its step's claim token; a row that loses
 * changes nothing, the others go on. The contact update and the queued message ride
 * along only where the fence held; the message's unique stepExecutionId makes a second
 * one impossible. Rows are sent in execution id order, so two batches lock the rows they
 * share in the same order. A batch holds each execution once, and each contact's patch
 * once (two patches of one contact in one UPDATE would keep only one).
 */
export async function advanceExecutions(db: RawDb, completions: Completion[]): Promise<CompleteResult[]> {
  if (completions.length === 0) return [];
  const rows = [...completions].sort((a, b) => (a.claim.executionId < b.claim.executionId ? -1 : a.claim.executionId > b.claim.executionId ? 1 : 0));
  const executions = new Set(rows.map((r) => r.claim.executionId));
  if (executions.size !== rows.length) throw new Error('advanceExecutions: an execution appears twice in one batch');
  const patched = rows.filter((r) => r.advance.contactPatch);
  if (new Set(patched.map((r) => r.claim.contactId)).size !== patched.length) {
    throw new Error('advanceExecutions: a contact is patched twice in one batch');
  }
  // A lease (the next step's claim) is the same for every row: one worker sends a batch.
  const lease = rows.find((r) => r.advance.claimNext)?.advance.claimNext ?? { leaseSeconds: 0, owner: null };
  const chained = (c: Completion) => c.advance.status === 'RUNNING' && !!c.advance.claimNext;
  const column = <T>(f: (r: Completion) => T) => rows.map(f);
  // A patch's keys with null values are removed from the contact's data, the others merged in.
  const patch = (r: Completion) => {
    const p = r.advance.contactPatch;
    if (!p) return null;
    return { set: Object.fromEntries(Object.entries(p).filter(([, v]) => v !== null)), drop: Object.keys(p).filter((k) => p[k] === null) };
  };
  const won = await db.$queryRaw<(ChainedClaimRow & { executionId: string; messageQueued: boolean })[]>`
    -- advanceExecutions
    WITH v AS (
      SELECT * FROM unnest(
        ${column((r) => r.claim.executionId)}::uuid[], ${column((r) => r.claim.version)}::int[],
        ${column((r) => r.claim.stepId)}::uuid[], ${column((r) => r.claim.stepExecutionId)}::uuid[],
        ${column((r) => r.claim.claimToken)}::uuid[], ${column((r) => r.advance.nextStepId)}::uuid[],
        ${column((r) => r.advance.status)}::text[], ${column((r) => r.advance.exitReason ?? null)}::text[],
        ${column((r) => JSON.stringify(r.advance.output))}::jsonb[], ${column((r) => JSON.stringify(r.advance.contextPatch ?? {}))}::jsonb[],
        ${column((r) => (patch(r) ? JSON.stringify(patch(r)!.set) : null))}::jsonb[], ${column((r) => (patch(r) ? JSON.stringify(patch(r)!.drop) : null))}::jsonb[],
        ${column((r) => r.advance.message?.to ?? null)}::text[], ${column((r) => r.advance.message?.subject ?? null)}::text[],
        ${column((r) => r.advance.message?.body ?? null)}::text[], ${column((r) => r.advance.elapsed ?? false)}::boolean[],
        ${column(chained)}::boolean[]
      ) AS v("executionId", version, "stepId", "stepExecutionId", "claimToken", "nextStepId", status, "exitReason",
             output, "contextPatch", "contactSet", "contactDrop", "messageTo", "messageSubject", "messageBody", elapsed, chain)
    ), exec AS (
      UPDATE "WorkflowExecution" e
         SET version = e.version + CASE WHEN v.chain THEN 2 ELSE 1 END,
             ${moveTo(Prisma.sql`v.status`, Prisma.sql`v."nextStepId"`, Prisma.sql`CASE WHEN v.chain THEN ${secondsFromNow(lease.leaseSeconds)} ELSE now() END`)},
             "exitReason" = v."exitReason",
             "lastError" = NULL,
             context = e.context || v."contextPatch",
             "updatedAt" = now()
        FROM v
       WHERE ${executionStillClaimed(batchClaimColumns)}
      RETURNING e.id, e.version, e."projectId", e."contactId", e."workflowId", e."workflowVersionId", e."currentStepId", e.context,
                v."stepExecutionId", v."claimToken", v.output, v.elapsed, v.chain, v."contactSet", v."contactDrop",
                v."messageTo", v."messageSubject", v."messageBody"
    ), step AS (
      UPDATE "StepExecution" s
         SET status = 'COMPLETED', output = exec.output,
             "finishedAt" = now(), "leaseExpiresAt" = NULL,
             "dueAt" = CASE WHEN exec.elapsed THEN now() ELSE s."dueAt" END,
             "resolvedBy" = CASE WHEN exec.elapsed THEN 'TIMEOUT'::"WaitResolver" ELSE s."resolvedBy" END,
             "resolvedAt" = CASE WHEN exec.elapsed THEN now() ELSE s."resolvedAt" END
        FROM exec
       WHERE s.id = exec."stepExecutionId" AND s."claimToken" = exec."claimToken" AND s.status = 'RUNNING'
      RETURNING s.id
    ), contact AS (
      UPDATE "Contact" c
         SET data = (c.data || exec."contactSet") - ARRAY(SELECT jsonb_array_elements_text(exec."contactDrop")),
             "updatedAt" = now()
        FROM exec
       WHERE exec."contactSet" IS NOT NULL AND c.id = exec."contactId"
      RETURNING c.id, c.data
    ), message AS (
      INSERT INTO "Message" (id, "projectId", "executionId", "stepExecutionId", "to", subject, body)
      SELECT gen_random_uuid(), exec."projectId", exec.id, exec."stepExecutionId",
             exec."messageTo", exec."messageSubject", exec."messageBody"
        FROM exec
       WHERE exec."messageTo" IS NOT NULL
      ON CONFLICT ("stepExecutionId") DO NOTHING
      RETURNING "executionId"
    ), next AS (
      ${stepRowClaim(lease.leaseSeconds, lease.owner, Prisma.sql`exec.chain`)}
    )
    SELECT exec.id AS "executionId", exec.version, EXISTS (SELECT 1 FROM message WHERE message."executionId" = exec.id) AS "messageQueued",
           next.id AS "stepExecutionId", next."claimToken", next.attempt, exec."currentStepId" AS "stepId",
           exec."projectId", exec."workflowId", exec."workflowVersionId", exec."contactId", exec.context,
           c.email AS "contactEmail", COALESCE(contact.data, c.data) AS "contactData", c.subscribed AS "contactSubscribed"
      FROM exec
      LEFT JOIN next ON next."executionId" = exec.id
      LEFT JOIN contact ON contact.id = exec."contactId"
      JOIN "Contact" c ON c.id = exec."contactId"`;
  const byExecution = new Map(won.map((row) => [row.executionId, row]));
  return Promise.all(
    completions.map(async (completion): Promise<CompleteResult> => {
      const row = byExecution.get(completion.claim.executionId);
      if (!row) return lost('advanceExecutions', await readExecutionState(db, completion.claim.executionId));
      const { messageQueued, ...next } = row;
      if (messageQueued) countMessages('queued');
      if (completion.advance.elapsed) countWaitsResolved('TIMEOUT');
      const claimed = chained(completion) && next.stepExecutionId && next.claimToken && next.attempt !== null ? (next as StepClaim) : null;
      return { won: true, version: row.version, messageQueued, next: claimed };
    }),
  );
}

/**
 * I5, I6: complete one claimed step and advance its execution: a batch of one
 * (advanceExecutions), for callers that hold a single claim.
 */
export async function advanceExecution(db: RawDb, claim: StepClaim, a: Advance): Promise<CompleteResult> {
  const [result] = await advanceExecutions(db, [{ claim, advance: a }]);
  return result!;
}

/** A row of advanceExecutions: its version, and the next step's claim when one was asked for. */
type ChainedClaimRow = Omit<StepClaim, 'stepExecutionId' | 'claimToken' | 'attempt'> & {
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
  db: RawDb,
  claim: StepClaim,
  opts: { dueInSeconds: number; output: Record<string, unknown>; awaitEvent?: string | null },
): Promise<ParkResult> {
  const awaitEvent = opts.awaitEvent ?? null;
  const rows = await db.$queryRaw<{ version: number; eventId: string | null; name: string; data: unknown; createdAt: Date }[]>`
    -- parkExecution
    WITH exec AS (
      UPDATE "WorkflowExecution" e
         SET version = e.version + 1, status = 'WAITING', "readyAt" = NULL, "updatedAt" = now()
       WHERE ${executionStillClaimed(claimValues(claim))}
      RETURNING e.id, e.version, e."projectId", e."contactId"
    ), match AS (
      SELECT ev.id, ev.name, ev.data, ev."createdAt"
        FROM exec
        JOIN "StepExecution" w ON w.id = ${claim.stepExecutionId}::uuid
        JOIN "Event" ev ON ev."contactId" = exec."contactId" AND ev.name = ${awaitEvent}::text
       WHERE ${awaitEvent}::text IS NOT NULL
         AND ${eventResumesWait({
           executionId: Prisma.sql`exec.id`,
           contactId: Prisma.sql`exec."contactId"`,
           projectId: Prisma.sql`exec."projectId"`,
           eventName: Prisma.sql`${awaitEvent}::text`,
           startedAt: Prisma.sql`w."startedAt"`,
           dueAt: secondsFromNow(opts.dueInSeconds),
         })}
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
       WHERE ${stepStillClaimed(claimValues(claim))}
      RETURNING s.id
    )
    SELECT exec.version, match.id AS "eventId", match.name, match.data, match."createdAt"
      FROM exec LEFT JOIN match ON true`;
  const row = rows[0];
  if (!row) return lost('parkExecution', await readExecutionState(db, claim.executionId));
  const resumeEvent = row.eventId ? { id: row.eventId, name: row.name, data: row.data, createdAt: row.createdAt } : null;
  if (resumeEvent) countWaitsResolved('EVENT');
  return { won: true, version: row.version, messageQueued: false, resumeEvent };
}

/**
 * I6: record a failed attempt. With attempts left the execution stays RUNNING and wakes
 * after a backoff (the next claim re-claims the FAILED step row as a new attempt);
 * otherwise the execution becomes FAILED. Fenced like every completion.
 */
export async function failStep(
  db: RawDb,
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
       WHERE ${executionStillClaimed(claimValues(claim))}
      RETURNING e.id, e.version
    ), step AS (
      UPDATE "StepExecution" s
         SET status = 'FAILED', error = ${opts.error}, "finishedAt" = now(), "leaseExpiresAt" = NULL
        FROM exec
       WHERE ${stepStillClaimed(claimValues(claim))}
      RETURNING s.id
    )
    SELECT exec.version FROM exec`;
  const row = rows[0];
  if (!row) return lost('failStep', await readExecutionState(db, claim.executionId));
  return { won: true, version: row.version, messageQueued: false };
}

/**
 * I6: an execution was claimed but its step row was in no claimable state (e.g. written
 * by hand). Fail it visibly rather than re-claiming it forever.
 */
export async function failUnclaimable(db: RawDb, u: UnclaimableStep, error: string): Promise<boolean> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    -- failUnclaimable
    UPDATE "WorkflowExecution"
       SET version = version + 1, status = 'FAILED', "readyAt" = NULL, "finishedAt" = now(),
           "lastError" = ${error}, "updatedAt" = now()
     WHERE id = ${u.executionId}::uuid AND version = ${u.version} AND status = 'RUNNING'
    RETURNING id`;
  return rows.length > 0;
}
