import { Prisma, type RawDb } from '../db';

// Why an execution (or an accepted event) is not moving: each reason of
// docs/stuck-and-repair.md is one SQL predicate, defined here once and reused by
// repair.stuck, executions.list({ stuck }), executions.stats, the tests, the bench and the console.
// Every predicate starts from a small partial index (the timer, lease, continuation,
// ready-queue, event-queue and message-outcome indexes), so it stays an index scan at millions of rows
// (test/repair/stuck-explain.test.ts). A read model under both server/read and
// server/repair: list.ts reads them a page at a time, groups.ts by cause, counts.ts per
// reason and place; the reasons' names and meanings are server/common/stuck-reasons.ts.

import { EVENT_REASONS, MESSAGE_REASONS, STUCK_REASONS, type StuckReason } from '../common/stuck-reasons';

export interface StuckItem {
  reason: StuckReason;
  /**
   * The row the item is about: the execution, the event, or (MESSAGE_*) the message. Unique
   * within a reason, unlike executionId (an execution may have several emails): the
   * keyset cursor's tie-breaker.
   */
  itemId: string;
  executionId: string | null;
  eventId: string | null;
  workflowId: string | null;
  contactId: string | null;
  /** Since when it has been in this state. */
  since: Date;
  detail: Record<string, unknown>;
}

export interface StuckScope {
  projectId: string;
  workflowId?: string | null;
  /** Seconds a state may last before it counts as stuck (STUCK_GRACE_SECONDS). */
  graceSeconds: number;
}

const grace = (s: StuckScope) => Prisma.sql`now() - ${s.graceSeconds}::float8 * interval '1 second'`;
const workflowFilter = (s: StuckScope) =>
  s.workflowId ? Prisma.sql`AND e."workflowId" = ${s.workflowId}::uuid` : Prisma.empty;

/**
 * How a predicate is read. 'set': all of it (counts, groups, one execution's reasons),
 * the planner choosing its joins. 'page': a row at a time from the driving partial index,
 * each lookup fenced (below): for the stuck list's pages in `since` order. `{ execution }`:
 * only the items of the one execution whose id is that expression (a column of an
 * enclosing query, e.g. a LATERAL join's), read from the execution's side: the execution
 * by its primary key, then its current step row or its emails by theirs, each fenced, so a
 * probe costs a few index lookups whatever the estimates (executions.list's stuck filter
 * and reasons column).
 */
export type StuckReading = 'set' | 'page' | { execution: Prisma.Sql };

/**
 * Keeps a lookup, once per driving row, from being flattened into a join. Paging needs it:
 * PostgreSQL's estimates of these joins are off by orders of magnitude (an overdue timer
 * almost always belongs to a WAITING execution, which it cannot know), so, believing
 * almost no row qualifies, it would hash the join and read and sort every stuck item of
 * the project to serve the newest 50 (0.26 s for WAIT_OVERDUE at 1,000,000 executions,
 * 2 ms walking the index).
 */
const FENCE = Prisma.sql`OFFSET 0`;

/**
 * The execution a step row or an email belongs to, by its primary key. Read as a set, a
 * plain join, the planner choosing how (it may start from the execution's side, e.g. one
 * workflow's active executions). Read as a page, a fenced lookup once per driving row
 * with `live`, whether the execution is in this project (and workflow) in the state the
 * reason needs: as one boolean column, not a WHERE clause of the lookup, the conditions
 * are not mis-estimated (see FENCE). The predicate's WHERE ends with isLive(reading).
 */
const executionOf = (key: Prisma.Sql, conditions: Prisma.Sql, s: StuckScope, reading: StuckReading) =>
  reading === 'set'
    ? Prisma.sql`
  JOIN "WorkflowExecution" e ON e.id = ${key} AND e."projectId" = ${s.projectId}::uuid ${conditions} ${workflowFilter(s)}`
    : Prisma.sql`
  CROSS JOIN LATERAL (
    SELECT e.id, e."workflowId", e."contactId", e.version,
           (e."projectId" = ${s.projectId}::uuid ${conditions} ${workflowFilter(s)}) AS live
      FROM "WorkflowExecution" e
     WHERE e.id = ${key}
    ${FENCE}) e`;
const isLive = (reading: StuckReading) => (reading === 'page' ? Prisma.sql`AND e.live` : Prisma.empty);

