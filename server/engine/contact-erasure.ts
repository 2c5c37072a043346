import { Prisma, transaction, type Db, type RawDb } from '../db';
import { writeAudit, type Acting } from './audit';
import { cancelExecution } from './claims';

// Erasing a contact (DELETE /api/v1/contacts/{id}, contacts.erase): the request every
// privacy law makes. In one transaction: every active execution of the contact cancelled
// through the operators' own claim (cancelExecution, fenced by each execution's version);
// then one compare-and-swap on the contact (`erasedAt IS NULL`) that replaces its email
// and data and, in the same statement, scrubs what holds its personal data elsewhere:
// its emails' recipient, subject and body (a QUEUED one is abandoned, never sent), its
// events' data, its executions' context, and the before/after of the audit entries about
// it. The rows themselves stay (the history: which workflows it went through, when, what
// happened), without the person. The erasure is audited `contacts.erase`, with counts only.
// Erasing an erased contact changes nothing and answers the same.

export interface ErasedContact {
  id: string;
  /** The placeholder the address became: erased-<id>@erased.invalid. */
  email: string;
  erasedAt: Date;
}

export type EraseResult = { ok: true; contact: ErasedContact; cancelled: string[]; alreadyErased: boolean } | { ok: false; reason: 'CONTACT_NOT_FOUND' };

/** How often an execution a worker moved meanwhile is read and cancelled again. */
const CANCEL_ATTEMPTS = 5;

export function erasedEmail(contactId: string): string {
  return `erased-${contactId}@erased.invalid`;
}

/** Cancel the contact's RUNNING and WAITING executions, each at the version just read; a worker's move in between is read again. */
async function cancelActiveExecutions(tx: RawDb, by: Acting, contactId: string, cancelled: string[]): Promise<void> {
  const projectId = by.projectId;
  for (let attempt = 1; ; attempt++) {
    const active = await tx.$queryRaw<{ id: string; version: number }[]>`
      -- contactActiveExecutions
      SELECT id, version FROM "WorkflowExecution"
       WHERE "projectId" = ${projectId}::uuid AND "contactId" = ${contactId}::uuid AND status IN ('RUNNING', 'WAITING')
       ORDER BY id`;
    if (active.length === 0) return;
    if (attempt > CANCEL_ATTEMPTS) throw new Error(`eraseContact: executions of ${contactId} kept moving; nothing was erased`);
    for (const execution of active) {
      const r = await cancelExecution(tx, { executionId: execution.id, expectedVersion: execution.version, reason: 'the contact was erased' });
      if (!r.won) continue;
      cancelled.push(execution.id);
      // On the execution's own history too (its page lists the entries about it).
      await writeAudit(tx, {
        ...by,
        action: 'contacts.erase',
        targetType: 'execution',
        targetId: execution.id,
        outcome: 'APPLIED',
        reason: 'the contact was erased',
        before: { version: execution.version },
        after: { status: 'CANCELLED', version: r.version },
      });
    }
  }
}

export async function eraseContact(db: Db, by: Acting, contactId: string): Promise<EraseResult> {
  return transaction(db, 'ENGINE', async (tx) => {
    const [existing] = await tx.$queryRaw<{ email: string; erasedAt: Date | null }[]>`
      -- contactToErase
      SELECT email, "erasedAt" FROM "Contact" WHERE id = ${contactId}::uuid AND "projectId" = ${by.projectId}::uuid`;
    if (!existing) return { ok: false, reason: 'CONTACT_NOT_FOUND' };
    if (existing.erasedAt) return { ok: true, contact: { id: contactId, email: existing.email, erasedAt: existing.erasedAt }, cancelled: [], alreadyErased: true };

    const cancelled: string[] = [];
    await cancelActiveExecutions(tx, by, contactId, cancelled);
    const [erased] = await tx.$queryRaw<(ErasedContact & { messages: number; events: number; executions: number; auditEntries: number })[]>`
      -- eraseContact
      WITH contact AS (
        UPDATE "Contact" c
           SET email = ${erasedEmail(contactId)}, data = '{}'::jsonb, subscribed = false, "erasedAt" = now(),
               "updatedAt" = greatest(now(), c."updatedAt" + interval '1 millisecond')
         WHERE c.id = ${contactId}::uuid AND c."projectId" = ${by.projectId}::uuid AND c."erasedAt" IS NULL
        RETURNING c.id, c.email, c."erasedAt"
      ), messages AS (
        UPDATE "Message" m
           SET "to" = contact.email, subject = '[erased]', body = '', version = m.version + 1,
               status = CASE WHEN m.status = 'QUEUED' THEN 'ABANDONED'::"MessageStatus" ELSE m.status END,
               error = CASE WHEN m.status = 'QUEUED' THEN 'not sent: the contact was erased' ELSE m.error END
          FROM contact, "WorkflowExecution" e
         WHERE e."contactId" = contact.id AND m."executionId" = e.id
        RETURNING m.id
      ), events AS (
        UPDATE "Event" ev SET data = '{}'::jsonb FROM contact WHERE ev."contactId" = contact.id RETURNING ev.id
      ), executions AS (
        UPDATE "WorkflowExecution" e SET context = '{}'::jsonb FROM contact WHERE e."contactId" = contact.id RETURNING e.id
      ), audit AS (
        UPDATE "AuditEntry" a SET before = NULL, after = '{"erased": true}'::jsonb
          FROM contact
         WHERE a."projectId" = ${by.projectId}::uuid AND a."targetType" = 'contact' AND a."targetId" = contact.id::text
        RETURNING a.id
      )
      SELECT contact.id, contact.email, contact."erasedAt",
             (SELECT count(*)::int FROM messages) AS messages, (SELECT count(*)::int FROM events) AS events,
             (SELECT count(*)::int FROM executions) AS executions, (SELECT count(*)::int FROM audit) AS "auditEntries"
        FROM contact`;
    if (!erased) {
      // Erased by a concurrent call since the read: its answer is this one's.
      const [now] = await tx.$queryRaw<{ email: string; erasedAt: Date }[]>(Prisma.sql`
        -- contactErased
        SELECT email, "erasedAt" FROM "Contact" WHERE id = ${contactId}::uuid`);
      return { ok: true, contact: { id: contactId, email: now!.email, erasedAt: now!.erasedAt }, cancelled, alreadyErased: true };
    }
    await writeAudit(tx, {
      ...by,
      action: 'contacts.erase',
      targetType: 'contact',
      targetId: contactId,
      outcome: 'APPLIED',
      before: null,
      after: { cancelledExecutions: cancelled, scrubbed: { messages: erased.messages, events: erased.events, executions: erased.executions, auditEntries: erased.auditEntries } },
    });
    return { ok: true, contact: { id: erased.id, email: erased.email, erasedAt: erased.erasedAt }, cancelled, alreadyErased: false };
  });
}
