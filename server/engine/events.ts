import { transaction, type Db, type RawDb } from '../db';
import { log } from '../log';
import { writeAudit, type Acting } from './audit';
import {
  claimDueEvents,
  claimEventDispatch,
  claimWaitsForEvent,
  completeEventDispatch,
  failEventDispatch,
  insertEvent,
  type EventRow,
} from './claims';
import { resolveContact } from './contacts';
import { createEngineContext, DEFAULT_ENGINE_CONFIG, type EngineContext } from './context';
import { enroll, type EnrollResult } from './enrollment';
import { eventContextPatch } from './event-context';
import { continueAfterWaits } from './continuations';
import type { ResumeResult } from './runner';
import { notifyWorkers } from './wakeup';

// Tracked events go through an outbox: the event row is stored first (accepted means
// durable), then dispatched: enroll into workflows triggered by its name, resolve the
// contact's waits for it. Dispatch holds a lease; a failure backs off and, after
// EVENT_MAX_ATTEMPTS, dead-letters the event where the console shows it (I7).

export interface TrackEventInput {
  projectId: string;
  name: string;
  contactId?: string | null;
  email?: string | null;
  data?: Record<string, unknown>;
  idempotencyKey?: string | null;
}

export type TrackEventResult =
  | { ok: true; eventId: string; duplicate: boolean }
  | { ok: false; reason: 'CONTACT_NOT_FOUND' };

/** Store an event (idempotent per idempotencyKey), then dispatch it inline unless told not to. */
export async function trackEvent(
  ctx: EngineContext,
  input: TrackEventInput,
  opts: { dispatch?: boolean } = {},
): Promise<TrackEventResult> {
  const stored = await storeEvent(ctx.db, input, ctx.config.inlineDispatchSeconds);
  if (!stored.ok) return stored;
  if (!stored.duplicate && opts.dispatch !== false) {
    try {
      await dispatchEvent(ctx, stored.eventId);
    } catch (error) {
      // Stored is what counts: the sweeper re-dispatches it.
      ctx.log('warn', 'inline dispatch failed; the sweeper will retry', { eventId: stored.eventId, error: String(error) });
    }
  }
  return stored;
}

/**
 * events.track: store an event with its audit entry in one transaction (accepted means
 * durable), then dispatch it inline: enroll into workflows it triggers, resume the
 * contact's waits for it. If that dispatch fails, the outbox sweeper retries it.
 */
export async function trackEventAudited(db: Db, by: Acting, input: Omit<TrackEventInput, 'projectId'>): Promise<TrackEventResult> {
  const stored = await transaction(db, 'ENGINE', async (tx) => {
    const r = await storeEvent(
      tx,
      { ...input, projectId: by.projectId },
      // The sweeper leaves a new event alone this long: the inline dispatch below has it.
      DEFAULT_ENGINE_CONFIG.inlineDispatchSeconds,
    );
    await writeAudit(tx, {
      ...by,
      action: 'events.track',
      targetType: 'event',
      targetId: r.ok ? r.eventId : (input.contactId ?? input.name),
      outcome: r.ok ? 'APPLIED' : 'REJECTED',
      after: r.ok ? { name: input.name, duplicate: r.duplicate, idempotencyKey: input.idempotencyKey ?? null } : r,
    });
    return r;
  });
  if (stored.ok && !stored.duplicate) {
    const engine = createEngineContext(db, { owner: `api:${process.pid}` });
    const summary = await dispatchEvent(engine, stored.eventId).catch((error: unknown) => {
      log.warn(`events.track: inline dispatch of ${stored.eventId} failed; the sweeper will retry:`, { err: error });
      return null;
    });
    // Dispatch wakes workers for its enrollments itself; resumed waits need it here.
    if (summary?.resumed.some((r) => r.result.resumed)) await notifyWorkers(db).catch(() => {});
  }
  return stored;
}

/** The outbox write: the event is accepted once this returns. */
export async function storeEvent(
  db: RawDb,
  input: TrackEventInput,
  inlineDispatchSeconds: number,
): Promise<TrackEventResult> {
  const contact = await resolveContact(db, input.projectId, { contactId: input.contactId, email: input.email });
  if (contact === null) return { ok: false, reason: 'CONTACT_NOT_FOUND' };
  const contactId = contact === 'none' ? null : contact;
  const eventId = await insertEvent(db, {
    projectId: input.projectId,
    contactId,
    name: input.name,
    data: input.data ?? {},
    idempotencyKey: input.idempotencyKey ?? null,
    dispatchInSeconds: inlineDispatchSeconds,
  });
  if (eventId) return { ok: true, eventId, duplicate: false };
  const [existing] = await db.$queryRaw<{ id: string }[]>`
    -- storeEvent.duplicate
    SELECT id FROM "Event" WHERE "projectId" = ${input.projectId}::uuid AND "idempotencyKey" = ${input.idempotencyKey ?? null}`;
  return { ok: true, eventId: existing!.id, duplicate: true };
}

