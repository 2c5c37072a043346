import { z } from 'zod';
import { DISPATCH_STATES } from '../../read/events';
import { email, id, jsonObject, label, limit, text } from '../../common/inputs';
import { cursor } from '../keyset';

export const listEventsInput = z
  .object({
    /** The exact event name. */
    name: label(100).optional(),
    /** Any of these dispatch states (none: all). */
    state: z.array(z.enum(DISPATCH_STATES)).max(DISPATCH_STATES.length).optional(),
    /** A contact's id or exact email (any case). */
    contact: text(320, 1).optional(),
    /** The next (older) page: a nextCursor this list returned. */
    cursor: cursor.optional(),
    /** The previous (newer) page: a prevCursor this list returned. Wins over cursor. */
    before: cursor.optional(),
    limit,
  })
  .prefault({});

/** The engine's rule for event names (WAIT_FOR_EVENT and triggers match on it). */
const eventName = label(100).regex(/^[A-Za-z0-9_.:-]+$/, 'letters, digits and _ . : - only');

export const trackEventInput = z.object({
  name: eventName,
  /** The contact it happened to: an existing contact's id... */
  contactId: id.optional(),
  /** ...or an email (created as a contact if new). Neither: an anonymous event. */
  email: email.optional(),
  data: jsonObject.optional(),
  /** The same key again answers with the first event and stores nothing. */
  idempotencyKey: label(200).optional(),
}).superRefine((input, ctx) => {
  if (input.contactId !== undefined && input.email !== undefined) {
    ctx.addIssue({ code: 'custom', message: 'give contactId or email, not both', path: ['email'] });
  }
});

export const trackEventOutput = z.object({
  eventId: z.string(),
  /** True when the idempotency key had been used: eventId is the first event's. */
  duplicate: z.boolean(),
});

/** The most events of one events.trackMany call (POST /api/v1/events/batch). */
export const EVENT_BATCH_MAX = 1000;

export const trackManyInput = z.object({
  // Events pass unchecked here so that one bad event cannot fail the call: the handler
  // checks each against trackEventInput and answers it on its own.
  events: z
    .array(z.custom<z.input<typeof trackEventInput>>(() => true).meta({ type: 'object', additionalProperties: true, description: 'An event as POST /events takes it.', example: { name: 'purchase', email: 'ada@example.com', data: { total: 42 }, idempotencyKey: 'order-1042' } }))
    .min(1)
    .max(EVENT_BATCH_MAX),
});

export const trackManyOutput = z.object({
  results: z.array(
    z.object({
      /** 0-based position in `events`. */
      index: z.number().int(),
      eventId: z.string().optional(),
      duplicate: z.boolean().optional(),
      error: z.object({ reason: z.string().meta({ description: 'INVALID (with the issues in message) or CONTACT_NOT_FOUND.' }), message: z.string() }).optional(),
    }),
  ),
});
