import { TRPCError } from '@trpc/server';
import { replaceContactData, setContactSubscribed, upsertContact, type ContactChange } from '../../engine/contacts';
import { contactDataByEmail, contactJourney, listContacts } from '../../read/contacts';
import { audit } from '../audit';
import { transaction } from '../../db';
import { likePrefix } from '../../common/inputs';
import { conflictError, marketerProcedure, router, viewerProcedure } from '../trpc';
import { getContactInput, listContactsInput, setSubscribedInput, updateContactInput, upsertContactInput } from './contacts.schema';

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
  upsert: marketerProcedure.input(upsertContactInput).mutation(({ ctx, input }) =>
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
  update: marketerProcedure.input(updateContactInput).mutation(async ({ ctx, input }) => {
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
