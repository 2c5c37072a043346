import { Prisma, type DbTx } from '../../db';
import { STUCK_REASONS, type StuckReason } from '../../common/stuck-reasons';
import {
  executionReasons,
  STUCK_EXECUTION_STATUS,
  stuckEmailExecutionIds,
  stuckExecutionIds,
  stuckOfExecution,
  stuckQuery,
  stuckReasonsByStatus,
  type StuckScope,
} from '../../stuck/predicates';
import type { KeysetPosition } from '../cursor';
import { directionOf, keysetClause, twoWayPage, type TwoWayPage } from '../keyset';

// The execution list: its filter, its keyset-paged query and what it shows of each
// execution's stuck reasons.


export interface ExecutionListItem {
  id: string;
  workflowId: string;
  workflowName: string;
  contactId: string;
  contactEmail: string;
  status: string;
  version: number;
  /** The number of the workflow version the execution runs on (docs/versions.md). */
  workflowVersion: number;
  /** The workflow's newest published version: an execution on an older one may be moved (MIGRATE). */
  latestVersion: number;
  currentStepId: string | null;
  stepKey: string | null;
  stepName: string | null;
  stepType: string | null;
  startedAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
  exitReason: string | null;
  lastError: string | null;
}

/** A list row with why it is stuck right now (empty when it is not), oldest reason first. */
export interface ExecutionListRow extends ExecutionListItem {
  stuck: { reason: StuckReason; since: Date }[];
}

export interface ExecutionFilter {
  projectId: string;
  workflowId?: string | undefined;
  /** The step it is at now (step ids are unique across workflows). */
  stepId?: string | undefined;
  status?: string[] | undefined;
  stuck?: StuckReason[] | undefined;
  contact: { id: string } | { emailPrefix: string } | null;
  since?: Date | undefined;
  until?: Date | undefined;
  /** Older than this position (the next page). */
  cursor?: KeysetPosition | undefined;
  /** Newer than this position (the previous page); wins over cursor. */
  before?: KeysetPosition | undefined;
  limit: number;
  /** Seconds before a state counts as stuck (STUCK_GRACE_SECONDS). */
  graceSeconds?: number;
  /** How many executions a stuck filter walks before reading the stuck set (tests make it small to read both ways). */
  stuckWindow?: number;
}

