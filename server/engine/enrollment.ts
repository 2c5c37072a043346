import { Prisma, preparedRaw, rawTransaction, type Db, type RawDb } from '../db';
import { executionIsActive } from './claims/fragments';
import { writeAudit, type Acting } from './audit';
import { insertExecutions } from './claims';
import { wakeWorkersSoon } from './wakeup';

// One enrollment function for every entry point: the API, the console, CSV import and
// tracked events. It takes a batch (one row for a single enrollment, up to a chunk of a
// bulk import), so a 10,000-row import costs a few statements per chunk, not per row. The
// read-side checks only produce the friendlier answer; the unique indexes behind
// insertExecutions decide every race (I1, I3, and once-only re-entry).

export interface EnrollRow {
  /** Either an existing contact of the project... */
  contactId?: string | null;
  /** ...or an email, upserted as a contact of the project (data merged in). */
  email?: string | null;
  contactData?: Record<string, unknown>;
  context?: Record<string, unknown>;
  /** The tracked event that caused this enrollment (I3: at most one per workflow). */
  sourceEventId?: string | null;
}

export interface EnrollInput extends EnrollRow {
  projectId: string;
  workflowId: string;
}

export type EnrollRejection =
  | { reason: 'WORKFLOW_NOT_FOUND' }
  | { reason: 'WORKFLOW_DISABLED' }
  | { reason: 'CONTACT_NOT_FOUND' }
  | { reason: 'ACTIVE_EXECUTION'; executionId: string }
  | { reason: 'REENTRY_BLOCKED'; executionId: string };

export type EnrollResult =
  | { ok: true; executionId: string; created: boolean }
  | ({ ok: false } & EnrollRejection);

interface WorkflowForEnrollment {
  id: string;
  enabled: boolean;
  allowReentry: boolean;
  /** The latest published version (new enrollments run on it) and its TRIGGER step. */
  versionId: string | null;
  triggerStepId: string | null;
}

interface Blocking {
  id: string;
  contactId: string;
  sourceEventId: string | null;
  active: boolean;
}

/** Enroll one contact. */
export async function enroll(db: RawDb, input: EnrollInput): Promise<EnrollResult> {
  // Raw statements only: over the client's pg pool as named prepared statements when it
  // has one (a transaction's statements stay on the transaction).
  const [result] = await enrollBatch(preparedRaw(db), input.projectId, input.workflowId, [input]);
  return result!;
}

/**
 * enrollments.enroll: enroll one contact with the call's audit entry in the same
 * transaction, accepted or refused, and wake the workers for it once it has committed.
 */
export async function enrollAudited(db: Db, by: Acting, input: Omit<EnrollInput, 'projectId'>): Promise<EnrollResult> {
  // One raw transaction over prepared statements: the enrollment's statements, then its
  // audit entry, which carries the COMMIT (one round trip for both).
  const result = await rawTransaction(
    preparedRaw(db),
    'ENGINE',
    (tx) => enroll(tx, { ...input, projectId: by.projectId }),
    (tx, r) =>
      writeAudit(tx, {
        ...by,
        action: 'enrollments.enroll',
        targetType: r.ok ? 'execution' : 'workflow',
        targetId: r.ok ? r.executionId : input.workflowId,
        outcome: r.ok ? 'APPLIED' : 'REJECTED',
        before: { workflowId: input.workflowId, contactId: input.contactId ?? null, email: input.email ?? null },
        after: r,
      }),
  );
  // After the commit, never inside it: a transaction that notifies holds NOTIFY's global
  // lock through its WAL flush, so concurrent enrollments would commit one at a time.
  if (result.ok && result.created) wakeWorkersSoon(db);
  return result;
}

/** The executions that keep these contacts out of the workflow, or that these events made. */
async function findBlocking(
  db: RawDb,
  workflow: WorkflowForEnrollment,
  contactIds: string[],
  sourceEventIds: string[],
): Promise<Blocking[]> {
  return db.$queryRaw<Blocking[]>`
    -- findBlocking
    SELECT id, "contactId", "sourceEventId", ${executionIsActive(Prisma.sql`status`)} AS active
      FROM "WorkflowExecution"
     WHERE "workflowId" = ${workflow.id}::uuid
       AND (("contactId" = ANY(${contactIds}::uuid[])
             AND (${executionIsActive(Prisma.sql`status`)} OR "enrollOnce" OR NOT ${workflow.allowReentry}))
            OR "sourceEventId" = ANY(${sourceEventIds}::uuid[]))
     ORDER BY "startedAt" DESC`;
}