/**
 * A probe's execution (see StuckReading): by primary key and fenced, so that no estimate
 * of the reason's conditions on it (a now()-relative bound, a status) makes the planner
 * read a partial index of every such execution instead. (Its own alias is one no
 * enclosing query's `key` uses.)
 */
const probedExecution = (key: Prisma.Sql) => Prisma.sql`(
    SELECT probed.id, probed."projectId", probed."workflowId", probed."contactId", probed.status, probed."currentStepId",
           probed.version, probed."readyAt", probed."lastError", probed."finishedAt", probed."updatedAt"
      FROM "WorkflowExecution" probed
     WHERE probed.id = ${key}
    ${FENCE}) e`;

/**
 * The execution status each execution reason requires (null: any, as an email's outcome
 * does not depend on where its execution is), part of the predicates below and read by
 * executions.list's stuck filter to walk only the executions in that status.
 */
export const STUCK_EXECUTION_STATUS: Record<StuckReason, 'RUNNING' | 'WAITING' | 'FAILED' | null> = {
  WAIT_OVERDUE: 'WAITING',
  LEASE_EXPIRED: 'RUNNING',
  MISSING_STEP: 'RUNNING',
  CONTINUATION_PENDING: 'WAITING',
  FAILED: 'FAILED',
  MESSAGE_UNCONFIRMED: null,
  MESSAGE_FAILED: null,
  EVENT_DEAD: null,
  EVENT_PENDING: null,
};
const statusOf = (reason: StuckReason) => Prisma.raw(`'${STUCK_EXECUTION_STATUS[reason]}'`);

/**
 * A reason about the step row an execution is at (a wait, a lease): `step` holds the
 * step row's conditions. Read as a set or a page it is driven by the step rows' partial
 * index; probed, by the execution's key.
 */
function stepItem(
  reason: StuckReason,
  s: StuckScope,
  reading: StuckReading,
  columns: (executionId: Prisma.Sql) => Prisma.Sql,
  step: Prisma.Sql,
): Prisma.Sql {
  if (typeof reading === 'object') {
    return Prisma.sql`
        -- stuck.executionItem.fenced
        SELECT ${columns(Prisma.sql`e.id`)}
          FROM ${probedExecution(reading.execution)}
          CROSS JOIN LATERAL (
            SELECT s.* FROM "StepExecution" s WHERE s."executionId" = e.id AND s."stepId" = e."currentStepId" ${FENCE}) s
         WHERE e."projectId" = ${s.projectId}::uuid AND e.status = ${statusOf(reason)} ${workflowFilter(s)} AND ${step}`;
  }
  return Prisma.sql`
        -- stuck.executionItem
        SELECT ${columns(Prisma.sql`s."executionId"`)}
          FROM "StepExecution" s
          ${executionOf(Prisma.sql`s."executionId"`, Prisma.sql`AND e.status = ${statusOf(reason)} AND e."currentStepId" = s."stepId"`, s, reading)}
         WHERE ${step} ${isLive(reading)}`;
}

/** The conditions on an email (a Message row, `m`) of a reason about an execution's emails. */
function emailConditions(reason: 'MESSAGE_UNCONFIRMED' | 'MESSAGE_FAILED', s: StuckScope): Prisma.Sql {
  return reason === 'MESSAGE_UNCONFIRMED'
    ? Prisma.sql`m.status = 'SENDING' AND m."leaseExpiresAt" < ${grace(s)}`
    : Prisma.sql`m.status = 'FAILED'`;
}

/**
 * A reason about an email of the execution: `message` holds the Message row's conditions.
 * Probed, the execution's emails are found by its id alone (fenced): with the conditions
 * beside the key, the planner, misjudging a now()-relative bound, reads the reason's
 * partial index whole for each probe.
 */
function messageItem(s: StuckScope, reading: StuckReading, columns: Prisma.Sql, message: Prisma.Sql): Prisma.Sql {
  if (typeof reading === 'object') {
    return Prisma.sql`
        -- stuck.messageItem.fenced
        SELECT ${columns}
          FROM ${probedExecution(reading.execution)}
          CROSS JOIN LATERAL (SELECT m.* FROM "Message" m WHERE m."executionId" = e.id ${FENCE}) m
         WHERE e."projectId" = ${s.projectId}::uuid ${workflowFilter(s)} AND m."projectId" = ${s.projectId}::uuid AND ${message}`;
  }
  return Prisma.sql`
        -- stuck.messageItem
        SELECT ${columns}
          FROM "Message" m
          ${executionOf(Prisma.sql`m."executionId"`, Prisma.empty, s, reading)}
         WHERE m."projectId" = ${s.projectId}::uuid AND ${message} ${isLive(reading)}`;
}

