import { Prisma, type DbTx } from '../db';
import { DEFAULT_ENGINE_CONFIG } from '../engine/context';
import { EVENT_REASONS, STUCK_REASONS, stuckByReason, stuckExecutionFilter, stuckQuery, type StuckItem, type StuckReason, type StuckScope } from '../repair/stuck';
import { actorLabels } from './actors';
import { projectCountsFigure } from './console-figures';
import type { KeysetPosition } from './cursor';
import { directionOf, keysetClause, twoWayPage, type TwoWayPage } from './keyset';

// The console's read model of executions (DESIGN.md section 6): the list, one execution's
// story, the counts. Routers validate, authorize and call these; every statement starts
// from an index range (test/api/executions-explain.test.ts, test/api/read-explain.test.ts).

export const EXECUTION_STATUS_LIST = ['RUNNING', 'WAITING', 'COMPLETED', 'EXITED', 'FAILED', 'CANCELLED'] as const;
export type ExecutionStatusName = (typeof EXECUTION_STATUS_LIST)[number];

export interface ExecutionListItem {
  id: string;
  workflowId: string;
  workflowName: string;
  contactId: string;
  contactEmail: string;
  status: string;
  version: number;
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
}

/** A LIKE pattern matching what starts with `prefix`, taken literally (ESCAPE '\\'). */
const likePrefix = (prefix: string) => `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;


/**
 * executions.list as one SQL statement: newest first on (startedAt, id), which the
 * (projectId | projectId, status | workflowId | currentStepId; startedAt DESC, id DESC)
 * indexes serve in order (backwards for the previous page), so a page stops after LIMIT
 * rows; stuck reasons are the predicates of server/repair/stuck.ts. Fetches limit + 1
 * rows to know whether a further page exists.
 */
export function executionListQuery(f: ExecutionFilter): Prisma.Sql {
  const conditions: Prisma.Sql[] = [Prisma.sql`e."projectId" = ${f.projectId}::uuid`];
  if (f.workflowId) conditions.push(Prisma.sql`e."workflowId" = ${f.workflowId}::uuid`);
  if (f.stepId) conditions.push(Prisma.sql`e."currentStepId" = ${f.stepId}::uuid`);
  if (f.status?.length) conditions.push(Prisma.sql`e.status = ANY(${f.status}::"ExecutionStatus"[])`);
  if (f.contact && 'id' in f.contact) conditions.push(Prisma.sql`e."contactId" = ${f.contact.id}::uuid`);
  if (f.contact && 'emailPrefix' in f.contact) {
    conditions.push(Prisma.sql`lower(c.email) LIKE ${likePrefix(f.contact.emailPrefix.toLowerCase())} ESCAPE '\\'`);
  }
  if (f.since) conditions.push(Prisma.sql`e."startedAt" >= ${f.since}::timestamptz`);
  if (f.until) conditions.push(Prisma.sql`e."startedAt" < ${f.until}::timestamptz`);
  if (f.stuck?.length) {
    conditions.push(stuckExecutionFilter(f.stuck, { projectId: f.projectId, workflowId: f.workflowId ?? null, graceSeconds: f.graceSeconds ?? 0 }));
  }
  const keyset = keysetClause(Prisma.sql`e."startedAt"`, Prisma.sql`e.id`, directionOf(f));
  if (keyset.where) conditions.push(keyset.where);
  return Prisma.sql`
    SELECT e.id, e."workflowId", w.name AS "workflowName", e."contactId", c.email AS "contactEmail",
           e.status::text AS status, e.version, e."currentStepId",
           ws.key AS "stepKey", ws.name AS "stepName", ws.type::text AS "stepType",
           e."startedAt", e."updatedAt", e."finishedAt", e."exitReason", e."lastError"
      FROM "WorkflowExecution" e
      JOIN "Workflow" w ON w.id = e."workflowId"
      JOIN "Contact" c ON c.id = e."contactId"
      LEFT JOIN "WorkflowStep" ws ON ws.id = e."currentStepId"
     WHERE ${Prisma.join(conditions, ' AND ')}
     ORDER BY ${keyset.order}
     LIMIT ${f.limit + 1}::int`;
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
  const rows = await db.$queryRaw<{ id: string }[]>`SELECT q.id FROM (${executionListQuery({ ...f, limit: max })}) q`;
  return rows.length > max ? null : rows.map((r) => r.id);
}

/** The execution reasons (not the events') of STUCK_REASONS. */
const EXECUTION_REASONS = STUCK_REASONS.filter((r) => !EVENT_REASONS.includes(r));

/**
 * Why each of these executions is stuck right now: the stuck predicates, each narrowed to
 * the given ids (PostgreSQL pushes the id condition into every branch, so each is a few
 * primary-key or executionId lookups, not a scan of the predicate's index).
 */
export function stuckOfExecutionsQuery(s: StuckScope, executionIds: string[]): Prisma.Sql {
  const branches = EXECUTION_REASONS.map((r) => Prisma.sql`(${stuckQuery(r, s)})`);
  return Prisma.sql`
    SELECT x.reason, x."executionId", x.since, x.detail
      FROM (${Prisma.join(branches, ' UNION ALL ')}) x
     WHERE x."executionId" = ANY(${executionIds}::uuid[])`;
}

export async function listExecutions(db: DbTx, f: ExecutionFilter & { graceSeconds: number }): Promise<TwoWayPage<ExecutionListRow>> {
  const direction = directionOf(f);
  const rows = await db.$queryRaw<ExecutionListItem[]>(executionListQuery(f));
  const page = twoWayPage(rows, f.limit, direction, (e) => ({ at: e.startedAt, id: e.id }));
  const ids = page.items.map((e) => e.id);
  const stuck = ids.length
    ? await db.$queryRaw<{ reason: StuckReason; executionId: string; since: Date }[]>(
        stuckOfExecutionsQuery({ projectId: f.projectId, workflowId: null, graceSeconds: f.graceSeconds }, ids),
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

// ---------------------------------------------------------------------------
// One execution's story

export interface StepExecutionRow {
  id: string;
  stepId: string;
  stepKey: string;
  stepName: string;
  stepType: string;
  /** The step's configuration (a wait's event name and timeout, a delay's seconds). */
  stepConfig: unknown;
  status: string;
  attempt: number;
  /** True while a worker holds the step (a claim token is set). */
  held: boolean;
  dueAt: Date | null;
  leaseExpiresAt: Date | null;
  /** The worker that holds (or last held) the step's lease, e.g. `worker:host:pid`. */
  leaseOwner: string | null;
  resolvedBy: string | null;
  resolvedAt: Date | null;
  resolvedBranch: string | null;
  resumeEventId: string | null;
  output: unknown;
  error: string | null;
  startedAt: Date;
  finishedAt: Date | null;
}

/** What happens next to an execution, as the engine will do it with nobody's help. */
export type NextUp =
  | { kind: 'timer'; at: Date; stepName: string; stepType: string }
  | { kind: 'lease'; until: Date; stepName: string; attempt: number; maxAttempts: number; owner: string | null }
  | { kind: 'worker'; at: Date | null; stepName: string | null }
  | { kind: 'continuation'; since: Date | null; stepName: string }
  | { kind: 'operator'; why: string }
  | { kind: 'done'; status: string; at: Date | null; exitReason: string | null };

function nextUp(
  e: { status: string; readyAt: Date | null; finishedAt: Date | null; exitReason: string | null; currentStepId: string | null; stepName: string | null },
  steps: StepExecutionRow[],
): NextUp {
  const current = steps.find((s) => s.stepId === e.currentStepId);
  switch (e.status) {
    case 'WAITING':
      if (current?.status === 'WAITING' && current.resolvedBy) {
        return { kind: 'continuation', since: current.resolvedAt, stepName: current.stepName };
      }
      if (current?.status === 'WAITING' && current.dueAt) {
        return { kind: 'timer', at: current.dueAt, stepName: current.stepName, stepType: current.stepType };
      }
      return { kind: 'operator', why: 'waiting without a wait step in place' };
    case 'RUNNING':
      if (current?.status === 'RUNNING' && current.leaseExpiresAt) {
        // Workers re-claim an expired lease until the step has had its attempts (a poison step is left to an operator).
        return { kind: 'lease', until: current.leaseExpiresAt, stepName: current.stepName, attempt: current.attempt, maxAttempts: DEFAULT_ENGINE_CONFIG.maxStepAttempts, owner: current.leaseOwner };
      }
      return { kind: 'worker', at: e.readyAt, stepName: e.stepName };
    case 'FAILED':
      return { kind: 'operator', why: 'failed: a worker never retries it by itself once its attempts are spent' };
    default:
      return { kind: 'done', status: e.status, at: e.finishedAt, exitReason: e.exitReason };
  }
}

export async function executionDetail(db: DbTx, s: StuckScope, id: string) {
  const projectId = s.projectId;
  const [execution] = await db.$queryRaw<
    (ExecutionListItem & { context: unknown; sourceEventId: string | null; readyAt: Date | null; enrollOnce: boolean })[]
  >`
    SELECT e.id, e."workflowId", w.name AS "workflowName", e."contactId", c.email AS "contactEmail",
           e.status::text AS status, e.version, e."currentStepId",
           ws.key AS "stepKey", ws.name AS "stepName", ws.type::text AS "stepType",
           e."startedAt", e."updatedAt", e."finishedAt", e."exitReason", e."lastError", e.context, e."sourceEventId",
           e."readyAt", e."enrollOnce"
      FROM "WorkflowExecution" e
      JOIN "Workflow" w ON w.id = e."workflowId"
      JOIN "Contact" c ON c.id = e."contactId"
      LEFT JOIN "WorkflowStep" ws ON ws.id = e."currentStepId"
     WHERE e.id = ${id}::uuid AND e."projectId" = ${projectId}::uuid`;
  if (!execution) return null;

  const [steps, messages, audit, stuck] = await Promise.all([
    db.$queryRaw<StepExecutionRow[]>`
      SELECT s.id, s."stepId", ws.key AS "stepKey", ws.name AS "stepName", ws.type::text AS "stepType", ws.config AS "stepConfig",
             s.status::text AS status, s.attempt, s."claimToken" IS NOT NULL AS held, s."dueAt", s."leaseExpiresAt", s."leaseOwner",
             s."resolvedBy"::text AS "resolvedBy", s."resolvedAt", s."resolvedBranch", s."resumeEventId",
             s.output, s.error, s."startedAt", s."finishedAt"
        FROM "StepExecution" s
        JOIN "WorkflowStep" ws ON ws.id = s."stepId"
       WHERE s."executionId" = ${execution.id}::uuid
       ORDER BY s."startedAt", s.id`,
    db.message.findMany({
      where: { executionId: execution.id, projectId },
      orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
      select: {
        id: true,
        stepExecutionId: true,
        to: true,
        subject: true,
        body: true,
        status: true,
        version: true,
        providerId: true,
        error: true,
        leaseExpiresAt: true,
        createdAt: true,
        sentAt: true,
      },
    }),
    db.auditEntry.findMany({
      where: { projectId, targetId: execution.id },
      orderBy: [{ at: 'desc' }, { id: 'desc' }],
      take: 100,
    }),
    db.$queryRaw<StuckItem[]>`SELECT * FROM (${stuckOfExecutionsQuery(s, [execution.id])}) x`,
  ]);

  const resumers = steps.map((st) => st.resumeEventId).filter((v): v is string => v !== null);
  const eventIds = [...new Set([...(execution.sourceEventId ? [execution.sourceEventId] : []), ...resumers])];
  const [events, labels] = await Promise.all([
    eventIds.length
      ? db.event.findMany({
          where: { projectId, id: { in: eventIds } },
          orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
          select: {
            id: true,
            name: true,
            data: true,
            idempotencyKey: true,
            createdAt: true,
            processedAt: true,
            deadAt: true,
            dispatchAttempts: true,
            nextDispatchAt: true,
            lastError: true,
          },
        })
      : Promise.resolve([]),
    actorLabels(db, projectId, audit.map((a) => a.actor)),
  ]);

  // Who enrolled it: the event it was started by, else the person or key whose
  // enrollments.enroll call created it (its audit entry), else the engine itself.
  const enrollEntry = audit.find((a) => a.action === 'enrollments.enroll' && a.outcome === 'APPLIED');
  const sourceEvent = events.find((ev) => ev.id === execution.sourceEventId);
  const enrolledBy = sourceEvent
    ? { kind: 'event' as const, eventId: sourceEvent.id, eventName: sourceEvent.name, at: sourceEvent.createdAt }
    : enrollEntry
      ? { kind: 'actor' as const, actor: enrollEntry.actor, actorLabel: labels.get(enrollEntry.actor) ?? null, at: enrollEntry.at }
      : { kind: 'engine' as const };

  return {
    ...execution,
    enrolledBy,
    steps,
    messages,
    events: events.map((ev) => ({
      ...ev,
      role: ev.id === execution.sourceEventId ? ('source' as const) : ('resumed' as const),
      stepExecutionIds: steps.filter((st) => st.resumeEventId === ev.id).map((st) => st.id),
    })),
    audit: audit.map((a) => ({ ...a, actorLabel: labels.get(a.actor) ?? null })),
    stuck,
    /** How long a state may last before it counts as stuck (STUCK_GRACE_SECONDS). */
    graceSeconds: s.graceSeconds,
    next: nextUp(execution, steps),
  };
}

// ---------------------------------------------------------------------------
// Counts

/**
 * How many executions are in each status, and how many items are stuck for each reason:
 * the project's counts figure (server/read/console-figures.ts), narrowed to the workflow
 * when one is given. `asOf` null: counted for this read; else when they were counted.
 */
export async function executionStats(db: DbTx, s: StuckScope) {
  const { value, asOf } = await projectCountsFigure(db, s);
  const inScope = (c: { workflowId: string | null }) => !s.workflowId || c.workflowId === s.workflowId;
  const byStatus = Object.fromEntries(EXECUTION_STATUS_LIST.map((st) => [st, 0])) as Record<ExecutionStatusName, number>;
  for (const c of value.executions) if (inScope(c)) byStatus[c.status as ExecutionStatusName] += c.n;
  const byStuckReason = stuckByReason(value.stuck.filter(inScope));
  return { byStatus, byStuckReason, total: Object.values(byStatus).reduce((a, b) => a + b, 0), asOf };
}
