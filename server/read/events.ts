import { Prisma, type DbTx } from '../db';
import type { KeysetPosition } from './cursor';
import { directionOf, keysetClause, twoWayPage, type TwoWayPage } from './keyset';

// The console's read model of tracked events and their dispatch (the outbox columns of
// docs/architecture.md, "Data model"): newest first, keyset-paginated on (createdAt, id), each with what
// it started (executions it enrolled) and what it resumed (waits it resolved).

/**
 * Where an event's dispatch stands: processed; pending (not yet tried); retrying (tried,
 * failed, tried again at nextDispatchAt); dead (dead-lettered after its last attempt).
 */
export const DISPATCH_STATES = ['processed', 'pending', 'retrying', 'dead'] as const;
export type DispatchState = (typeof DISPATCH_STATES)[number];

const STATE_SQL: Record<DispatchState, Prisma.Sql> = {
  processed: Prisma.sql`ev."processedAt" IS NOT NULL`,
  pending: Prisma.sql`(ev."processedAt" IS NULL AND ev."deadAt" IS NULL AND ev."dispatchAttempts" = 0)`,
  retrying: Prisma.sql`(ev."processedAt" IS NULL AND ev."deadAt" IS NULL AND ev."dispatchAttempts" > 0)`,
  dead: Prisma.sql`ev."deadAt" IS NOT NULL`,
};

export interface EventFilter {
  projectId: string;
  /** The exact event name. */
  name?: string | undefined;
  state?: DispatchState[] | undefined;
  contactId?: string | undefined;
  cursor?: KeysetPosition | undefined;
  before?: KeysetPosition | undefined;
  limit: number;
}

export interface EventRow {
  id: string;
  name: string;
  contactId: string | null;
  contactEmail: string | null;
  data: unknown;
  idempotencyKey: string | null;
  createdAt: Date;
  processedAt: Date | null;
  dispatchAttempts: number;
  nextDispatchAt: Date;
  deadAt: Date | null;
  lastError: string | null;
  leaseOwner: string | null;
  leaseExpiresAt: Date | null;
  state: DispatchState;
}

/**
 * events.list as one statement: the (projectId; createdAt DESC, id DESC) index gives the
 * order, (projectId, name; createdAt DESC, id DESC) when a name is given, the contact's
 * (contactId, createdAt) index when a contact is; the dispatch state is a filter on top.
 */
export function eventListQuery(f: EventFilter): Prisma.Sql {
  const conditions: Prisma.Sql[] = [Prisma.sql`ev."projectId" = ${f.projectId}::uuid`];
  if (f.name) conditions.push(Prisma.sql`ev.name = ${f.name}`);
  if (f.contactId) conditions.push(Prisma.sql`ev."contactId" = ${f.contactId}::uuid`);
  if (f.state?.length && f.state.length < 4) {
    conditions.push(Prisma.sql`(${Prisma.join(f.state.map((st) => STATE_SQL[st]), ' OR ')})`);
  }
  const keyset = keysetClause(Prisma.sql`ev."createdAt"`, Prisma.sql`ev.id`, directionOf(f));
  if (keyset.where) conditions.push(keyset.where);
  return Prisma.sql`
    -- listEvents
    SELECT ev.id, ev.name, ev."contactId",
           -- Per row of the page, by primary key (a join would be planned as a hash of every contact).
           (SELECT c.email FROM "Contact" c WHERE c.id = ev."contactId") AS "contactEmail", ev.data, ev."idempotencyKey", ev."createdAt",
           ev."processedAt", ev."dispatchAttempts", ev."nextDispatchAt", ev."deadAt", ev."lastError",
           ev."leaseOwner", ev."leaseExpiresAt",
           CASE WHEN ev."processedAt" IS NOT NULL THEN 'processed'
                WHEN ev."deadAt" IS NOT NULL THEN 'dead'
                WHEN ev."dispatchAttempts" > 0 THEN 'retrying'
                ELSE 'pending' END AS state
      FROM "Event" ev
     WHERE ${Prisma.join(conditions, ' AND ')}
     ORDER BY ${keyset.order}
     LIMIT ${f.limit + 1}::int`;
}

/** Executions these events enrolled (served by the partial sourceEventId index). */
export function startedByEventsQuery(projectId: string, eventIds: string[]): Prisma.Sql {
  return Prisma.sql`
    -- listEvents.startedBy
    SELECT e."sourceEventId" AS "eventId", e.id AS "executionId", e.status::text AS status, w.name AS "workflowName"
      FROM "WorkflowExecution" e
      JOIN "Workflow" w ON w.id = e."workflowId"
     WHERE e."sourceEventId" = ANY(${eventIds}::uuid[]) AND e."projectId" = ${projectId}::uuid`;
}

/** Waits these events resolved (served by the partial resumeEventId index). */
export function resumedByEventsQuery(projectId: string, eventIds: string[]): Prisma.Sql {
  return Prisma.sql`
    -- listEvents.resumedBy
    SELECT s."resumeEventId" AS "eventId", s."executionId", s.id AS "stepExecutionId", ws.name AS "stepName",
           s."resolvedBranch" AS branch, w.name AS "workflowName"
      FROM "StepExecution" s
      JOIN "WorkflowExecution" e ON e.id = s."executionId"
      JOIN "WorkflowStep" ws ON ws.id = s."stepId"
      JOIN "Workflow" w ON w.id = e."workflowId"
     WHERE s."resumeEventId" = ANY(${eventIds}::uuid[]) AND e."projectId" = ${projectId}::uuid`;
}

export interface EventListRow extends EventRow {
  started: { executionId: string; status: string; workflowName: string }[];
  resumed: { executionId: string; stepExecutionId: string; stepName: string; branch: string | null; workflowName: string }[];
}

export async function listEvents(db: DbTx, f: EventFilter): Promise<TwoWayPage<EventListRow>> {
  const rows = await db.$queryRaw<EventRow[]>(eventListQuery(f));
  const page = twoWayPage(rows, f.limit, directionOf(f), (ev) => ({ at: ev.createdAt, id: ev.id }));
  const ids = page.items.map((ev) => ev.id);
  const [started, resumed] = ids.length
    ? await Promise.all([
        db.$queryRaw<(EventListRow['started'][number] & { eventId: string })[]>(startedByEventsQuery(f.projectId, ids)),
        db.$queryRaw<(EventListRow['resumed'][number] & { eventId: string })[]>(resumedByEventsQuery(f.projectId, ids)),
      ])
    : [[], []];
  return {
    ...page,
    items: page.items.map((ev) => ({
      ...ev,
      started: started.filter((s) => s.eventId === ev.id).map(({ eventId: _, ...s }) => s),
      resumed: resumed.filter((r) => r.eventId === ev.id).map(({ eventId: _, ...r }) => r),
    })),
  };
}

/** The project's contact with this email (any case), for a filter given as an email. */
export async function contactIdByEmail(db: DbTx, projectId: string, email: string): Promise<string | null> {
  const [row] = await db.$queryRaw<{ id: string }[]>`
    -- contactIdByEmail
    SELECT id FROM "Contact" WHERE "projectId" = ${projectId}::uuid AND lower(email) = lower(${email})`;
  return row?.id ?? null;
}