/** A LIKE pattern matching what starts with `prefix`, taken literally (ESCAPE '\\'). */
const likePrefix = (prefix: string) => `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;


/**
 * How many executions a stuck filter probes, in the list's order, before it reads the
 * stuck set instead: past it, stuck ones are too sparse among them for walking to pay.
 * A page costs at most this many probes (a few index lookups each) plus, only when the
 * window ran out first, the reasons' set.
 */
export const STUCK_WINDOW = 1000;
/**
 * The window of a filter on emails' reasons only, whose walk first tests each execution
 * against the hashed ids its emails' partial indexes name (a hash lookup, no probe):
 * failed emails are rare among executions, so the walk is longer and each step cheaper.
 */
export const STUCK_EMAIL_WINDOW = 20_000;

/**
 * executions.list as one SQL statement: newest first on (startedAt, id), which the
 * (projectId | projectId, status | workflowId | currentStepId; startedAt DESC, id DESC)
 * indexes serve in order (backwards for the previous page), so a page stops after LIMIT
 * rows; stuck reasons are the predicates of server/stuck/predicates.ts. Fetches limit + 1
 * rows to know whether a further page exists.
 */
export function executionListQuery(f: ExecutionFilter): Prisma.Sql {
  const conditions: Prisma.Sql[] = [Prisma.sql`e."projectId" = ${f.projectId}::uuid`];
  if (f.workflowId) conditions.push(Prisma.sql`e."workflowId" = ${f.workflowId}::uuid`);
  if (f.stepId) conditions.push(Prisma.sql`e."currentStepId" = ${f.stepId}::uuid`);
  if (f.status?.length) conditions.push(Prisma.sql`e.status = ANY(${f.status}::"ExecutionStatus"[])`);
  if (f.contact && 'id' in f.contact) conditions.push(Prisma.sql`e."contactId" = ${f.contact.id}::uuid`);
  const byEmail = f.contact && 'emailPrefix' in f.contact;
  if (f.contact && 'emailPrefix' in f.contact) {
    // The contact's project, said outright, lets the ("projectId", lower(email) text_pattern_ops)
    // index find the matching contacts (an execution's contact is always its project's).
    conditions.push(Prisma.sql`c."projectId" = ${f.projectId}::uuid AND lower(c.email) LIKE ${likePrefix(f.contact.emailPrefix.toLowerCase())} ESCAPE '\\'`);
  }
  if (f.since) conditions.push(Prisma.sql`e."startedAt" >= ${f.since}::timestamptz`);
  if (f.until) conditions.push(Prisma.sql`e."startedAt" < ${f.until}::timestamptz`);
  const direction = directionOf(f);
  const keyset = keysetClause(Prisma.sql`e."startedAt"`, Prisma.sql`e.id`, direction);
  if (keyset.where) conditions.push(keyset.where);
  const columns = Prisma.sql`
    -- listExecutions
    SELECT e.id, e."workflowId", w.name AS "workflowName", e."contactId", c.email AS "contactEmail",
           e.status::text AS status, e.version, v.number AS "workflowVersion", w."latestVersion", e."currentStepId",
           ws.key AS "stepKey", ws.name AS "stepName", ws.type::text AS "stepType",
           e."startedAt", e."updatedAt", e."finishedAt", e."exitReason", e."lastError"`;
  const joins = Prisma.sql`
      JOIN "Workflow" w ON w.id = e."workflowId"
      JOIN "WorkflowVersion" v ON v.id = e."workflowVersionId"
      JOIN "Contact" c ON c.id = e."contactId"
      LEFT JOIN "WorkflowStep" ws ON ws.id = e."currentStepId"`;
  const limit = Prisma.sql`LIMIT ${f.limit + 1}::int`;
  if (!f.stuck?.length) {
    return Prisma.sql`${columns}
      FROM "WorkflowExecution" e ${joins}
     WHERE ${Prisma.join(conditions, ' AND ')}
     ORDER BY ${keyset.order} ${limit}`;
  }
  const reasons = executionReasons(f.stuck);
  if (reasons.length === 0) {
    // Events' reasons: no execution is stuck for them.
    return Prisma.sql`${columns} FROM "WorkflowExecution" e ${joins} WHERE FALSE`;
  }
  const scope: StuckScope = { projectId: f.projectId, workflowId: f.workflowId ?? null, graceSeconds: f.graceSeconds ?? 0 };
  const contact = byEmail ? Prisma.sql`JOIN "Contact" c ON c.id = e."contactId"` : Prisma.empty;
  const order = keysetClause(Prisma.sql`x."startedAt"`, Prisma.sql`x.id`, direction).order;
  const backwards = direction !== null && 'before' in direction;

  // One stream per way of walking: the reasons that need one execution status walk that
  // status's index; the emails' reasons walk every execution, testing each against the
  // hashed ids their emails' index names (a hash lookup) before probing it. Each stream
  // yields the first limit + 1 of its stuck executions past the cursor, so their union's
  // first limit + 1 are the page's.
  const streams = [...stuckReasonsByStatus(reasons)].map(([status, group], i) => {
    const walked = Prisma.raw(`walked_${i}`);
    const windowEnd = Prisma.raw(`window_end_${i}`);
    const beyond = Prisma.raw(`beyond_${i}`);
    const emailed = status === null ? stuckEmailExecutionIds(group, scope) : null;
    const size = f.stuckWindow ?? (emailed ? STUCK_EMAIL_WINDOW : STUCK_WINDOW);
    const candidates = status ? [...conditions, Prisma.sql`e.status = ${status}::"ExecutionStatus"`] : conditions;
    const window = (offset: number, count: number) => Prisma.sql`
        -- listExecutionsStuck.window
        SELECT e.id, e."startedAt" FROM "WorkflowExecution" e ${contact}
         WHERE ${Prisma.join(candidates, ' AND ')}
         ORDER BY ${keyset.order} OFFSET ${offset}::int LIMIT ${count}::int`;
    // The window's executions to probe: all of them, or (emails' reasons) those the
    // emails' index names, hashed, and only those probed (fenced, so no probe runs first).
    const walk = emailed
      ? Prisma.sql`-- listExecutionsStuck.walk
        SELECT x.id, x."startedAt" FROM (${window(0, size)}) x WHERE x.id IN (${emailed}) OFFSET 0`
      : window(0, size);
    // Past the window's last execution, in the page's direction.
    const past = Prisma.sql`(e."startedAt", e.id) ${Prisma.raw(backwards ? '>' : '<')} (SELECT x."startedAt", x.id FROM ${windowEnd} x)`;
    // The stuck filter reads windows: the next `size` executions the other filters and
    // the status select, walked in the page's order and each probed, the walk stopping
    // when the page is full; only when the window runs out first, the reasons' set
    // beyond the window, each of its executions looked up and the page sorted from them.
    // Either way the rows are exactly the stuck predicates' (stuck.ts).
    return {
      ctes: Prisma.sql`
    ${walked} AS MATERIALIZED (
      SELECT x.id, x."startedAt" FROM (${walk}) x
       WHERE EXISTS (${stuckOfExecution(group, scope, Prisma.sql`x.id`)})
       ORDER BY ${order} ${limit}
    ), ${windowEnd} AS MATERIALIZED (${window(size - 1, 1)}
    ), ${beyond} AS (
      SELECT e.id, e."startedAt"
        FROM (SELECT DISTINCT x."executionId" AS id FROM (${stuckExecutionIds(group, scope)}) x) stuck
       CROSS JOIN LATERAL (SELECT e.* FROM "WorkflowExecution" e WHERE e.id = stuck.id OFFSET 0) e
       ${contact}
       WHERE (SELECT count(*) FROM ${walked}) <= ${f.limit}::int AND EXISTS (SELECT 1 FROM ${windowEnd})
         AND ${Prisma.join(conditions, ' AND ')} AND ${past}
       ORDER BY ${keyset.order} ${limit}
    )`,
      rows: Prisma.sql`-- listExecutionsStuck.rows
        SELECT * FROM ${walked} UNION SELECT * FROM ${beyond}`,
    };
  });
  return Prisma.sql`
    -- listExecutionsStuck
    WITH ${Prisma.join(
      streams.map((s) => s.ctes),
      ',',
    )}
    ${columns}
      FROM (${Prisma.join(
        streams.map((s) => s.rows),
        ' UNION ',
      )}) p
      JOIN "WorkflowExecution" e ON e.id = p.id ${joins}
     ORDER BY ${keyset.order} ${limit}`;
}

/**
 * The ids of the executions a list filter selects now, newest first, at most `max`; null
 * when it selects more (a bulk repair over it is refused rather than cut short silently).
 */
export async function executionIdsMatching(
  db: DbTx,
  f: Omit<ExecutionFilter, 'limit' | 'cursor' | 'before'> & { graceSeconds: number },
  max: number,
): Promise<string[] | null> {
  const rows = await db.$queryRaw<{ id: string }[]>`-- executionIdsMatching
    SELECT q.id FROM (${executionListQuery({ ...f, limit: max })}) q`;
  return rows.length > max ? null : rows.map((r) => r.id);
}

/**
 * Why each of these executions is stuck right now: each one probed (see StuckReading in
 * stuck.ts) for the reasons its status allows (a reason about its step needs the status
 * the step's state implies; its emails' reasons, any), a few primary-key lookups per
 * execution and reason whatever the planner estimates, never a scan of a partial index.
 */
export function stuckOfExecutionsQuery(s: StuckScope, executions: { id: string; status: string }[]): Prisma.Sql {
  const branches = executionReasons(STUCK_REASONS).flatMap((reason) => {
    const status = STUCK_EXECUTION_STATUS[reason];
    const ids = executions.filter((e) => status === null || e.status === status).map((e) => e.id);
    if (ids.length === 0) return [];
    return [
      Prisma.sql`(SELECT x.reason, x."executionId", x.since, x.detail
                    FROM unnest(${ids}::uuid[]) AS listed(id)
                   CROSS JOIN LATERAL (${stuckQuery(reason, s, { execution: Prisma.sql`listed.id` })}) x)`,
    ];
  });
  if (branches.length === 0) {
    return Prisma.sql`-- stuckOfExecutions.none
      SELECT NULL::text AS reason, NULL::uuid AS "executionId", NULL::timestamptz AS since, NULL::jsonb AS detail WHERE FALSE`;
  }
  return Prisma.join(branches, ' UNION ALL ');
}

export async function listExecutions(db: DbTx, f: ExecutionFilter & { graceSeconds: number }): Promise<TwoWayPage<ExecutionListRow>> {
  const direction = directionOf(f);
  const rows = await db.$queryRaw<ExecutionListItem[]>(executionListQuery(f));
  const page = twoWayPage(rows, f.limit, direction, (e) => ({ at: e.startedAt, id: e.id }));
  const stuck = page.items.length
    ? await db.$queryRaw<{ reason: StuckReason; executionId: string; since: Date }[]>(
        stuckOfExecutionsQuery({ projectId: f.projectId, workflowId: null, graceSeconds: f.graceSeconds }, page.items),
      )
    : [];
  const byExecution = new Map<string, { reason: StuckReason; since: Date }[]>();
  for (const s of stuck) {
    const list = byExecution.get(s.executionId) ?? [];
    list.push({ reason: s.reason, since: s.since });
    byExecution.set(s.executionId, list);
  }
  return {
    ...page,
    items: page.items.map((e) => ({
      ...e,
      stuck: (byExecution.get(e.id) ?? []).sort((a, b) => a.since.getTime() - b.since.getTime()),
    })),
  };
}

/** Is this contact one of the project's? (A filter by id of another project's contact is NOT_FOUND.) */
export async function contactInProject(db: DbTx, projectId: string, contactId: string): Promise<boolean> {
  return (await db.contact.findFirst({ where: { id: contactId, projectId }, select: { id: true } })) !== null;
}