/** Why this row cannot enroll (or, for its own source event, which execution it already made). */
function verdict(blocking: Blocking[], contactId: string, sourceEventId: string | null): EnrollResult | null {
  const sameEvent = sourceEventId ? blocking.find((b) => b.sourceEventId === sourceEventId) : undefined;
  if (sameEvent) return { ok: true, executionId: sameEvent.id, created: false };
  const mine = blocking.filter((b) => b.contactId === contactId);
  const active = mine.find((b) => b.active);
  if (active) return { ok: false, reason: 'ACTIVE_EXECUTION', executionId: active.id };
  if (mine[0]) return { ok: false, reason: 'REENTRY_BLOCKED', executionId: mine[0].id };
  return null;
}

/** Resolve each row's contact: by id within the project, or upserted by email (one statement). */
async function resolveContacts(db: RawDb, projectId: string, rows: EnrollRow[]): Promise<(string | null)[]> {
  const ids = [...new Set(rows.filter((r) => r.contactId).map((r) => r.contactId!))];
  const found = ids.length
    ? await db.$queryRaw<{ id: string }[]>`
        -- resolveContacts.byId
        SELECT id FROM "Contact" WHERE id = ANY(${ids}::uuid[]) AND "projectId" = ${projectId}::uuid AND "erasedAt" IS NULL`
    : [];
  const known = new Set(found.map((c) => c.id));

  // One upsert for every email; the same email twice in a batch merges its data in order,
  // as two single enrollments would (ON CONFLICT may touch a row only once per statement).
  const byEmail = new Map<string, { email: string; data: Record<string, unknown> }>();
  for (const row of rows) {
    if (row.contactId || !row.email) continue;
    const key = row.email.trim().toLowerCase();
    const seen = byEmail.get(key);
    byEmail.set(key, { email: seen?.email ?? row.email.trim(), data: { ...seen?.data, ...row.contactData } });
  }
  // Rows go in key order: two batches upserting the same contacts lock them in the same
  // order, so they cannot deadlock.
  const contacts = [...byEmail.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v);
  const upserted = contacts.length
    ? await db.$queryRaw<{ id: string; key: string }[]>`
        -- resolveContacts.upsertByEmail
        INSERT INTO "Contact" AS c (id, "projectId", email, data, "createdAt", "updatedAt")
        SELECT gen_random_uuid(), ${projectId}::uuid, u.email, u.data::jsonb, now(), now()
          FROM unnest(${contacts.map((v) => v.email)}::text[],
                      ${contacts.map((v) => JSON.stringify(v.data))}::text[]) WITH ORDINALITY AS u(email, data, n)
         ORDER BY u.n
        ON CONFLICT ("projectId", lower(email)) DO UPDATE
           SET data = c.data || EXCLUDED.data,
               "updatedAt" = CASE WHEN EXCLUDED.data = '{}'::jsonb THEN c."updatedAt" ELSE now() END
        RETURNING id, lower(email) AS key`
    : [];
  const idByEmail = new Map(upserted.map((c) => [c.key, c.id]));

  return rows.map((row) => {
    if (row.contactId) return known.has(row.contactId) ? row.contactId : null;
    if (row.email) return idByEmail.get(row.email.trim().toLowerCase()) ?? null;
    return null;
  });
}

/**
 * How many times a batch inserts a row that keeps losing to concurrent enrollments whose
 * executions have already finished when it looks (allowReentry: nothing blocks the
 * contact any more, so it tries again). A row still losing after the last is told
 * ACTIVE_EXECUTION, naming the last winner: active when the insert met it.
 */
export const ENROLL_INSERT_ATTEMPTS = 3;

/** The latest execution of each of these contacts in the workflow, finished or not. */
async function findLatest(db: RawDb, workflowId: string, contactIds: string[]): Promise<{ id: string; contactId: string }[]> {
  return db.$queryRaw<{ id: string; contactId: string }[]>`
    -- findLatest
    SELECT DISTINCT ON ("contactId") id, "contactId"
      FROM "WorkflowExecution"
     WHERE "workflowId" = ${workflowId}::uuid AND "contactId" = ANY(${contactIds}::uuid[])
     ORDER BY "contactId", "startedAt" DESC`;
}

/**
 * Enroll a batch of rows into one workflow; a result per row, in order. A bad row never
 * fails the others. Within a batch the same contact enrolls once (the later rows are told
 * ACTIVE_EXECUTION, as they would be one call after another). A lost race is an answer,
 * never an exception: a row that lost to an execution which has finished by the time it
 * looks is inserted again (ENROLL_INSERT_ATTEMPTS).
 */
