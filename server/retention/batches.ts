import { Prisma, type RawDb } from '../db';
import { FINISHED_STATUSES } from '../common/execution-status';
import { STUCK_REASONS } from '../common/stuck-reasons';
import { auditedExecution as auditTarget } from '../engine/invariants';
import { stuckOfExecution } from '../stuck/predicates';

// One batch of a retention sweep per statement (docs/deploy.md, "Retention"): the next few
// hundred rows of one project past a keyset cursor, read from an index in the order of
// their age (the cursor as a range on the age plus a tie-break on the id, not a row
// comparison, which PostgreSQL cannot read from the DESC indexes the console's lists use),
// then each by its primary key (a LATERAL lookup, so no estimate turns it into a scan).
// Those that may go are locked with SKIP LOCKED and removed, with what hangs on them, in
// the same statement, each removal by an index on the batch's ids as one array. A statement is its own short transaction:
// its locks are on rows nobody else moves any more (finished executions, processed events,
// settled webhook messages, old audit entries), taken without waiting, and held for the
// few milliseconds of one batch. Two sweepers at once take disjoint rows (SKIP LOCKED)
// and never wait for each other; a row a sweeper skipped is looked at again next sweep.

/** Where a walk stands: the last row a batch looked at (its age, then its id). */
export interface Cursor {
  /** An ISO timestamp, or '-infinity' before the first batch. */
  at: string;
  id: string;
}

export const START: Cursor = { at: '-infinity', id: '00000000-0000-0000-0000-000000000000' };

export interface BatchScope {
  projectId: string;
  /** Rows older than this may go. */
  cutoff: Date;
  /** STUCK_GRACE_SECONDS: the stuck predicates' grace, as the console applies it. */
  graceSeconds: number;
  /** Rows looked at per batch (removed or kept). */
  limit: number;
}

export interface Batch<R> {
  /** Rows of the walk this batch looked at: fewer than the limit means the walk is over. */
  seen: number;
  next: Cursor;
  removed: R;
}

/** The statuses no claim moves an execution out of, as SQL (server/common/execution-status.ts). */
const finished = Prisma.raw(FINISHED_STATUSES.map((s) => `'${s}'`).join(', '));

const cursorOf = (after: Cursor, last: { at: Date | null; id: string | null }): Cursor =>
  last.at && last.id ? { at: last.at.toISOString(), id: last.id } : after;

export interface ExecutionsRemoved {
  /** Executions removed with everything on them. */
  executions: number;
  /** Executions enrolled once only, kept as that memory with their history removed. */
  executionsReduced: number;
  steps: number;
  emails: number;
}

/**
 * A batch of a project's finished executions (COMPLETED, EXITED, CANCELLED) that finished
 * before the cut-off, with their step rows and emails. Kept, whatever their age:
 *
 * - an execution an operator must still look at: one the stuck predicates list
 *   (server/stuck/predicates.ts, probed for this execution; for a finished one, an email
 *   whose sending failed or whose fate is unknown, MESSAGE_FAILED / MESSAGE_UNCONFIRMED).
 *   A FAILED execution is never finished: it waits for its repair;
 * - one with an email still on its way (QUEUED, or SENDING under a live lease): the
 *   sender owns it, and removing it would lose the send;
 * - locked by anyone at that moment (looked at again next sweep).
 *
 * An execution enrolled once only (`enrollOnce`: its workflow does not allow re-entry) is
 * the memory that keeps its contact from entering again: its row stays, reduced (no step
 * rows, no emails, no context), with `historyRemovedAt` set, which takes it off the walk.
 */