/** An event is no execution's: probed for one, an event reason has no items. */
const noExecution = (reading: StuckReading) => (typeof reading === 'object' ? Prisma.sql`AND FALSE` : Prisma.empty);

/** The executions an execution-driven reason reads: all of the project's, or (probed) the one. */
const executionsOf = (reading: StuckReading) =>
  typeof reading === 'object' ? probedExecution(reading.execution) : Prisma.sql`"WorkflowExecution" e`;

/** The step row an execution is at: read as a set a plain join, as a page a fenced lookup (see FENCE). */
const currentStepOf = (join: 'JOIN' | 'LEFT JOIN', conditions: Prisma.Sql, reading: StuckReading) =>
  reading === 'set'
    ? Prisma.sql`${Prisma.raw(join)} "StepExecution" s ON s."executionId" = e.id AND s."stepId" = e."currentStepId" ${conditions}`
    : Prisma.sql`${Prisma.raw(join)} LATERAL (
        SELECT s.id, s."stepId", s.status, s.attempt FROM "StepExecution" s
         WHERE s."executionId" = e.id AND s."stepId" = e."currentStepId" ${conditions} ${FENCE}) s ON true`;

/**
 * The one predicate per reason, as a query returning StuckItem rows. Each is driven by
 * the small partial index of its state, whose key is the item's `since`; the ids an
 * item is known by come from the driving row, so a filter on them (one execution's
 * reasons, a page of executions) reaches that index's table directly.
 */
