import { Prisma, type DbTx } from '../db';
import { executionIsActive } from '../engine/claims/fragments';
import type { KeysetPosition } from './cursor';
import { directionOf, keysetClause, twoWayPage, type TwoWayPage } from './keyset';

// The console's read model of contacts: the contacts page (newest first,
// keyset-paginated both ways on (createdAt, id), searched by email prefix and by a data
// field) and one contact's journey: its executions across workflows, the events tracked
// for it and the emails sent to it, each bounded and read from an index range.

export interface ContactFilter {
  projectId: string;
  /** The start of the email, any case (a LIKE pattern made by the router, ESCAPE '\'). */
  emailPattern?: string | undefined;
  /** A top-level data field and the value it holds (as text, or the JSON scalar it spells). */
  dataKey?: string | undefined;
  dataValue?: string | undefined;
  cursor?: KeysetPosition | undefined;
  before?: KeysetPosition | undefined;
  limit: number;
}

export interface ContactListRow {
  id: string;
  email: string;
  data: Record<string, unknown>;
  subscribed: boolean;
  createdAt: Date;
  updatedAt: Date;
  /** Executions of the contact across workflows, ever. */
  executionCount: number;
  /** Of those, RUNNING or WAITING now. */
  activeCount: number;
}

/**
 * The data documents a search for `key = value` matches: the value as a string, and the
 * JSON scalar it spells when it spells one (`42`, `true`, `null`), since a field set by
 * the API may hold either and a marketer typing into a box cannot say which.
 */
export function dataMatches(key: string, value: string): Record<string, unknown>[] {
  const documents: Record<string, unknown>[] = [{ [key]: value }];
  let scalar: unknown;
  try {
    scalar = JSON.parse(value);
  } catch {
    return documents;
  }
  if (scalar === null || typeof scalar === 'number' || typeof scalar === 'boolean') documents.push({ [key]: scalar });
  return documents;
}

/**
 * contacts.list as one statement: (projectId; createdAt DESC, id DESC) gives the order,
 * lower(email) text_pattern_ops serves the prefix, the GIN (data jsonb_path_ops) index the
 * containment of a data search. Counts are per row of the page, from the contact's
 * (contactId, ...) execution index.
 */
export function contactListQuery(f: ContactFilter): Prisma.Sql {
  const conditions: Prisma.Sql[] = [Prisma.sql`c."projectId" = ${f.projectId}::uuid`];
  if (f.emailPattern) conditions.push(Prisma.sql`lower(c.email) LIKE ${f.emailPattern} ESCAPE '\\'`);
  if (f.dataKey !== undefined && f.dataValue !== undefined) {
    const documents = dataMatches(f.dataKey, f.dataValue).map((d) => Prisma.sql`c.data @> ${JSON.stringify(d)}::jsonb`);
    conditions.push(Prisma.sql`(${Prisma.join(documents, ' OR ')})`);
  }
  const keyset = keysetClause(Prisma.sql`c."createdAt"`, Prisma.sql`c.id`, directionOf(f));
  if (keyset.where) conditions.push(keyset.where);
  return Prisma.sql`
    -- listContacts
    SELECT c.id, c.email, c.data, c.subscribed, c."createdAt", c."updatedAt",
           (SELECT count(*)::int FROM "WorkflowExecution" e WHERE e."contactId" = c.id) AS "executionCount",
           (SELECT count(*)::int FROM "WorkflowExecution" e WHERE e."contactId" = c.id AND ${executionIsActive(Prisma.sql`e.status`)}) AS "activeCount"
      FROM "Contact" c
     WHERE ${Prisma.join(conditions, ' AND ')}
     ORDER BY ${keyset.order}
     LIMIT ${f.limit + 1}::int`;
}

export async function listContacts(db: DbTx, f: ContactFilter): Promise<TwoWayPage<ContactListRow>> {
  const rows = await db.$queryRaw<ContactListRow[]>(contactListQuery(f));
  return twoWayPage(rows, f.limit, directionOf(f), (c) => ({ at: c.createdAt, id: c.id }));
}

// ---------------------------------------------------------------------------
// One contact's journey

/** How many of each a contact page brings: the newest; the counts say how many there are. */
export const JOURNEY_LIMIT = 100;

export interface ContactRecord {
  id: string;
  email: string;
  data: Record<string, unknown>;
  subscribed: boolean;
  createdAt: Date;
  updatedAt: Date;
}

export async function findContact(db: DbTx, projectId: string, id: string): Promise<ContactRecord | null> {
  const [row] = await db.$queryRaw<ContactRecord[]>`
    -- findContact
    SELECT id, email, data, subscribed, "createdAt", "updatedAt"
      FROM "Contact" WHERE id = ${id}::uuid AND "projectId" = ${projectId}::uuid`;
  return row ?? null;
}

/** The project's most recently created contact (a template preview's default), or null. */
export async function latestContact(db: DbTx, projectId: string): Promise<ContactRecord | null> {
  const [row] = await db.$queryRaw<ContactRecord[]>`
    -- latestContact
    SELECT id, email, data, subscribed, "createdAt", "updatedAt"
      FROM "Contact" WHERE "projectId" = ${projectId}::uuid
     ORDER BY "createdAt" DESC, id DESC LIMIT 1`;
  return row ?? null;
}

/**
 * The data of the contact with this email (any case), before an upsert merges into it:
 * the audit entry's `before`. Null for an email the project has no contact for.
 */
