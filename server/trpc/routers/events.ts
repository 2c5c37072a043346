import { TRPCError } from '@trpc/server';
import { trackEventAudited } from '../../engine/events';
import { id } from '../../common/inputs';
import { contactIdByEmail, listEvents } from '../../read/events';
import { contactInProject } from '../../read/executions';
import { acting } from '../audit';
import { marketerProcedure, router, viewerProcedure } from '../trpc';
import { listEventsInput, trackEventInput, trackEventOutput } from './events.schema';

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
});