export interface DispatchSummary {
  eventId: string;
  enrollments: { workflowId: string; result: EnrollResult }[];
  resumed: { stepExecutionId: string; result: ResumeResult }[];
}

/** Dispatch one event if its lease is free; null when another dispatcher holds it or it is done. */
export async function dispatchEvent(ctx: EngineContext, eventId: string): Promise<DispatchSummary | null> {
  const event = await claimEventDispatch(ctx.db, { eventId, owner: ctx.owner, leaseSeconds: ctx.config.leaseSeconds });
  if (!event) return null;
  return deliverClaimedEvent(ctx, event);
}

/**
 * The sweeper: (re)dispatch events whose time has come and whose lease is free, side by
 * side (each on a connection of its own from the pool). Which of a contact's in-window
 * events resolves a wait does not depend on their order (claimWaitsForEvent): any
 * event accepted inside the window resolves it, once.
 */
export async function processDueEvents(ctx: EngineContext, limit: number): Promise<number> {
  const events = await claimDueEvents(ctx.db, { owner: ctx.owner, leaseSeconds: ctx.config.leaseSeconds, limit });
  await Promise.all(events.map((event) => deliverClaimedEvent(ctx, event).catch(() => null)));
  return events.length;
}

async function deliverClaimedEvent(ctx: EngineContext, event: EventRow): Promise<DispatchSummary> {
  try {
    const summary = await deliverEvent(ctx, event);
    await completeEventDispatch(ctx.db, { eventId: event.id, owner: ctx.owner });
    if (summary.enrollments.some((e) => e.result.ok && e.result.created)) await notifyWorkers(ctx.db);
    return summary;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const failed = await failEventDispatch(ctx.db, {
      eventId: event.id,
      owner: ctx.owner,
      error: message.slice(0, 2000),
      maxAttempts: ctx.config.eventMaxAttempts,
    });
    ctx.log(failed?.dead ? 'error' : 'warn', failed?.dead ? 'event dead-lettered' : 'event dispatch failed; will retry', {
      eventId: event.id,
      attempts: event.dispatchAttempts,
      error: message,
    });
    throw error;
  }
}

async function deliverEvent(ctx: EngineContext, event: EventRow): Promise<DispatchSummary> {
  const summary: DispatchSummary = { eventId: event.id, enrollments: [], resumed: [] };
  if (!event.contactId) return summary;

  const workflows = await ctx.db.$queryRaw<{ id: string }[]>`
    -- deliverEvent.triggeredWorkflows
    SELECT id FROM "Workflow"
     WHERE "projectId" = ${event.projectId}::uuid AND trigger = 'EVENT' AND "triggerEvent" = ${event.name} AND enabled
     ORDER BY "createdAt"`;
  for (const wf of workflows) {
    const result = await enroll(ctx.db, {
      projectId: event.projectId,
      workflowId: wf.id,
      contactId: event.contactId,
      context: { trigger: { name: event.name, data: event.data } },
      sourceEventId: event.id,
    });
    summary.enrollments.push({ workflowId: wf.id, result });
  }

  // The contact's parked waits for this name whose window holds the event's acceptance
  // time, however late this dispatch runs. A wait not parked yet (being claimed, retried,
  // redriven) finds the event itself when it parks, so nothing is left to retry here.
  const claimed = await claimWaitsForEvent(ctx.db, { ...event, contactId: event.contactId });
  if (claimed.length === 0) return summary;
  // All the waits it resolved, advanced in one statement. If advancing lost, the claims
  // stand and the continuation sweeper re-drives them.
  const patch = eventContextPatch(event);
  const advanced = await continueAfterWaits(ctx, claimed.map((wait) => ({ wait, contextPatch: patch })));
  claimed.forEach((wait, i) =>
    summary.resumed.push({
      stepExecutionId: wait.stepExecutionId,
      result: { resumed: true, executionId: wait.executionId, branch: wait.branch, version: advanced[i]!.version ?? wait.version },
    }),
  );
  return summary;
}