export function stuckQuery(reason: StuckReason, s: StuckScope, reading: StuckReading = 'set'): Prisma.Sql {
  switch (reason) {
    case 'WAIT_OVERDUE':
      return stepItem(
        reason,
        s,
        reading,
        (executionId) => Prisma.sql`'WAIT_OVERDUE' AS reason, ${executionId} AS "itemId", ${executionId} AS "executionId", NULL::uuid AS "eventId", e."workflowId", e."contactId",
               s."dueAt" AS since,
               jsonb_build_object('stepExecutionId', s.id, 'stepId', s."stepId", 'dueAt', s."dueAt", 'version', e.version) AS detail`,
        Prisma.sql`s.status = 'WAITING' AND s."resolvedBy" IS NULL AND s."dueAt" < ${grace(s)}`,
      );
    case 'LEASE_EXPIRED':
      return stepItem(
        reason,
        s,
        reading,
        (executionId) => Prisma.sql`'LEASE_EXPIRED' AS reason, ${executionId} AS "itemId", ${executionId} AS "executionId", NULL::uuid AS "eventId", e."workflowId", e."contactId",
               s."leaseExpiresAt" AS since,
               jsonb_build_object('stepExecutionId', s.id, 'stepId', s."stepId", 'attempt', s.attempt, 'leaseOwner', s."leaseOwner", 'version', e.version) AS detail`,
        Prisma.sql`s.status = 'RUNNING' AND s."leaseExpiresAt" < ${grace(s)}`,
      );
    case 'MISSING_STEP':
      // Due for a worker for longer than the grace, and no worker holds its step: no
      // step row yet, or one waiting for its retry. (A held-but-dead step is LEASE_EXPIRED.)
      return Prisma.sql`
        -- stuck.MISSING_STEP
        SELECT 'MISSING_STEP' AS reason, e.id AS "itemId", e.id AS "executionId", NULL::uuid AS "eventId", e."workflowId", e."contactId",
               e."readyAt" AS since,
               jsonb_build_object('stepId', e."currentStepId", 'stepStatus', s.status, 'attempt', s.attempt, 'version', e.version) AS detail
          FROM ${executionsOf(reading)}
          ${currentStepOf('LEFT JOIN', Prisma.empty, reading)}
         WHERE e.status = ${statusOf(reason)} AND e."readyAt" < ${grace(s)}
           AND e."projectId" = ${s.projectId}::uuid
           AND (s.id IS NULL OR s.status <> 'RUNNING')
           ${workflowFilter(s)}`;
    case 'CONTINUATION_PENDING':
      return stepItem(
        reason,
        s,
        reading,
        (executionId) => Prisma.sql`'CONTINUATION_PENDING' AS reason, ${executionId} AS "itemId", ${executionId} AS "executionId", s."resumeEventId" AS "eventId", e."workflowId", e."contactId",
               s."resolvedAt" AS since,
               jsonb_build_object('stepExecutionId', s.id, 'stepId', s."stepId", 'resolvedBy', s."resolvedBy",
                                  'branch', s."resolvedBranch", 'version', e.version) AS detail`,
        Prisma.sql`s.status = 'WAITING' AND s."resolvedBy" IS NOT NULL AND s."resolvedAt" < ${grace(s)}`,
      );
    case 'EVENT_DEAD':
      return Prisma.sql`
        -- stuck.EVENT_DEAD
        SELECT 'EVENT_DEAD' AS reason, ev.id AS "itemId", NULL::uuid AS "executionId", ev.id AS "eventId", NULL::uuid AS "workflowId", ev."contactId",
               ev."deadAt" AS since,
               jsonb_build_object('name', ev.name, 'attempts', ev."dispatchAttempts", 'lastError', ev."lastError",
                                  'version', ev."dispatchAttempts") AS detail
          FROM "Event" ev
         WHERE ev."projectId" = ${s.projectId}::uuid AND ev."deadAt" IS NOT NULL
           AND ${s.workflowId ?? null}::uuid IS NULL ${noExecution(reading)}`;
    case 'EVENT_PENDING':
      return Prisma.sql`
        -- stuck.EVENT_PENDING
        SELECT 'EVENT_PENDING' AS reason, ev.id AS "itemId", NULL::uuid AS "executionId", ev.id AS "eventId", NULL::uuid AS "workflowId", ev."contactId",
               ev."createdAt" AS since,
               jsonb_build_object('name', ev.name, 'attempts', ev."dispatchAttempts", 'lastError', ev."lastError",
                                  'nextDispatchAt', ev."nextDispatchAt", 'version', ev."dispatchAttempts") AS detail
          FROM "Event" ev
         WHERE ev."projectId" = ${s.projectId}::uuid AND ev."processedAt" IS NULL AND ev."deadAt" IS NULL
           AND ev."createdAt" < ${grace(s)}
           AND ${s.workflowId ?? null}::uuid IS NULL ${noExecution(reading)}`;
    case 'FAILED':
      return Prisma.sql`
        -- stuck.FAILED
        SELECT 'FAILED' AS reason, e.id AS "itemId", e.id AS "executionId", NULL::uuid AS "eventId", e."workflowId", e."contactId",
               COALESCE(e."finishedAt", e."updatedAt") AS since,
               jsonb_build_object('stepExecutionId', s.id, 'stepId', s."stepId", 'attempt', s.attempt, 'error', e."lastError",
                                  'version', e.version) AS detail
          FROM ${executionsOf(reading)}
          ${currentStepOf('JOIN', Prisma.sql`AND s.status = 'FAILED'`, reading)}
         WHERE e."projectId" = ${s.projectId}::uuid AND e.status = ${statusOf(reason)}
           ${workflowFilter(s)}`;
    case 'MESSAGE_UNCONFIRMED':
      // Claimed for sending (QUEUED -> SENDING) and never recorded SENT or FAILED: the
      // sender died between handing it to the transport and writing the outcome (or its
      // provider did not answer within the send timeout), so nobody knows whether it went
      // out. A live sender renews the lease while it sends: its lapse is the sign.
      return messageItem(
        s,
        reading,
        Prisma.sql`'MESSAGE_UNCONFIRMED' AS reason, m.id AS "itemId", m."executionId", NULL::uuid AS "eventId", e."workflowId", e."contactId",
               m."leaseExpiresAt" AS since,
               jsonb_build_object('messageId', m.id, 'stepExecutionId', m."stepExecutionId", 'status', m.status,
                                  'to', m."to", 'subject', m.subject, 'sender', m."leaseOwner", 'version', e.version,
                                  'messageVersion', m.version) AS detail`,
        emailConditions(reason, s),
      );
    case 'MESSAGE_FAILED':
      return messageItem(
        s,
        reading,
        Prisma.sql`'MESSAGE_FAILED' AS reason, m.id AS "itemId", m."executionId", NULL::uuid AS "eventId", e."workflowId", e."contactId",
               m."createdAt" AS since,
               jsonb_build_object('messageId', m.id, 'stepExecutionId', m."stepExecutionId", 'status', m.status,
                                  'to', m."to", 'subject', m.subject, 'error', m.error, 'version', e.version,
                                  'messageVersion', m.version) AS detail`,
        emailConditions(reason, s),
      );
  }
}

