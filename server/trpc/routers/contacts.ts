import { TRPCError } from '@trpc/server';
import { replaceContactData, setContactSubscribed, upsertContact, type ContactChange } from '../../engine/contacts';
import { contactDataByEmail, contactJourney, findContact, listContacts } from '../../read/contacts';
import { audit } from '../audit';
import { transaction } from '../../db';
import { eraseContact } from '../../engine/contact-erasure';
import { acting } from '../audit';
import { likePrefix } from '../../common/inputs';
import { conflictError, marketerProcedure, router, viewerProcedure } from '../trpc';
import { nextLink } from '../rest';
import {
  contactByEmailInput,
  erasedContactOutput,
  contactOutput,
  contactPageInput,
  contactPageOutput,
  getContactInput,
  listContactsInput,
  setSubscribedInput,
  updateContactInput,
  updatedContactOutput,
  upsertContactInput,
  upsertContactOutput,
} from './contacts.schema';

const NOT_FOUND = () => new TRPCError({ code: 'NOT_FOUND', message: 'No such contact in this project.' });

/** The contact a change left, or the error of a refused one (after its audit entry committed). */
function changed(change: ContactChange) {
  if (change.ok) return change.after;
  if (change.reason === 'CONTACT_NOT_FOUND') throw NOT_FOUND();
  throw conflictError(
    { reason: change.reason, updatedAt: change.current.updatedAt, data: change.current.data, subscribed: change.current.subscribed },
    'The contact changed since you read it; nothing was saved. Reload it and apply your change again.',
  );
}

