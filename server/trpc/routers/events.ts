import { TRPCError } from '@trpc/server';
import { trackEventAudited } from '../../engine/events';
import { id } from '../../common/inputs';
import { contactIdByEmail, listEvents } from '../../read/events';
import { contactInProject } from '../../read/executions';
import { acting } from '../audit';
import { marketerProcedure, router, viewerProcedure } from '../trpc';
import { trackEventsAudited } from '../../engine/event-batch';
import { listEventsInput, trackEventInput, trackEventOutput, trackManyInput, trackManyOutput } from './events.schema';

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
        operationId: 'trackEvent',
        summary: 'Track an event',
        description:
          'Stores the event and dispatches it (workflows it triggers, waits it resolves). Send an idempotencyKey to make retries safe: the same key answers with the first eventId and duplicate: true.',
        protect: true,
        errorResponses: [400, 401, 403, 404],
      },
    })
    .input(trackEventInput.meta({ example: { name: 'purchase', email: 'ada@example.com', data: { total: 42 }, idempotencyKey: 'order-1042' } }))
    .output(trackEventOutput)
    .mutation(async ({ ctx, input }) => {
      const stored = await trackEventAudited(ctx.db, acting(ctx.actor), {
        name: input.name,
        contactId: input.contactId ?? null,
        email: input.email ?? null,
        data: input.data ?? {},
        idempotencyKey: input.idempotencyKey ?? null,
      });
      if (!stored.ok) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such contact in this project.' });
      return { eventId: stored.eventId, duplicate: stored.duplicate };
    }),

  /**
   * Up to 1,000 events in one call, each answered on its own (a bad one never fails the
   * rest); stored EVENT_CHUNK per transaction, each with its audit entry, then dispatched
   * as track dispatches.
   */
  trackMany: marketerProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/events/batch',
        operationId: 'trackEvents',
        tags: ['events'],
        summary: 'Track up to 1,000 events',
        description:
          'Each event as POST /events takes it, each answered in `results` by its `index`: `eventId` and `duplicate`, or `error` (INVALID with the issues, CONTACT_NOT_FOUND). Stored 250 events per transaction: a chunk commits or not as a whole, and chunks before a failure stay stored.',
        protect: true,
        errorResponses: [400, 401, 403],
      },
    })
    .input(trackManyInput)
    .output(trackManyOutput)
    .mutation(async ({ ctx, input }) => {
      const parsed = input.events.map((raw) => trackEventInput.safeParse(raw));
      const valid = parsed.flatMap((p, index) => (p.success ? [{ index, event: p.data }] : []));
      const stored = await trackEventsAudited(
        ctx.db,
        acting(ctx.actor),
        valid.map(({ event }) => ({ name: event.name, contactId: event.contactId ?? null, email: event.email ?? null, data: event.data ?? {}, idempotencyKey: event.idempotencyKey ?? null })),
      );
      const byIndex = new Map(valid.map(({ index }, i) => [index, stored[i]!]));
      return {
        results: parsed.map((p, index) => {
          if (!p.success) return { index, error: { reason: 'INVALID', message: p.error.issues.map((i) => [i.path.join('.'), i.message].filter(Boolean).join(': ')).join('; ') } };
          return { index, ...byIndex.get(index)! };
        }),
      };
    }),
});
