import type { DbTx } from '../db';

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
  db: DbTx,
  projectId: string,
  email: string,
  data: Record<string, unknown> = {},
): Promise<ContactRow> {
  const rows = await db.$queryRaw<ContactRow[]>`
    INSERT INTO "Contact" AS c (id, "projectId", email, data, "createdAt", "updatedAt")
    VALUES (gen_random_uuid(), ${projectId}::uuid, ${email.trim()}, ${JSON.stringify(data)}::jsonb, now(), now())
    ON CONFLICT ("projectId", lower(email)) DO UPDATE
       SET data = c.data || EXCLUDED.data,
           "updatedAt" = CASE WHEN EXCLUDED.data = '{}'::jsonb THEN c."updatedAt" ELSE now() END
    RETURNING id, email, data, subscribed, (xmax = 0) AS created`;
  return rows[0]!;
}

/** The contact of a project by email (any case), if it exists. */
export async function findContactByEmail(db: DbTx, projectId: string, email: string): Promise<{ id: string } | null> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    SELECT id FROM "Contact" WHERE "projectId" = ${projectId}::uuid AND lower(email) = lower(${email.trim()})`;
  return rows[0] ?? null;
}

/**
 * The contact an API call names: by id (which must belong to the project, else null: a
 * foreign id is as good as absent) or by email (created if new, data merged).
 * 'none' when the call names no contact at all.
 */
export async function resolveContact(
  db: DbTx,
  projectId: string,
  who: { contactId?: string | null; email?: string | null; data?: Record<string, unknown> },
): Promise<string | null | 'none'> {
  if (who.contactId) {
    const [contact] = await db.$queryRaw<{ id: string }[]>`
      SELECT id FROM "Contact" WHERE id = ${who.contactId}::uuid AND "projectId" = ${projectId}::uuid`;
    return contact?.id ?? null;
  }
  if (who.email) return (await upsertContact(db, projectId, who.email, who.data)).id;
  return 'none';
}
