import { z } from 'zod';
import { email, id, jsonObject, limit, text } from '../inputs';
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
    cursor: cursor.optional(),
    limit,
  })
  .prefault({});

export const getContactInput = z.object({ id });