export const contactsRouter = router({
  /** Create the contact, or merge `data` into the one with this email (any case). */
  upsert: marketerProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/contacts',
        operationId: 'upsertContact',
        tags: ['contacts'],
        summary: 'Create or update a contact by email',
        description: 'Creates the contact, or merges `data` into the one with this email (any case; top-level keys replace). `created` says which. Audited `contacts.upsert`.',
        protect: true,
        errorResponses: [400, 401, 403],
      },
    })
    .input(upsertContactInput)
    .output(upsertContactOutput)
    .mutation(({ ctx, input }) =>
    transaction(ctx.db, 'ENGINE', async (tx) => {
      const before = await contactDataByEmail(tx, ctx.actor.projectId, input.email);
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

  /**
   * Newest first; `search` matches the start of the email, any case; dataKey + dataValue
   * the contacts whose data holds that field. Keyset pages both ways (cursor, before),
   * each contact with how many executions it has had and has active.
   */
  list: viewerProcedure.input(listContactsInput).query(({ ctx, input }) =>
    listContacts(ctx.db, {
      projectId: ctx.actor.projectId,
      emailPattern: input.search ? likePrefix(input.search.toLowerCase()) : undefined,
      dataKey: input.dataKey,
      dataValue: input.dataValue,
      cursor: input.cursor,
      before: input.before,
      limit: input.limit,
    }),
  ),

  /**
   * One contact with its journey: its executions across workflows, the events tracked for
   * it and the emails sent to it, newest first, the latest 100 of each with their counts.
   */
  get: viewerProcedure.input(getContactInput).query(async ({ ctx, input }) => {
    const contact = await contactJourney(ctx.db, ctx.actor.projectId, input.id);
    if (!contact) throw NOT_FOUND();
    return contact;
  }),

  /** Replace the contact's data; with expectedUpdatedAt, only if nobody changed it since. */
  update: marketerProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/contacts/{id}',
        operationId: 'updateContact',
        tags: ['contacts'],
        summary: "Replace a contact's data",
        description:
          "Replaces the contact's whole `data` (keys left out are removed). With `expectedUpdatedAt` (the `updatedAt` you read), only if nobody changed the contact since: otherwise 409 with `conflict.reason` CONTACT_CHANGED and the current contact, and nothing is saved. Audited `contacts.update`.",
        protect: true,
        errorResponses: [400, 401, 403, 404, 409],
      },
    })
    .input(updateContactInput)
    .output(updatedContactOutput)
    .mutation(async ({ ctx, input }) => {
    const change = await transaction(ctx.db, 'ENGINE', async (tx) => {
      const r = await replaceContactData(tx, ctx.actor.projectId, input.id, input.data, input.expectedUpdatedAt ?? null);
      if (r.ok || r.reason === 'CONTACT_CHANGED') {
        await audit(tx, ctx.actor, {
          action: 'contacts.update',
          targetType: 'contact',
          targetId: input.id,
          outcome: r.ok ? 'APPLIED' : 'LOST',
          before: r.ok ? { data: r.before.data, updatedAt: r.before.updatedAt } : { expectedUpdatedAt: input.expectedUpdatedAt },
          after: r.ok ? { data: r.after.data, updatedAt: r.after.updatedAt } : { reason: r.reason, updatedAt: r.current.updatedAt },
        });
      }
      return r;
    });
    return changed(change);
  }),

  /** /api/v1: one contact by id (the console's `get` adds its journey). */
  find: viewerProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/contacts/{id}',
        operationId: 'getContact',
        tags: ['contacts'],
        summary: 'Get a contact',
        description: 'The contact with its data. An id of another project is 404, as one that does not exist.',
        protect: true,
        errorResponses: [400, 401, 403, 404],
      },
    })
    .input(getContactInput)
    .output(contactOutput)
    .query(async ({ ctx, input }) => {
      const contact = await findContact(ctx.db, ctx.actor.projectId, input.id);
      if (!contact) throw NOT_FOUND();
      return contact;
    }),

  /** /api/v1: one contact by its email, any case. */
  findByEmail: viewerProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/contacts/by-email/{email}',
        operationId: 'getContactByEmail',
        tags: ['contacts'],
        summary: 'Get a contact by email',
        description: 'The contact with this email address, compared in any case (percent-encode the address in the path).',
        protect: true,
        errorResponses: [400, 401, 403, 404],
      },
    })
    .input(contactByEmailInput)
    .output(contactOutput)
    .query(async ({ ctx, input }) => {
      const byEmail = await contactDataByEmail(ctx.db, ctx.actor.projectId, input.email);
      const contact = byEmail && (await findContact(ctx.db, ctx.actor.projectId, byEmail.id));
      if (!contact) throw NOT_FOUND();
      return contact;
    }),

  /** /api/v1: `list` as pages with `next` links. */
  page: viewerProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/contacts',
        operationId: 'listContacts',
        tags: ['contacts'],
        summary: 'List contacts',
        description:
          'Newest first. `search` matches the start of the email (any case); `dataKey` with `dataValue` the contacts whose data holds that field. Follow `next` for the following page (null on the last).',
        protect: true,
        errorResponses: [400, 401, 403],
      },
    })
    .input(contactPageInput)
    .output(contactPageOutput)
    .query(async ({ ctx, input }) => {
      const page = await listContacts(ctx.db, {
        projectId: ctx.actor.projectId,
        emailPattern: input.search ? likePrefix(input.search.toLowerCase()) : undefined,
        dataKey: input.dataKey,
        dataValue: input.dataValue,
        cursor: input.cursor,
        limit: input.limit,
      });
      const { cursor: _cursor, ...filters } = input;
      return { items: page.items, next: nextLink('/contacts', filters, page.nextCursor) };
    }),

  /** Erase a contact's personal data, keeping its history without it (server/engine/contact-erasure.ts). */
  erase: marketerProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/contacts/{id}',
        operationId: 'eraseContact',
        tags: ['contacts'],
        summary: "Erase a contact's personal data",
        description:
          "The request every privacy law makes. The contact's email becomes `erased-<id>@erased.invalid` and its data `{}`; its active executions are cancelled; its emails' recipient, subject and body, its events' data, its executions' context and the audit entries about it are scrubbed. The rows stay, so counts and history hold, without the person. Audited `contacts.erase` (counts only). Erasing an erased contact answers 200 with the same answer and changes nothing.",
        protect: true,
        errorResponses: [400, 401, 403, 404],
      },
    })
    .input(getContactInput)
    .output(erasedContactOutput)
    .mutation(async ({ ctx, input }) => {
      const r = await eraseContact(ctx.db, acting(ctx.actor), input.id);
      if (!r.ok) throw NOT_FOUND();
      return r.contact;
    }),

  /** Subscribe or unsubscribe the contact (its emails are sent only while subscribed). */
  setSubscribed: marketerProcedure.input(setSubscribedInput).mutation(async ({ ctx, input }) => {
    const change = await transaction(ctx.db, 'ENGINE', async (tx) => {
      const r = await setContactSubscribed(tx, ctx.actor.projectId, input.id, input.subscribed);
      if (r.ok) {
        await audit(tx, ctx.actor, {
          action: 'contacts.setSubscribed',
          targetType: 'contact',
          targetId: input.id,
          outcome: 'APPLIED',
          before: { subscribed: r.before.subscribed },
          after: { subscribed: r.after.subscribed },
        });
      }
      return r;
    });
    return changed(change);
  }),
});
