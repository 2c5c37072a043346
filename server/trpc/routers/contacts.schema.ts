import { z } from 'zod';
import { email, id, instant, jsonObject, label, limit, text } from '../../common/inputs';
import { cursor } from '../keyset';

export const upsertContactInput = z.object({
  email,
  /** Merged into the contact's data (top-level keys replace). */
  data: jsonObject.optional(),
});

export const listContactsInput = z
  .object({
    /** The start of an email address, any case. */
    search: text(320).optional(),
    /** A top-level data field to search by, with dataValue: contacts whose data holds it. */
    dataKey: label(200).optional(),
    /** The value dataKey holds: matched as text, and as the number, boolean or null it spells. */
    dataValue: text(500).optional(),
    /** The next (older) page: a nextCursor this list returned. */
    cursor: cursor.optional(),
    /** The previous (newer) page: a prevCursor this list returned. Wins over cursor. */
    before: cursor.optional(),
    limit,
  })
  .superRefine((input, ctx) => {
    if ((input.dataKey === undefined) !== (input.dataValue === undefined)) {
      const path = input.dataKey === undefined ? 'dataKey' : 'dataValue';
      ctx.addIssue({ code: 'custom', message: 'give dataKey and dataValue together', path: [path] });
    }
  })
  .prefault({});

export const getContactInput = z.object({ id });

export const updateContactInput = z.object({
  id,
  /** The contact's whole data: replaces what it holds (keys left out are removed). */
  data: jsonObject,
  /**
   * The updatedAt the editor read: when the contact changed since, nothing is saved and
   * the answer is CONFLICT with the current contact. Left out: the last save wins.
   */
  expectedUpdatedAt: instant.optional(),
});

export const setSubscribedInput = z.object({ id, subscribed: z.boolean() });
