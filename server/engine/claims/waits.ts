import { Prisma, type RawDb } from '../../db';
import type { ResumeEvent } from './completion';
import { readExecutionState, type ExecutionState } from './execution';
import { bumpExecutionsOfResolvedWaits, eventChannelKey, eventResumesWait, parkedWaitWindow, seconds } from './fragments';
import { countWaitsResolved } from '../../metrics/counts';
import { lost, type Lost, type Won } from './result';

// Wait claims: an event, the timer and an operator compete for the same claim on a
// WAITING step row (I4: resolved at most once), then the continuation moves the
// execution past the resolved wait. Who may see which event is the rule "event time
// decides" (fragments.ts, the event channel).

export type WaitResolver = 'EVENT' | 'TIMEOUT' | 'OPERATOR';

export interface WaitClaim {
  executionId: string;
  version: number;
  stepExecutionId: string;
  stepId: string;
  workflowId: string;
  /** The version whose graph the continuation follows. */
  workflowVersionId: string;
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

export async function readWaitState(db: RawDb, stepExecutionId: string): Promise<WaitState | null> {
  const rows = await db.$queryRaw<Omit<WaitState, 'execution'>[]>`
    -- readWaitState
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
  db: RawDb,
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
    -- claimWait
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
    ), ${bumpExecutionsOfResolvedWaits}
    SELECT exec.id AS "executionId", exec.version, w.id AS "stepExecutionId", w."stepId", exec."workflowId", exec."workflowVersionId",
           w."resolvedBy"::text AS "resolvedBy", w."resolvedBranch" AS branch
      FROM w JOIN exec ON exec.id = w."executionId"`;
  if (rows[0]) {
    countWaitsResolved(rows[0].resolvedBy);
    return { won: true, wait: rows[0] };
  }
  return lost('claimWait', await readWaitState(db, opts.stepExecutionId));
}

/**
 * Hold the event channel of (contact, event name) until this transaction ends; a
 * WAIT_FOR_EVENT takes it in the statement before parkExecution. Inside a transaction
 * only: outside one the lock ends with the statement.
 */
export async function lockEventChannel(db: RawDb, opts: { contactId: string; eventName: string }): Promise<void> {
  await db.$queryRaw`
    -- lockEventChannel
    SELECT pg_advisory_xact_lock(${eventChannelKey(Prisma.sql`${opts.contactId}::uuid`, Prisma.sql`${opts.eventName}::text`)})::text AS locked`;
}

/**
 * The events that would resume this wait by EVENT now (eventResumesWait), earliest first:
 * what the timer would take at the deadline. An operator's FORCE_TIMEOUT and a
 * waits.resolve TIMEOUT ask it after lockEventChannel, so no event accepted before the
 * read is missed. Empty for a DELAY, or a wait no longer parked.
 */
export async function readEventsResumingWait(db: RawDb, opts: { stepExecutionId: string; limit: number }): Promise<ResumeEvent[]> {
  return db.$queryRaw<ResumeEvent[]>`
    -- readEventsResumingWait
    SELECT ev.id, ev.name, ev.data, ev."createdAt"
      FROM "StepExecution" s
      JOIN "WorkflowExecution" e ON e.id = s."executionId" AND e."currentStepId" = s."stepId"
      JOIN "WorkflowStep" ws ON ws.id = s."stepId"
      JOIN "Event" ev ON ev."contactId" = e."contactId" AND ev.name = ws.config->>'eventName'
     WHERE s.id = ${opts.stepExecutionId}::uuid AND s.status = 'WAITING' AND s."resolvedBy" IS NULL
       AND ws.type = 'WAIT_FOR_EVENT' AND ${eventResumesWait(parkedWaitWindow)}
     ORDER BY ev."createdAt", ev.id
     LIMIT ${opts.limit}::int`;
}

/** Of these step executions, the unresolved waits an event accepted inside their window would resume by EVENT now. */
export async function findWaitsWithInWindowEvents(db: RawDb, stepExecutionIds: string[]): Promise<string[]> {
  if (stepExecutionIds.length === 0) return [];
  const rows = await db.$queryRaw<{ id: string }[]>`
    -- findWaitsWithInWindowEvents
    SELECT s.id
      FROM "StepExecution" s
      JOIN "WorkflowExecution" e ON e.id = s."executionId" AND e."currentStepId" = s."stepId"
      JOIN "WorkflowStep" ws ON ws.id = s."stepId"
     WHERE s.id = ANY(${stepExecutionIds}::uuid[]) AND s.status = 'WAITING' AND s."resolvedBy" IS NULL
       AND ws.type = 'WAIT_FOR_EVENT'
       AND EXISTS (SELECT 1 FROM "Event" ev WHERE ${eventResumesWait(parkedWaitWindow)})`;
  return rows.map((r) => r.id);
}

/** Why an event does not resume a wait (eventResumesWait), in the order they are checked. */
export type EventMisfit = 'NOT_AN_EVENT_WAIT' | 'OTHER_NAME' | 'BEFORE_WAIT' | 'AFTER_DEADLINE' | 'CONSUMED';

/**
 * Does this event (of the wait's contact) resume this wait by EVENT? Null when it does;
 * else the first reason it does not. The answer is eventResumesWait's; the reason is
 * only its explanation.
 */
export async function readEventMisfit(db: RawDb, opts: { stepExecutionId: string; eventId: string }): Promise<EventMisfit | null> {
  const [row] = await db.$queryRaw<{ misfit: EventMisfit | null }[]>`
    -- readEventMisfit
    SELECT CASE WHEN ws.type = 'WAIT_FOR_EVENT' AND ${eventResumesWait(parkedWaitWindow)} THEN NULL
                WHEN ws.type <> 'WAIT_FOR_EVENT' THEN 'NOT_AN_EVENT_WAIT'
                WHEN ev.name IS DISTINCT FROM ws.config->>'eventName' THEN 'OTHER_NAME'
                WHEN ev."createdAt" < s."startedAt" THEN 'BEFORE_WAIT'
                WHEN s."dueAt" IS NULL OR ev."createdAt" >= s."dueAt" THEN 'AFTER_DEADLINE'
                ELSE 'CONSUMED' END AS misfit
      FROM "StepExecution" s
      JOIN "WorkflowExecution" e ON e.id = s."executionId"
      JOIN "WorkflowStep" ws ON ws.id = s."stepId"
      JOIN "Event" ev ON ev.id = ${opts.eventId}::uuid
     WHERE s.id = ${opts.stepExecutionId}::uuid`;
  if (!row) throw new Error(`readEventMisfit: no step execution ${opts.stepExecutionId} or event ${opts.eventId}`);
  return row.misfit;
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
  db: RawDb,
  event: { id: string; projectId: string; contactId: string; name: string; createdAt: Date },
): Promise<EventWaitClaim[]> {
  const rows = await db.$queryRaw<EventWaitClaim[]>`
    -- claimWaitsForEvent
    WITH candidate AS (
      SELECT s.id, s."executionId" FROM "StepExecution" s
        JOIN "WorkflowExecution" e ON e.id = s."executionId" AND e."currentStepId" = s."stepId"
        JOIN "WorkflowStep" ws ON ws.id = s."stepId"
        JOIN "Event" ev ON ev.id = ${event.id}::uuid
       WHERE e."contactId" = ${event.contactId}::uuid AND e."projectId" = ${event.projectId}::uuid
         AND e.status = 'WAITING' AND s.status = 'WAITING' AND s."resolvedBy" IS NULL
         AND ws.type = 'WAIT_FOR_EVENT' AND ws.config->>'eventName' = ${event.name}
         AND ${eventResumesWait(parkedWaitWindow)}
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
    ), ${bumpExecutionsOfResolvedWaits}
    SELECT exec.id AS "executionId", exec.version, w.id AS "stepExecutionId", w."stepId", exec."workflowId", exec."workflowVersionId",
           'EVENT' AS "resolvedBy", 'EVENT' AS branch, ${event.id}::uuid AS "resumeEventId"
      FROM w JOIN exec ON exec.id = w."executionId"`;
  countWaitsResolved('EVENT', rows.length);
  return rows;
}

/**
 * The timer's first statement: lock up to `limit` due, unresolved waits (step row, then
 * execution row, both SKIP LOCKED: the timer never waits on a row, so it joins no
 * deadlock) and, for a WAIT_FOR_EVENT, its event channel (try-lock: a channel busy
 * with an event being accepted is left for the next pass). Holding the channel is what
 * lets claimDueWaits, in the next statement of the same transaction, see every event
 * accepted before the deadline. Inside a transaction only.
 */
export async function lockDueWaits(db: RawDb, opts: { limit: number }): Promise<string[]> {
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
export async function claimDueWaits(db: RawDb, opts: { stepExecutionIds: string[] }): Promise<DueWaitClaim[]> {
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
           WHERE ws.type = 'WAIT_FOR_EVENT' AND ${eventResumesWait(parkedWaitWindow)}
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
    ), ${bumpExecutionsOfResolvedWaits}
    SELECT exec.id AS "executionId", exec.version, w.id AS "stepExecutionId", w."stepId", exec."workflowId", exec."workflowVersionId",
           w."resolvedBy"::text AS "resolvedBy", w."resolvedBranch" AS branch,
           ev.id AS "eventId", ev.name AS "eventName", ev.data AS "eventData", ev."createdAt" AS "eventAt"
      FROM w JOIN exec ON exec.id = w."executionId"
      LEFT JOIN "Event" ev ON ev.id = w."resumeEventId"`;
  for (const row of rows) countWaitsResolved(row.resolvedBy);
  return rows.map(({ eventId, eventName, eventData, eventAt, ...wait }) => ({
    ...wait,
    resumeEvent: eventId ? { id: eventId, name: eventName, data: eventData, createdAt: eventAt } : null,
  }));
}

export interface PendingContinuation {
  executionId: string;
  version: number;
  stepExecutionId: string;
  stepId: string;
  workflowId: string;
  workflowVersionId: string;
  branch: string | null;
  resumeEventId: string | null;
}

/** Waits resolved at least `olderThanSeconds` ago whose execution has not moved past them. */
export async function findPendingContinuations(
  db: RawDb,
  opts: { olderThanSeconds: number; limit: number },
): Promise<PendingContinuation[]> {
  return db.$queryRaw<PendingContinuation[]>`
    -- findPendingContinuations
    SELECT e.id AS "executionId", e.version, s.id AS "stepExecutionId", s."stepId", e."workflowId", e."workflowVersionId",
           s."resolvedBranch" AS branch, s."resumeEventId"
      FROM "StepExecution" s
      JOIN "WorkflowExecution" e ON e.id = s."executionId"
     WHERE s.status = 'WAITING' AND s."resolvedBy" IS NOT NULL
       AND s."resolvedAt" <= now() - ${seconds(opts.olderThanSeconds)}
       AND e.status = 'WAITING' AND e."currentStepId" = s."stepId"
     ORDER BY s."resolvedAt"
     LIMIT ${opts.limit}::int`;
}