export async function removeExecutions(db: RawDb, s: BatchScope, after: Cursor): Promise<Batch<ExecutionsRemoved>> {
  const scope = { projectId: s.projectId, graceSeconds: s.graceSeconds };
  const [row] = await db.$queryRaw<
    { seen: number; lastAt: Date | null; lastId: string | null; executions: number; executionsReduced: number; steps: number; emails: number }[]
  >`
    -- retention.removeExecutions
    WITH seen AS (
      SELECT e.id, e."finishedAt"
        FROM "WorkflowExecution" e
       WHERE e."projectId" = ${s.projectId}::uuid AND e.status IN (${finished}) AND e."historyRemovedAt" IS NULL
         AND e."finishedAt" < ${s.cutoff}::timestamptz
         AND e."finishedAt" >= ${after.at}::timestamptz AND (e."finishedAt" > ${after.at}::timestamptz OR e.id > ${after.id}::uuid)
       ORDER BY e."finishedAt", e.id
       LIMIT ${s.limit}::int
    ), doomed AS (
      -- Each by its primary key, read under the lock as it is now: still finished, still old.
      SELECT c.id, c."enrollOnce" FROM seen CROSS JOIN LATERAL (
        SELECT c.id, c."enrollOnce" FROM "WorkflowExecution" c
         WHERE c.id = seen.id
           AND c.status IN (${finished}) AND c."historyRemovedAt" IS NULL AND c."finishedAt" < ${s.cutoff}::timestamptz
           AND NOT EXISTS (${stuckOfExecution(STUCK_REASONS, scope, Prisma.sql`c.id`)})
           AND NOT EXISTS (SELECT 1 FROM "Message" m WHERE m."executionId" = c.id AND m.status IN ('QUEUED', 'SENDING'))
           FOR UPDATE SKIP LOCKED) c
    ), emails AS (
      DELETE FROM "Message" m WHERE m."executionId" = ANY (ARRAY(SELECT d.id FROM doomed d)) RETURNING m.id
    ), steps AS (
      DELETE FROM "StepExecution" st WHERE st."executionId" = ANY (ARRAY(SELECT d.id FROM doomed d)) RETURNING st.id
    ), removed AS (
      DELETE FROM "WorkflowExecution" x WHERE x.id = ANY (ARRAY(SELECT d.id FROM doomed d WHERE NOT d."enrollOnce")) RETURNING x.id
    ), reduced AS (
      UPDATE "WorkflowExecution" x SET "historyRemovedAt" = now(), context = '{}', "lastError" = NULL
       WHERE x.id = ANY (ARRAY(SELECT d.id FROM doomed d WHERE d."enrollOnce")) RETURNING x.id
    ), last AS (
      SELECT seen."finishedAt" AS at, seen.id FROM seen ORDER BY seen."finishedAt" DESC, seen.id DESC LIMIT 1
    )
    SELECT (SELECT count(*) FROM seen)::int AS seen,
           (SELECT at FROM last) AS "lastAt", (SELECT id FROM last) AS "lastId",
           (SELECT count(*) FROM removed)::int AS executions, (SELECT count(*) FROM reduced)::int AS "executionsReduced",
           (SELECT count(*) FROM steps)::int AS steps, (SELECT count(*) FROM emails)::int AS emails`;
  const { seen, lastAt, lastId, ...removed } = row!;
  return { seen, next: cursorOf(after, { at: lastAt, id: lastId }), removed };
}

/**
 * A batch of a project's tracked events accepted and processed before the cut-off.
 * Kept, whatever their age: an event not processed yet (EVENT_PENDING's) or dead-lettered
 * (EVENT_DEAD's, for an operator); one a step row names as the event that resumed its wait
 * (invariant I4 reads it); one that enrolled an execution still kept with its history;
 * and one a wait may still take: its contact has an execution not finished (running,
 * waiting, or failed and so retryable) that began before the event was accepted, since a
 * wait takes an event accepted inside [its start, its deadline) (docs/event-time.md) and
 * began after its execution did. An execution enrolled later cannot take it.
 */
export async function removeEvents(db: RawDb, s: BatchScope, after: Cursor): Promise<Batch<{ events: number }>> {
  const [row] = await db.$queryRaw<{ seen: number; lastAt: Date | null; lastId: string | null; events: number }[]>`
    -- retention.removeEvents
    WITH seen AS (
      SELECT ev.id, ev."createdAt"
        FROM "Event" ev
       WHERE ev."projectId" = ${s.projectId}::uuid AND ev."createdAt" < ${s.cutoff}::timestamptz
         AND ev."createdAt" >= ${after.at}::timestamptz AND (ev."createdAt" > ${after.at}::timestamptz OR ev.id > ${after.id}::uuid)
       ORDER BY ev."createdAt", ev.id
       LIMIT ${s.limit}::int
    ), doomed AS (
      SELECT c.id FROM seen CROSS JOIN LATERAL (
        SELECT c.id FROM "Event" c
         WHERE c.id = seen.id
           AND c."processedAt" < ${s.cutoff}::timestamptz AND c."deadAt" IS NULL
           AND NOT EXISTS (SELECT 1 FROM "StepExecution" st WHERE st."resumeEventId" = c.id)
           AND NOT EXISTS (SELECT 1 FROM "WorkflowExecution" x WHERE x."sourceEventId" = c.id AND x."historyRemovedAt" IS NULL)
           AND NOT EXISTS (
                 SELECT 1 FROM "WorkflowExecution" x
                  WHERE x."contactId" = c."contactId" AND x.status NOT IN (${finished}) AND x."startedAt" <= c."createdAt")
           FOR UPDATE SKIP LOCKED) c
    ), removed AS (
      DELETE FROM "Event" ev WHERE ev.id = ANY (ARRAY(SELECT d.id FROM doomed d)) RETURNING ev.id
    ), last AS (
      SELECT seen."createdAt" AS at, seen.id FROM seen ORDER BY seen."createdAt" DESC, seen.id DESC LIMIT 1
    )
    SELECT (SELECT count(*) FROM seen)::int AS seen,
           (SELECT at FROM last) AS "lastAt", (SELECT id FROM last) AS "lastId",
           (SELECT count(*) FROM removed)::int AS events`;
  const { seen, lastAt, lastId, ...removed } = row!;
  return { seen, next: cursorOf(after, { at: lastAt, id: lastId }), removed };
}

