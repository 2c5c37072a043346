import { Prisma, type DbTx } from '../db';

// The overview's read model: what the engine did minute by minute over the last
// hour, and the latest things that failed. Each count and each list is one index range on
// a time column of the caller's project (test/api/overview-explain.test.ts).

// ---------------------------------------------------------------------------
// Throughput

export interface ThroughputFilter {
  projectId: string;
  /** How many one-minute buckets, the current (partial) minute last. */
  minutes: number;
  /** The moment the window ends at (the database's now() when absent; tests pin it). */
  now?: Date | undefined;
}

export interface ThroughputBucket {
  /** The minute's start. */
  at: Date;
  /** Executions started (every enrollment: console, CSV, API, tracked events). */
  enrollments: number;
  /** Step executions that finished (completed, skipped or failed). */
  stepsRun: number;
  /** Events tracked (accepted). */
  eventsTracked: number;
}

export interface Throughput {
  minutes: number;
  /** The first bucket's start (inclusive). */
  since: Date;
  /** The last bucket's end (exclusive). */
  until: Date;
  buckets: ThroughputBucket[];
  totals: Omit<ThroughputBucket, 'at'>;
}

/**
 * Per minute over [since, until): `minutes` buckets, zero-filled by generate_series, the
 * current minute last. Enrollments are a range of (projectId; startedAt) and events of
 * (projectId; createdAt). StepExecution has no project: its range is the partial
 * finishedAt index across projects, each row's project read from its execution by
 * primary key (a correlated subquery: a join would be planned as a hash of every
 * execution), so the cost follows the steps finished in the window, not the table.
 */
export function throughputQuery(f: ThroughputFilter): Prisma.Sql {
  const now = f.now ? Prisma.sql`${f.now}::timestamptz` : Prisma.sql`now()`;
  const last = Prisma.sql`date_trunc('minute', ${now})`;
  const since = Prisma.sql`(${last} - ${f.minutes - 1}::int * interval '1 minute')`;
  const until = Prisma.sql`(${last} + interval '1 minute')`;
  return Prisma.sql`
    -- throughput
    WITH enrolled AS (
      SELECT date_trunc('minute', e."startedAt") AS at, count(*)::int AS n
        FROM "WorkflowExecution" e
       WHERE e."projectId" = ${f.projectId}::uuid AND e."startedAt" >= ${since} AND e."startedAt" < ${until}
       GROUP BY 1
    ), stepped AS (
      SELECT date_trunc('minute', s."finishedAt") AS at, count(*)::int AS n
        FROM "StepExecution" s
       WHERE s."finishedAt" >= ${since} AND s."finishedAt" < ${until}
         AND (SELECT e."projectId" FROM "WorkflowExecution" e WHERE e.id = s."executionId") = ${f.projectId}::uuid
       GROUP BY 1
    ), tracked AS (
      SELECT date_trunc('minute', ev."createdAt") AS at, count(*)::int AS n
        FROM "Event" ev
       WHERE ev."projectId" = ${f.projectId}::uuid AND ev."createdAt" >= ${since} AND ev."createdAt" < ${until}
       GROUP BY 1
    )
    SELECT m.at, coalesce(en.n, 0) AS enrollments, coalesce(st.n, 0) AS "stepsRun", coalesce(tr.n, 0) AS "eventsTracked"
      FROM generate_series(${since}, ${last}, interval '1 minute') AS m(at)
      LEFT JOIN enrolled en ON en.at = m.at
      LEFT JOIN stepped st ON st.at = m.at
      LEFT JOIN tracked tr ON tr.at = m.at
     ORDER BY m.at`;
}

export async function throughput(db: DbTx, f: ThroughputFilter): Promise<Throughput> {
  const buckets = await db.$queryRaw<ThroughputBucket[]>(throughputQuery(f));
  const totals = { enrollments: 0, stepsRun: 0, eventsTracked: 0 };
  for (const b of buckets) {
    totals.enrollments += b.enrollments;
    totals.stepsRun += b.stepsRun;
    totals.eventsTracked += b.eventsTracked;
  }
  const first = buckets[0]!.at;
  const lastStart = buckets[buckets.length - 1]!.at;
  return { minutes: f.minutes, since: first, until: new Date(lastStart.getTime() + 60_000), buckets, totals };
}

// ---------------------------------------------------------------------------
// Recent failures

/**
 * What failed, from where an operator acts on it: an execution that FAILED (its last
 * attempt's error), a tracked event dead-lettered after its last dispatch attempt, an
 * email whose send failed.
 */
