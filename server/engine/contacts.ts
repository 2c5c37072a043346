import type { RawDb } from '../db';

export interface ContactRow {
  id: string;
  email: string;
  data: Record<string, unknown>;
  subscribed: boolean;
  created: boolean;
}

/**
 * Create the contact, or merge `data` into the existing one. Emails are unique per
 * project whatever their case (index on lower(email)); the first spelling is kept.
 */
export async function upsertContact(
  db: RawDb,
  projectId: string,
  email: string,
  data: Record<string, unknown> = {},
): Promise<ContactRow> {
  const rows = await db.$queryRaw<ContactRow[]>`
    -- upsertContact
    INSERT INTO "Contact" AS c (id, "projectId", email, data, "createdAt", "updatedAt")
    VALUES (gen_random_uuid(), ${projectId}::uuid, ${email.trim()}, ${JSON.stringify(data)}::jsonb, now(), now())
    ON CONFLICT ("projectId", lower(email)) DO UPDATE
       SET data = c.data || EXCLUDED.data,
           "updatedAt" = CASE WHEN EXCLUDED.data = '{}'::jsonb THEN c."updatedAt" ELSE now() END
    RETURNING id, email, data, subscribed, (xmax = 0) AS created`;
  return rows[0]!;
}

/**
 * The contact an API call names: by id (which must belong to the project, else null: a
 * foreign id is as good as absent) or by email (created if new, data merged).
 * 'none' when the call names no contact at all.
 */
export async function resolveContact(
  db: RawDb,
  projectId: string,
  who: { contactId?: string | null; email?: string | null; data?: Record<string, unknown> },
): Promise<string | null | 'none'> {
  if (who.contactId) {
    const [contact] = await db.$queryRaw<{ id: string }[]>`
      -- resolveContact
      SELECT id FROM "Contact" WHERE id = ${who.contactId}::uuid AND "projectId" = ${projectId}::uuid`;
    return contact?.id ?? null;
  }
  if (who.email) return (await upsertContact(db, projectId, who.email, who.data)).id;
  return 'none';
}

export interface ContactState {
  id: string;
  email: string;
  data: Record<string, unknown>;
  subscribed: boolean;
  updatedAt: Date;
}

/**
 * Why a contact change did not happen: no such contact in the project, or (with an
 * expected updatedAt) someone changed the contact since the editor read it.
 */
export type ContactChangeRefusal = { reason: 'CONTACT_NOT_FOUND' } | { reason: 'CONTACT_CHANGED'; current: ContactState };

export type ContactChange = { ok: true; before: ContactState; after: ContactState } | ({ ok: false } & ContactChangeRefusal);

/**
 * Replace a contact's data as a whole (the console's JSON editor). With `expectedUpdatedAt`
 * it is a compare-and-swap on the updatedAt the editor read: a save over a change made
 * meanwhile (by a person, the API or an UPDATE_CONTACT step) loses instead of silently
 * discarding it. updatedAt moves strictly forward, so two writes in one millisecond
 * cannot leave the fence where it was.
 */
export async function replaceContactData(
  db: RawDb,
  projectId: string,
  id: string,
  data: Record<string, unknown>,
  expectedUpdatedAt: Date | null,
): Promise<ContactChange> {
  return changeContact(db, projectId, id, expectedUpdatedAt, (before) => {
    return db.$queryRaw<ContactState[]>`
      -- replaceContactData
      UPDATE "Contact"
         SET data = ${JSON.stringify(data)}::jsonb,
             "updatedAt" = greatest(now(), "updatedAt" + interval '1 millisecond')
       WHERE id = ${id}::uuid AND "projectId" = ${projectId}::uuid AND "updatedAt" = ${before.updatedAt}::timestamptz
      RETURNING id, email, data, subscribed, "updatedAt"`;
  });
}

/** Subscribe or unsubscribe a contact (no expectation: the last word is the one wanted). */
export async function setContactSubscribed(db: RawDb, projectId: string, id: string, subscribed: boolean): Promise<ContactChange> {
  return changeContact(db, projectId, id, null, (before) => {
    return db.$queryRaw<ContactState[]>`
      -- setContactSubscribed
      UPDATE "Contact"
         SET subscribed = ${subscribed},
             "updatedAt" = CASE WHEN subscribed = ${subscribed} THEN "updatedAt" ELSE greatest(now(), "updatedAt" + interval '1 millisecond') END
       WHERE id = ${id}::uuid AND "projectId" = ${projectId}::uuid AND "updatedAt" = ${before.updatedAt}::timestamptz
      RETURNING id, email, data, subscribed, "updatedAt"`;
  });
}

/**
 * Read the contact locked (FOR UPDATE: a concurrent writer waits for this transaction
 * instead of slipping between the read and the write), check the expectation, then write.
 */
async function changeContact(
  db: RawDb,
  projectId: string,
  id: string,
  expectedUpdatedAt: Date | null,
  write: (before: ContactState) => Promise<ContactState[]>,
): Promise<ContactChange> {
  const [before] = await db.$queryRaw<ContactState[]>`
    -- changeContact
    SELECT id, email, data, subscribed, "updatedAt"
      FROM "Contact" WHERE id = ${id}::uuid AND "projectId" = ${projectId}::uuid
       FOR UPDATE`;
  if (!before) return { ok: false, reason: 'CONTACT_NOT_FOUND' };
  if (expectedUpdatedAt && before.updatedAt.getTime() !== expectedUpdatedAt.getTime()) {
    return { ok: false, reason: 'CONTACT_CHANGED', current: before };
  }
  const [after] = await write(before);
  // Locked since the read, so the write cannot miss it.
  return { ok: true, before, after: after! };
}