/** A project's webhook endpoints, whose delivery logs a sweep walks one at a time. */
export async function webhookEndpointsOf(db: RawDb, projectId: string): Promise<string[]> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    -- retention.webhookEndpoints
    SELECT id FROM "WebhookEndpoint" WHERE "projectId" = ${projectId}::uuid ORDER BY id`;
  return rows.map((r) => r.id);
}

/**
 * A batch of one endpoint's webhook messages made before the cut-off and settled
 * (DELIVERED or DEAD), with their attempts. A PENDING one is still the dispatcher's. A
 * DEAD one can be redelivered by an owner until it goes.
 */
export async function removeWebhookMessages(
  db: RawDb,
  s: BatchScope & { endpointId: string },
  after: Cursor,
): Promise<Batch<{ webhookMessages: number; webhookAttempts: number }>> {
  const [row] = await db.$queryRaw<{ seen: number; lastAt: Date | null; lastId: string | null; webhookMessages: number; webhookAttempts: number }[]>`
    -- retention.removeWebhookMessages
    WITH seen AS (
      SELECT w.id, w."createdAt"
        FROM "WebhookMessage" w
       WHERE w."endpointId" = ${s.endpointId}::uuid AND w."createdAt" < ${s.cutoff}::timestamptz
         AND w."createdAt" >= ${after.at}::timestamptz AND (w."createdAt" > ${after.at}::timestamptz OR w.id > ${after.id}::uuid)
       ORDER BY w."createdAt", w.id
       LIMIT ${s.limit}::int
    ), doomed AS (
      SELECT c.id FROM seen CROSS JOIN LATERAL (
        SELECT c.id FROM "WebhookMessage" c
         WHERE c.id = seen.id AND c."projectId" = ${s.projectId}::uuid AND c.status <> 'PENDING'
           FOR UPDATE SKIP LOCKED) c
    ), attempts AS (
      DELETE FROM "WebhookAttempt" a WHERE a."messageId" = ANY (ARRAY(SELECT d.id FROM doomed d)) RETURNING a.id
    ), removed AS (
      DELETE FROM "WebhookMessage" w WHERE w.id = ANY (ARRAY(SELECT d.id FROM doomed d)) RETURNING w.id
    ), last AS (
      SELECT seen."createdAt" AS at, seen.id FROM seen ORDER BY seen."createdAt" DESC, seen.id DESC LIMIT 1
    )
    SELECT (SELECT count(*) FROM seen)::int AS seen,
           (SELECT at FROM last) AS "lastAt", (SELECT id FROM last) AS "lastId",
           (SELECT count(*) FROM removed)::int AS "webhookMessages", (SELECT count(*) FROM attempts)::int AS "webhookAttempts"`;
  const { seen, lastAt, lastId, ...removed } = row!;
  return { seen, next: cursorOf(after, { at: lastAt, id: lastId }), removed };
}

/**
 * A batch of a project's audit entries written before the cut-off (AUDIT_RETENTION_DAYS).
 * Kept, whatever its age: an entry about an execution, an email or an event that is still
 * there, which goes when its subject does: invariant I8 proves a kept cancellation, skip,
 * retry, operator resolution or email given up on by its entry.
 */
export async function removeAuditEntries(db: RawDb, s: BatchScope, after: Cursor): Promise<Batch<{ auditEntries: number }>> {
  const [row] = await db.$queryRaw<{ seen: number; lastAt: Date | null; lastId: string | null; auditEntries: number }[]>`
    -- retention.removeAuditEntries
    WITH seen AS (
      SELECT a.id, a.at
        FROM "AuditEntry" a
       WHERE a."projectId" = ${s.projectId}::uuid AND a.at < ${s.cutoff}::timestamptz
         AND a.at >= ${after.at}::timestamptz AND (a.at > ${after.at}::timestamptz OR a.id > ${after.id}::uuid)
       ORDER BY a.at, a.id
       LIMIT ${s.limit}::int
    ), doomed AS (
      SELECT a.id FROM seen CROSS JOIN LATERAL (
        SELECT a.id FROM "AuditEntry" a
         WHERE a.id = seen.id
           AND NOT EXISTS (SELECT 1 FROM "WorkflowExecution" x WHERE x.id = ${auditTarget})
           AND NOT EXISTS (SELECT 1 FROM "Message" m WHERE m.id = ${auditTarget})
           AND NOT EXISTS (SELECT 1 FROM "Event" ev WHERE ev.id = ${auditTarget})
           FOR UPDATE SKIP LOCKED) a
    ), removed AS (
      DELETE FROM "AuditEntry" x WHERE x.id = ANY (ARRAY(SELECT d.id FROM doomed d)) RETURNING x.id
    ), last AS (
      SELECT seen.at, seen.id FROM seen ORDER BY seen.at DESC, seen.id DESC LIMIT 1
    )
    SELECT (SELECT count(*) FROM seen)::int AS seen,
           (SELECT at FROM last) AS "lastAt", (SELECT id FROM last) AS "lastId",
           (SELECT count(*) FROM removed)::int AS "auditEntries"`;
  const { seen, lastAt, lastId, ...removed } = row!;
  return { seen, next: cursorOf(after, { at: lastAt, id: lastId }), removed };
}
