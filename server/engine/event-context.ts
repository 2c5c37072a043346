import type { RawDb } from '../db';

// An event read as the context it gives the execution it resumes (`context.lastEvent`,
// for later CONDITION steps): by an operator delivering it, by a repair resuming a
// continuation, by the sweeper re-driving one, and the event a resolving claim returns.

/** What a resolving event adds to the execution's context, for later CONDITION steps. */
export function eventContextPatch(event: { name: string; data: unknown; createdAt: Date }): Record<string, unknown> {
  return { lastEvent: { name: event.name, data: event.data, at: event.createdAt.toISOString() } };
}

/**
 * The context patch of the event with this id; null when there is none (of this project
 * and contact, when they are given: an operator's choice must be the execution's own).
 */
export async function readEventContext(
  db: RawDb,
  eventId: string,
  of: { projectId: string; contactId: string } | null = null,
): Promise<Record<string, unknown> | null> {
  const [event] = of
    ? await db.$queryRaw<{ name: string; data: unknown; createdAt: Date }[]>`
        -- readEventContext.ofContact
        SELECT name, data, "createdAt" FROM "Event"
         WHERE id = ${eventId}::uuid AND "projectId" = ${of.projectId}::uuid AND "contactId" = ${of.contactId}::uuid`
    : await db.$queryRaw<{ name: string; data: unknown; createdAt: Date }[]>`
        -- readEventContext
        SELECT name, data, "createdAt" FROM "Event" WHERE id = ${eventId}::uuid`;
  return event ? eventContextPatch(event) : null;
}
