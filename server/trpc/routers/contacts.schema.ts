import { z } from 'zod';
import { email, id, instant, jsonObject, label, limit, text } from '../../common/inputs';
import { cursor } from '../keyset';
import { anyObject, idOutput, pageOutput, timestamp } from '../rest';

export const upsertContactInput = z.object({
  email: email.meta({ example: 'ada@example.com' }),
  /** Merged into the contact's data (top-level keys replace). */
  data: jsonObject.optional().meta({ example: { plan: 'pro', firstName: 'Ada' } }),
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

// ---------------------------------------------------------------------------
// /api/v1 (meta.openapi): the same inputs where the shape fits, these where REST needs its own.


export const upsertContactOutput = z.object({
  id: idOutput,
  email: z.string().meta({ example: 'ada@example.com' }),
  data: anyObject,
  subscribed: z.boolean(),
  /** True when this call created the contact. */
  created: z.boolean(),
});

export const contactOutput = z.object({
  id: idOutput,
  email: z.string().meta({ example: 'ada@example.com' }),
  data: anyObject,
  subscribed: z.boolean(),
  createdAt: timestamp,
  updatedAt: timestamp,
});

export const updatedContactOutput = contactOutput.omit({ createdAt: true });

export const contactByEmailInput = z.object({ email: email.meta({ example: 'ada@example.com' }) });

export const contactPageInput = z.object({
  search: text(320).optional().meta({ description: 'The start of an email address, any case.', example: 'ada' }),
  dataKey: label(200).optional().meta({ description: 'With dataValue: contacts whose data holds this top-level field.', example: 'plan' }),
  dataValue: text(500).optional().meta({ description: 'The value dataKey holds: matched as text, and as the number, boolean or null it spells.', example: 'pro' }),
  cursor: cursor.optional().meta({ description: 'Where the page starts: from a `next` link.' }),
  limit,
}).superRefine((input, ctx) => {
  if ((input.dataKey === undefined) !== (input.dataValue === undefined)) {
    ctx.addIssue({ code: 'custom', message: 'give dataKey and dataValue together', path: [input.dataKey === undefined ? 'dataKey' : 'dataValue'] });
  }
});

export const contactListItemOutput = contactOutput.extend({
  executionCount: z.number().int().meta({ description: 'Executions of the contact across workflows, ever.' }),
  activeCount: z.number().int().meta({ description: 'Of those, RUNNING or WAITING now.' }),
});

export const contactPageOutput = pageOutput(contactListItemOutput);

export const erasedContactOutput = z.object({
  id: idOutput,
  email: z.string().meta({ description: 'The placeholder the address became.', example: 'erased-7c9e6679-7425-40de-944b-e07fc1f90ae7@erased.invalid' }),
  erasedAt: timestamp,
});