export async function enrollBatch(
  db: RawDb,
  projectId: string,
  workflowId: string,
  rows: EnrollRow[],
): Promise<EnrollResult[]> {
  const [workflow] = await db.$queryRaw<WorkflowForEnrollment[]>`
    -- enrollBatch.workflow
    SELECT w.id, w.enabled, w."allowReentry", v.id AS "versionId",
           (SELECT s.id FROM "WorkflowStep" s WHERE s."versionId" = v.id AND s.type = 'TRIGGER' LIMIT 1) AS "triggerStepId"
      FROM "Workflow" w
      LEFT JOIN "WorkflowVersion" v ON v."workflowId" = w.id AND v.number = w."latestVersion"
     WHERE w.id = ${workflowId}::uuid AND w."projectId" = ${projectId}::uuid`;
  if (!workflow || !workflow.versionId || !workflow.triggerStepId) return rows.map(() => ({ ok: false, reason: 'WORKFLOW_NOT_FOUND' }));
  if (!workflow.enabled) return rows.map(() => ({ ok: false, reason: 'WORKFLOW_DISABLED' }));

  const contactIds = await resolveContacts(db, projectId, rows);
  const results: (EnrollResult | null)[] = rows.map((_, i) =>
    contactIds[i] ? null : { ok: false, reason: 'CONTACT_NOT_FOUND' },
  );
  const live = (i: number) => results[i] === null;
  const open = () => results.some((r) => r === null);
  const sourceEvents = () => rows.map((r, i) => (live(i) ? r.sourceEventId : null)).filter((s): s is string => !!s);
  const contactsOf = () => [...new Set(contactIds.filter((c, i): c is string => !!c && live(i)))];

  // The friendlier answer first: who is already in, or already enrolled by this event.
  const before = await findBlocking(db, workflow, contactsOf(), sourceEvents());
  rows.forEach((row, i) => {
    if (live(i)) results[i] = verdict(before, contactIds[i]!, row.sourceEventId ?? null);
  });

  for (let attempt = 1; open(); attempt++) {
    // Then the insert, where the unique indexes decide. One row per contact per batch: the
    // rows still open (on a retry, only those).
    const firstRowOf = new Map<string, number>();
    rows.forEach((_, i) => {
      if (live(i) && !firstRowOf.has(contactIds[i]!)) firstRowOf.set(contactIds[i]!, i);
    });
    const inserted = await insertExecutions(db, {
      projectId,
      workflowId: workflow.id,
      workflowVersionId: workflow.versionId,
      firstStepId: workflow.triggerStepId,
      enrollOnce: !workflow.allowReentry,
      // In contact order, for the same reason as the contacts' upsert.
      rows: [...firstRowOf.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, i]) => ({
        contactId: contactIds[i]!,
        context: rows[i]!.context ?? {},
        sourceEventId: rows[i]!.sourceEventId ?? null,
      })),
    });
    const createdFor = new Map(inserted.map((e) => [e.contactId, e.id]));
    for (const [contactId, i] of firstRowOf) {
      const id = createdFor.get(contactId);
      if (id) results[i] = { ok: true, executionId: id, created: true };
    }
    if (!open()) break;

    // Rows still open lost a race to a concurrent enrollment, or repeat a contact of this
    // batch. The winners have committed (ON CONFLICT waits for them): name them.
    const after = await findBlocking(db, workflow, contactsOf(), sourceEvents());
    rows.forEach((row, i) => {
      if (live(i)) results[i] = verdict(after, contactIds[i]!, row.sourceEventId ?? null);
    });
    if (!open()) break;

    // Rows still open lost to an execution that has finished since (completed, cancelled):
    // with allowReentry it no longer blocks the contact (once-only re-entry, or the same
    // source event, would have been found above), so their insert is tried again. Past
    // the last attempt, they are told who beat them, as a loser always is.
    if (attempt >= ENROLL_INSERT_ATTEMPTS) {
      const latest = new Map((await findLatest(db, workflow.id, contactsOf())).map((e) => [e.contactId, e.id]));
      rows.forEach((_, i) => {
        if (!live(i)) return;
        const executionId = latest.get(contactIds[i]!);
        // No execution at all: the contact was deleted, and its executions with it.
        results[i] = executionId ? { ok: false, reason: 'ACTIVE_EXECUTION', executionId } : { ok: false, reason: 'CONTACT_NOT_FOUND' };
      });
    }
  }
  return results as EnrollResult[];
}
