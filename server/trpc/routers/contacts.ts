import { TRPCError } from '@trpc/server';
import { Prisma } from '../../db';
import { upsertContact } from '../../engine/contacts';
import { audit, inTransaction } from '../audit';
import { likePrefix } from '../inputs';
import { page } from '../keyset';
import { marketerProcedure, router, viewerProcedure } from '../trpc';
import { getContactInput, listContactsInput, upsertContactInput } from './contacts.schema';

interface ContactRow {
  id: string;
  email: string;
  data: Record<string, unknown>;
  subscribed: boolean;
  createdAt: Date;
  updatedAt: Date;
}

/** At most this many of a contact's executions come with it; the count says if there are more. */
const CONTACT_EXECUTIONS = 100;

export const contactsRouter = router({
  /** Create the contact, or merge `data` into the one with this email (any case). */
  upsert: marketerProcedure.input(upsertContactInput).mutation(({ ctx, input }) =>
    inTransaction(ctx.db, async (tx) => {
      const [before] = await tx.$queryRaw<{ id: string; data: unknown }[]>`
        SELECT id, data FROM "Contact" WHERE "projectId" = ${ctx.actor.projectId}::uuid AND lower(email) = lower(${input.email})`;
      const contact = await upsertContact(tx, ctx.actor.projectId, input.email, input.data ?? {});
      await audit(tx, ctx.actor, {
        action: 'contacts.upsert',
        targetType: 'contact',
        targetId: contact.id,
        outcome: 'APPLIED',
        before: before ? { data: before.data } : null,
        after: { email: contact.email, data: contact.data, created: contact.created },
      });
      return contact;
    }),
  ),

  /** Newest first; `search` matches the start of the email, any case. */
  list: viewerProcedure.input(listContactsInput).query(async ({ ctx, input }) => {
    const search = input.search ? Prisma.sql`AND lower(email) LIKE ${likePrefix(input.search.toLowerCase())} ESCAPE '\\'` : Prisma.empty;
    const after = input.cursor
      ? Prisma.sql`AND ("createdAt", id) < (${input.cursor.at}::timestamptz, ${input.cursor.id}::uuid)`
      : Prisma.empty;
    const rows = await ctx.db.$queryRaw<ContactRow[]>`
      SELECT id, email, data, subscribed, "createdAt", "updatedAt"
        FROM "Contact"
       WHERE "projectId" = ${ctx.actor.projectId}::uuid ${search} ${after}
       ORDER BY "createdAt" DESC, id DESC
       LIMIT ${input.limit + 1}::int`;
    return page(rows, input.limit, (c) => ({ at: c.createdAt, id: c.id }));
  }),

  /** One contact with its executions across workflows, newest first. */
  get: viewerProcedure.input(getContactInput).query(async ({ ctx, input }) => {
    const contact = await ctx.db.contact.findFirst({
      where: { id: input.id, projectId: ctx.actor.projectId },
      select: { id: true, email: true, data: true, subscribed: true, createdAt: true, updatedAt: true },
    });
    if (!contact) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such contact in this project.' });
    const [executions, executionCount] = await Promise.all([
      ctx.db.$queryRaw<
        {
          id: string;
          workflowId: string;
          workflowName: string;
          status: string;
          version: number;
          stepKey: string | null;
          stepName: string | null;
          startedAt: Date;
          finishedAt: Date | null;
          exitReason: string | null;
        }[]
      >`
        SELECT e.id, e."workflowId", w.name AS "workflowName", e.status::text AS status, e.version,
               ws.key AS "stepKey", ws.name AS "stepName", e."startedAt", e."finishedAt", e."exitReason"
          FROM "WorkflowExecution" e
          JOIN "Workflow" w ON w.id = e."workflowId"
          LEFT JOIN "WorkflowStep" ws ON ws.id = e."currentStepId"
         WHERE e."contactId" = ${contact.id}::uuid AND e."projectId" = ${ctx.actor.projectId}::uuid
         ORDER BY e."startedAt" DESC, e.id DESC
         LIMIT ${CONTACT_EXECUTIONS}::int`,
      ctx.db.workflowExecution.count({ where: { contactId: contact.id, projectId: ctx.actor.projectId } }),
    ]);
    return { ...contact, executions, executionCount };
  }),
});