/** The items of these reasons, as one query (their predicates, UNION ALL). */
export function union(reasons: readonly StuckReason[], s: StuckScope, reading: StuckReading = 'set'): Prisma.Sql {
  return Prisma.join(
    reasons.map((r) => Prisma.sql`(${stuckQuery(r, s, reading)})`),
    ' UNION ALL ',
  );
}

/** The step an item (a row `x` of the predicates) is about (null for events and emails). */
export const itemStep = Prisma.sql`(x.detail->>'stepId')`;
/** The error text an item carries: a failed step's or email's error, an event's last dispatch error. */
export const itemError = Prisma.sql`COALESCE(x.detail->>'error', x.detail->>'lastError')`;

/** The reasons one execution is stuck for right now (the console's detail page, previews). */
export async function stuckReasonsOf(db: RawDb, s: StuckScope, executionId: string): Promise<StuckItem[]> {
  const executionReasons = STUCK_REASONS.filter((r) => !EVENT_REASONS.includes(r));
  return db.$queryRaw<StuckItem[]>`
    -- stuckReasonsOf
    SELECT * FROM (${union(executionReasons, s)}) x WHERE x."executionId" = ${executionId}::uuid`;
}

// ---------------------------------------------------------------------------
// executions.list({ stuck }): the same predicates, read from both ends. A page walks the
// list's own order and probes each execution (cheap while stuck ones are dense in it),
// and past a window of executions falls back to the reasons' set (cheap while they are
// few): server/read/executions/list.ts.

/** The reasons of these whose items are executions' (not events'). */
export const executionReasons = (reasons: readonly StuckReason[]) => reasons.filter((r) => !EVENT_REASONS.includes(r));

/**
 * The items of the one execution whose id is `key` (a column of an enclosing query) for
 * these execution reasons, probed (see StuckReading): a few primary-key lookups each.
 */
export function stuckOfExecution(reasons: readonly StuckReason[], s: StuckScope, key: Prisma.Sql): Prisma.Sql {
  return union(executionReasons(reasons), s, { execution: key });
}

/** The ids of the executions stuck for one of these execution reasons now: the predicates read as a set. */
export function stuckExecutionIds(reasons: readonly StuckReason[], s: StuckScope): Prisma.Sql {
  return Prisma.sql`-- stuckExecutionIds
      SELECT x."executionId" FROM (${union(executionReasons(reasons), s)}) x`;
}

/**
 * For reasons about emails only (an execution in any status may have one): the ids of the
 * executions their emails name, from the emails' partial indexes, without the conditions
 * on the execution itself — a superset of the stuck ones, cheap to hash, that a walk over
 * the list's order tests each execution against before probing it. Null for other reasons.
 */
export function stuckEmailExecutionIds(reasons: readonly StuckReason[], s: StuckScope): Prisma.Sql | null {
  const emails = executionReasons(reasons);
  if (!emails.every((r): r is 'MESSAGE_UNCONFIRMED' | 'MESSAGE_FAILED' => MESSAGE_REASONS.includes(r))) return null;
  return Prisma.join(
    emails.map((r) => Prisma.sql`-- stuck.emailExecutionIds
        SELECT m."executionId" FROM "Message" m WHERE m."projectId" = ${s.projectId}::uuid AND ${emailConditions(r, s)}`),
    ' UNION ALL ',
  );
}

/**
 * These reasons' execution reasons by the execution status they need: a stuck filter
 * walks each status's executions on their own. Null: the emails' reasons, any status.
 */
export function stuckReasonsByStatus(reasons: readonly StuckReason[]): Map<string | null, StuckReason[]> {
  const groups = new Map<string | null, StuckReason[]>();
  for (const reason of executionReasons(reasons)) {
    const status = STUCK_EXECUTION_STATUS[reason];
    groups.set(status, [...(groups.get(status) ?? []), reason]);
  }
  return groups;
}