export async function contactDataByEmail(db: DbTx, projectId: string, email: string): Promise<{ id: string; data: unknown } | null> {
  const [row] = await db.$queryRaw<{ id: string; data: unknown }[]>`
    -- contactDataByEmail
    SELECT id, data FROM "Contact" WHERE "projectId" = ${projectId}::uuid AND lower(email) = lower(${email})`;
  return row ?? null;
}

export interface JourneyExecution {
  id: string;
  workflowId: string;
  workflowName: string;
  status: string;
  version: number;
  stepKey: string | null;
  stepName: string | null;
  stepType: string | null;
  startedAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
  exitReason: string | null;
  lastError: string | null;
}

/** The contact's executions, newest first: a range of (contactId, startedAt DESC, id DESC). */
export function contactExecutionsQuery(projectId: string, contactId: string, limit = JOURNEY_LIMIT): Prisma.Sql {
  return Prisma.sql`
    -- contactJourney.executions
    SELECT e.id, e."workflowId", w.name AS "workflowName", e.status::text AS status, e.version,
           ws.key AS "stepKey", ws.name AS "stepName", ws.type::text AS "stepType",
           e."startedAt", e."updatedAt", e."finishedAt", e."exitReason", e."lastError"
      FROM "WorkflowExecution" e
      JOIN "Workflow" w ON w.id = e."workflowId"
      LEFT JOIN "WorkflowStep" ws ON ws.id = e."currentStepId"
     WHERE e."contactId" = ${contactId}::uuid AND e."projectId" = ${projectId}::uuid
     ORDER BY e."startedAt" DESC, e.id DESC
     LIMIT ${limit}::int`;
}

export interface JourneyEvent {
  id: string;
  name: string;
  data: unknown;
  createdAt: Date;
  processedAt: Date | null;
  deadAt: Date | null;
  dispatchAttempts: number;
  lastError: string | null;
  state: 'processed' | 'pending' | 'retrying' | 'dead';
}

/** The events tracked for the contact, newest first: a backward range of (contactId, createdAt). */
export function contactEventsQuery(projectId: string, contactId: string, limit = JOURNEY_LIMIT): Prisma.Sql {
  return Prisma.sql`
    -- contactJourney.events
    SELECT ev.id, ev.name, ev.data, ev."createdAt", ev."processedAt", ev."deadAt", ev."dispatchAttempts", ev."lastError",
           CASE WHEN ev."processedAt" IS NOT NULL THEN 'processed'
                WHEN ev."deadAt" IS NOT NULL THEN 'dead'
                WHEN ev."dispatchAttempts" > 0 THEN 'retrying'
                ELSE 'pending' END AS state
      FROM "Event" ev
     WHERE ev."contactId" = ${contactId}::uuid AND ev."projectId" = ${projectId}::uuid
     ORDER BY ev."createdAt" DESC
     LIMIT ${limit}::int`;
}

export interface JourneyMessage {
  id: string;
  executionId: string;
  workflowName: string;
  to: string;
  subject: string;
  status: string;
  error: string | null;
  createdAt: Date;
  sentAt: Date | null;
}

/**
 * The emails sent (or queued) to the contact by its latest executions (those the journey
 * shows), newest first. Message has no contactId: the contact's executions come from their
 * index under a LIMIT, and each one's messages by executionId, so a contact enrolled
 * thousands of times costs what one enrolled a hundred times does.
 */
export function contactMessagesQuery(projectId: string, contactId: string, limit = JOURNEY_LIMIT): Prisma.Sql {
  return Prisma.sql`
    -- contactJourney.messages
    SELECT m.id, m."executionId", w.name AS "workflowName", m."to", m.subject, m.status::text AS status, m.error,
           m."createdAt", m."sentAt"
      FROM (SELECT e.id, e."workflowId"
              FROM "WorkflowExecution" e
             WHERE e."contactId" = ${contactId}::uuid AND e."projectId" = ${projectId}::uuid
             ORDER BY e."startedAt" DESC, e.id DESC
             LIMIT ${limit}::int) e
      CROSS JOIN LATERAL (SELECT * FROM "Message" m WHERE m."executionId" = e.id) m
      JOIN "Workflow" w ON w.id = e."workflowId"
     ORDER BY m."createdAt" DESC, m.id DESC
     LIMIT ${limit}::int`;
}

export interface ContactJourney extends ContactRecord {
  executions: JourneyExecution[];
  executionCount: number;
  events: JourneyEvent[];
  eventCount: number;
  /** The emails of the executions shown (the latest JOURNEY_LIMIT), newest first. */
  messages: JourneyMessage[];
}

/** One contact with its journey, or null when the project has no such contact. */
export async function contactJourney(db: DbTx, projectId: string, id: string): Promise<ContactJourney | null> {
  const contact = await findContact(db, projectId, id);
  if (!contact) return null;
  const [executions, events, messages, [counts]] = await Promise.all([
    db.$queryRaw<JourneyExecution[]>(contactExecutionsQuery(projectId, id)),
    db.$queryRaw<JourneyEvent[]>(contactEventsQuery(projectId, id)),
    db.$queryRaw<JourneyMessage[]>(contactMessagesQuery(projectId, id)),
    db.$queryRaw<{ executions: number; events: number }[]>`
      -- contactJourney.counts
      SELECT (SELECT count(*)::int FROM "WorkflowExecution" e WHERE e."contactId" = ${id}::uuid AND e."projectId" = ${projectId}::uuid) AS executions,
             (SELECT count(*)::int FROM "Event" ev WHERE ev."contactId" = ${id}::uuid AND ev."projectId" = ${projectId}::uuid) AS events`,
  ]);
  return {
    ...contact,
    executions,
    executionCount: counts!.executions,
    events,
    eventCount: counts!.events,
    messages,
  };
}