export const FAILURE_KINDS = ['EXECUTION_FAILED', 'EVENT_DEAD', 'MESSAGE_FAILED'] as const;
export type FailureKind = (typeof FAILURE_KINDS)[number];

export interface FailureItem {
  kind: FailureKind;
  /** The failed row's id (execution, event or message). */
  id: string;
  /**
   * When it failed: the execution's finishedAt, the event's deadAt; a message keeps no
   * failure time, so its createdAt (when it was queued).
   */
  at: Date;
  executionId: string | null;
  eventId: string | null;
  workflowId: string | null;
  workflowName: string | null;
  stepName: string | null;
  contactId: string | null;
  contactEmail: string | null;
  /** The event's name, or the email's subject. */
  subject: string | null;
  error: string | null;
  /** Dispatch attempts of a dead event. */
  attempts: number | null;
}

/** FAILED executions, latest failure first: the partial (projectId; finishedAt DESC NULLS LAST, id DESC) index. */
export function failedExecutionsQuery(projectId: string, limit: number): Prisma.Sql {
  return Prisma.sql`
    -- recentFailures.executions
    SELECT 'EXECUTION_FAILED' AS kind, e.id, coalesce(e."finishedAt", e."updatedAt") AS at,
           e.id AS "executionId", NULL::uuid AS "eventId", e."workflowId",
           (SELECT w.name FROM "Workflow" w WHERE w.id = e."workflowId") AS "workflowName",
           (SELECT ws.name FROM "WorkflowStep" ws WHERE ws.id = e."currentStepId") AS "stepName",
           e."contactId", (SELECT c.email FROM "Contact" c WHERE c.id = e."contactId") AS "contactEmail",
           NULL AS subject, e."lastError" AS error, NULL::int AS attempts
      FROM "WorkflowExecution" e
     WHERE e."projectId" = ${projectId}::uuid AND e.status = 'FAILED'
     ORDER BY e."finishedAt" DESC NULLS LAST, e.id DESC
     LIMIT ${limit}::int`;
}

/** Dead-lettered events, latest first: a backward range of the partial (projectId, deadAt) index. */
export function deadEventsQuery(projectId: string, limit: number): Prisma.Sql {
  return Prisma.sql`
    -- recentFailures.events
    SELECT 'EVENT_DEAD' AS kind, ev.id, ev."deadAt" AS at, NULL::uuid AS "executionId", ev.id AS "eventId",
           NULL::uuid AS "workflowId", NULL AS "workflowName", NULL AS "stepName",
           ev."contactId", (SELECT c.email FROM "Contact" c WHERE c.id = ev."contactId") AS "contactEmail",
           ev.name AS subject, ev."lastError" AS error, ev."dispatchAttempts" AS attempts
      FROM "Event" ev
     WHERE ev."projectId" = ${projectId}::uuid AND ev."deadAt" IS NOT NULL
     ORDER BY ev."deadAt" DESC
     LIMIT ${limit}::int`;
}

/** Failed emails, latest first: a backward range of the partial (projectId, createdAt) index. */
export function failedMessagesQuery(projectId: string, limit: number): Prisma.Sql {
  return Prisma.sql`
    -- recentFailures.messages
    SELECT 'MESSAGE_FAILED' AS kind, m.id, m."createdAt" AS at, m."executionId", NULL::uuid AS "eventId",
           e."workflowId", w.name AS "workflowName", ws.name AS "stepName",
           e."contactId", m."to" AS "contactEmail", m.subject, m.error, NULL::int AS attempts
      FROM "Message" m
      JOIN "WorkflowExecution" e ON e.id = m."executionId"
      JOIN "Workflow" w ON w.id = e."workflowId"
      JOIN "StepExecution" s ON s.id = m."stepExecutionId"
      JOIN "WorkflowStep" ws ON ws.id = s."stepId"
     WHERE m."projectId" = ${projectId}::uuid AND m.status = 'FAILED'
     ORDER BY m."createdAt" DESC
     LIMIT ${limit}::int`;
}

/** The latest `limit` failures of every kind, latest first (each kind read under its own LIMIT). */
export async function recentFailures(db: DbTx, projectId: string, limit: number): Promise<FailureItem[]> {
  const lists = await Promise.all(
    [failedExecutionsQuery, deadEventsQuery, failedMessagesQuery].map((query) => db.$queryRaw<FailureItem[]>(query(projectId, limit))),
  );
  return lists
    .flat()
    .sort((a, b) => b.at.getTime() - a.at.getTime() || (a.id < b.id ? 1 : -1))
    .slice(0, limit);
}
