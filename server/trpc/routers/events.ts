import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import { createEngineContext, DEFAULT_ENGINE_CONFIG } from '../../engine/context';
import { dispatchEvent, storeEvent } from '../../engine/events';
import { notifyWorkers } from '../../engine/wakeup';
import { audit, inTransaction } from '../audit';
import { email, id, jsonObject, label } from '../inputs';
import { contactIdByEmail, listEvents } from '../../read/events';
import { contactInProject } from '../../read/executions';
import { marketerProcedure, router, viewerProcedure } from '../trpc';
import { listEventsInput } from './events.schema';

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

export const eventsRouter = router({
  /**
   * Tracked events newest first, keyset-paginated on (createdAt, id) both ways, with their
   * dispatch state and what each started (enrolled) and resumed (waits it resolved).
   */
  list: viewerProcedure.input(listEventsInput).query(async ({ ctx, input }) => {
    const projectId = ctx.actor.projectId;
    let contactId: string | undefined;
    if (input.contact) {
      const byId = id.safeParse(input.contact).success && (await contactInProject(ctx.db, projectId, input.contact));
      const found = byId ? input.contact : await contactIdByEmail(ctx.db, projectId, input.contact);
      if (!found) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such contact in this project.' });
      contactId = found;
    }
    return listEvents(ctx.db, { ...input, contactId, projectId });
  }),

  /**
   * Store an event (accepted means durable), then dispatch it: enroll into workflows it
   * triggers, resume the contact's waits for it. Dispatch runs after the commit; if it
   * fails, the outbox sweeper retries it.
   */
  track: marketerProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/events',
        tags: ['events'],
        summary: 'Track an event',
        description:
          'Stores the event and dispatches it (workflows it triggers, waits it resolves). Send an idempotencyKey to make retries safe: the same key answers with the first eventId and duplicate: true.',
        protect: true,
        errorResponses: [400, 401, 403, 404],
      },
    })
    .input(trackEventInput)
    .output(trackEventOutput)
    .mutation(async ({ ctx, input }) => {
      const stored = await inTransaction(ctx.db, async (tx) => {
        const r = await storeEvent(
          tx,
          {
            projectId: ctx.actor.projectId,
            name: input.name,
            contactId: input.contactId ?? null,
            email: input.email ?? null,
            data: input.data ?? {},
            idempotencyKey: input.idempotencyKey ?? null,
          },
          // The sweeper leaves a new event alone this long: the inline dispatch below has it.
          DEFAULT_ENGINE_CONFIG.inlineDispatchSeconds,
        );
        await audit(tx, ctx.actor, {
          action: 'events.track',
          targetType: 'event',
          targetId: r.ok ? r.eventId : (input.contactId ?? input.name),
          outcome: r.ok ? 'APPLIED' : 'REJECTED',
          after: r.ok ? { name: input.name, duplicate: r.duplicate, idempotencyKey: input.idempotencyKey ?? null } : r,
        });
        return r;
      });
      if (!stored.ok) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such contact in this project.' });
      if (!stored.duplicate) {
        const engine = createEngineContext(ctx.db, { owner: `api:${process.pid}` });
        const summary = await dispatchEvent(engine, stored.eventId).catch((error: unknown) => {
          console.warn(`events.track: inline dispatch of ${stored.eventId} failed; the sweeper will retry:`, error);
          return null;
        });
        // Dispatch wakes workers for its enrollments itself; resumed waits need it here.
        if (summary?.resumed.some((r) => r.result.resumed)) await notifyWorkers(ctx.db).catch(() => {});
      }
      return { eventId: stored.eventId, duplicate: stored.duplicate };
    }),
});
