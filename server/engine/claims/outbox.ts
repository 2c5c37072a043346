import { Prisma, type RawDb } from '../../db';
import type { MessageStatus } from '../../generated/prisma/enums';
import { countEvents } from '../../metrics/counts';
import { eventChannelKey, seconds, secondsFromNow } from './fragments';

// Outbox claims, the workers' side: tracked events (stored once, dispatched under a lease,
// retried with backoff, dead-lettered) and queued emails (taken for delivery once, their
// outcome recorded by the sender that took them). The operators' repairs of both are in
// operator.ts.

// ---------------------------------------------------------------------------
// Tracked events

export interface EventRow {
  id: string;
  projectId: string;
  contactId: string | null;
  name: string;
  data: Record<string, unknown>;
  createdAt: Date;
  dispatchAttempts: number;
}

/**
 * I7 (accepted means durable; I3's source events): store a tracked event, once per
 * idempotency key (ON CONFLICT DO NOTHING; the caller reads the first one back). An event
 * of a contact holds the contact's event channel while it is inserted and takes its
 * acceptance time (createdAt) after the lock: a timer holding the channel has then
 * either seen this event or decided before it was accepted (docs/event-time.md, "The event channel lock").
 */
export async function insertEvent(
  db: RawDb,
  e: {
    projectId: string;
    contactId: string | null;
    name: string;
    data: Record<string, unknown>;
    idempotencyKey: string | null;
    dispatchInSeconds: number;
  },
): Promise<string | null> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    -- insertEvent
    WITH channel AS MATERIALIZED (
      SELECT pg_advisory_xact_lock(${eventChannelKey(Prisma.sql`${e.contactId}::uuid`, Prisma.sql`${e.name}::text`)})
       WHERE ${e.contactId}::uuid IS NOT NULL
    )
    INSERT INTO "Event" (id, "projectId", "contactId", name, data, "idempotencyKey", "createdAt", "nextDispatchAt")
    SELECT gen_random_uuid(), ${e.projectId}::uuid, ${e.contactId}::uuid, ${e.name}::text, ${JSON.stringify(e.data)}::jsonb,
           ${e.idempotencyKey}::text, clock_timestamp(), clock_timestamp() + ${seconds(e.dispatchInSeconds)}
      FROM (SELECT count(*) FROM channel) locked
    ON CONFLICT ("projectId", "idempotencyKey") DO NOTHING
    RETURNING id`;
  if (rows[0]) countEvents('accepted');
  return rows[0]?.id ?? null;
}

/**
 * I7 (nothing accepted is lost): take the dispatch lease of one pending event. A second
 * dispatcher loses until the lease expires, so a crash mid-dispatch is retried later.
 */
export async function claimEventDispatch(
  db: RawDb,
  opts: { eventId: string; owner: string; leaseSeconds: number },
): Promise<EventRow | null> {
  const rows = await db.$queryRaw<EventRow[]>`
    -- claimEventDispatch
    UPDATE "Event"
       SET "leaseOwner" = ${opts.owner}, "leaseExpiresAt" = ${secondsFromNow(opts.leaseSeconds)},
           "dispatchAttempts" = "dispatchAttempts" + 1
     WHERE id = ${opts.eventId}::uuid AND "processedAt" IS NULL AND "deadAt" IS NULL
       AND ("leaseExpiresAt" IS NULL OR "leaseExpiresAt" < now())
    RETURNING id, "projectId", "contactId", name, data, "createdAt", "dispatchAttempts"`;
  return rows[0] ?? null;
}

/** I7: the sweeper's batch form: events due for (re)dispatch whose lease is free. */
export async function claimDueEvents(
  db: RawDb,
  opts: { owner: string; leaseSeconds: number; limit: number },
): Promise<EventRow[]> {
  return db.$queryRaw<EventRow[]>`
    -- claimDueEvents
    UPDATE "Event"
       SET "leaseOwner" = ${opts.owner}, "leaseExpiresAt" = ${secondsFromNow(opts.leaseSeconds)},
           "dispatchAttempts" = "dispatchAttempts" + 1
     WHERE id IN (
       SELECT id FROM "Event"
        WHERE "processedAt" IS NULL AND "deadAt" IS NULL AND "nextDispatchAt" <= now()
          AND ("leaseExpiresAt" IS NULL OR "leaseExpiresAt" < now())
        ORDER BY "nextDispatchAt"
        LIMIT ${opts.limit}::int
        FOR UPDATE SKIP LOCKED)
       AND "processedAt" IS NULL AND "deadAt" IS NULL
    RETURNING id, "projectId", "contactId", name, data, "createdAt", "dispatchAttempts"`;
}

/** I7: mark a dispatched event processed, only by the lease holder. */
export async function completeEventDispatch(db: RawDb, opts: { eventId: string; owner: string }): Promise<boolean> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    -- completeEventDispatch
    UPDATE "Event"
       SET "processedAt" = now(), "leaseOwner" = NULL, "leaseExpiresAt" = NULL, "lastError" = NULL
     WHERE id = ${opts.eventId}::uuid AND "leaseOwner" = ${opts.owner} AND "processedAt" IS NULL
    RETURNING id`;
  if (rows.length > 0) countEvents('processed');
  return rows.length > 0;
}

/**
 * I7: a failed dispatch backs off exponentially (2^attempts seconds, at most an hour) and
 * is dead-lettered after maxAttempts, where the console shows it as EVENT_DEAD.
 */
export async function failEventDispatch(
  db: RawDb,
  opts: { eventId: string; owner: string; error: string; maxAttempts: number },
): Promise<{ dead: boolean } | null> {
  const rows = await db.$queryRaw<{ dead: boolean }[]>`
    -- failEventDispatch
    UPDATE "Event"
       SET "lastError" = ${opts.error}, "leaseOwner" = NULL, "leaseExpiresAt" = NULL,
           "nextDispatchAt" = now() + least(power(2, "dispatchAttempts"), 3600) * interval '1 second',
           "deadAt" = CASE WHEN "dispatchAttempts" >= ${opts.maxAttempts} THEN now() END
     WHERE id = ${opts.eventId}::uuid AND "leaseOwner" = ${opts.owner} AND "processedAt" IS NULL
    RETURNING "deadAt" IS NOT NULL AS dead`;
  if (rows[0]?.dead) countEvents('dead');
  return rows[0] ?? null;
}

// ---------------------------------------------------------------------------
// The email outbox

export interface QueuedMessage {
  id: string;
  projectId: string;
  to: string;
  subject: string;
  body: string;
  /** The message's version after the claim: the fence for recording this delivery. */
  version: number;
}

/**
 * I5: take queued messages for delivery. A message leaves QUEUED exactly once; if the
 * sender dies while SENDING it is not sent again automatically (at most once), and the
 * console shows it (MESSAGE_UNCONFIRMED) for an operator to decide.
 */
export async function claimQueuedMessages(
  db: RawDb,
  opts: { owner: string; leaseSeconds: number; limit: number },
): Promise<QueuedMessage[]> {
  return db.$queryRaw<QueuedMessage[]>`
    -- claimQueuedMessages
    UPDATE "Message"
       SET status = 'SENDING', version = version + 1, "leaseOwner" = ${opts.owner},
           "leaseExpiresAt" = ${secondsFromNow(opts.leaseSeconds)}
     WHERE id IN (
       SELECT id FROM "Message" WHERE status = 'QUEUED'
        ORDER BY "createdAt" LIMIT ${opts.limit}::int
        FOR UPDATE SKIP LOCKED)
       AND status = 'QUEUED'
    RETURNING id, "projectId", "to", subject, body, version`;
}

/**
 * I5: a sender keeps the leases of the messages it is handing to the transport. Each is
 * extended only while it is SENDING under this sender's lease, at the version of its
 * claim, and that lease is still live: a lease that ran out belongs to the operator who
 * may now decide the message's fate (MESSAGE_UNCONFIRMED), and a sender waking up late
 * must not revive it behind their back. Returns the messages renewed.
 */
export async function renewMessageLeases(
  db: RawDb,
  opts: { owner: string; leaseSeconds: number; messages: { messageId: string; version: number }[] },
): Promise<string[]> {
  if (opts.messages.length === 0) return [];
  const rows = await db.$queryRaw<{ id: string }[]>`
    -- renewMessageLeases
    UPDATE "Message" m
       SET "leaseExpiresAt" = ${secondsFromNow(opts.leaseSeconds)}
      FROM unnest(${opts.messages.map((o) => o.messageId)}::uuid[], ${opts.messages.map((o) => o.version)}::int[]) AS o(id, version)
     WHERE m.id = o.id AND m.status = 'SENDING' AND m."leaseOwner" = ${opts.owner} AND m.version = o.version
       AND m."leaseExpiresAt" >= now()
    RETURNING m.id`;
  return rows.map((r) => r.id);
}

/**
 * I5: record the outcome of one delivery, only by the sender that claimed it, fenced by
 * the version of its claim: after an operator marked the message sent, resent it or gave
 * up on it, a stalled sender's late write changes nothing.
 */
export async function recordDelivery(
  db: RawDb,
  opts: { messageId: string; owner: string; version: number; providerId?: string | null; error?: string | null },
): Promise<boolean> {
  const sent = !opts.error;
  const rows = await db.$queryRaw<{ id: string }[]>`
    -- recordDelivery
    UPDATE "Message"
       SET status = CASE WHEN ${sent} THEN 'SENT'::"MessageStatus" ELSE 'FAILED'::"MessageStatus" END,
           version = version + 1,
           "sentAt" = CASE WHEN ${sent} THEN now() END,
           "providerId" = ${opts.providerId ?? null}, error = ${opts.error ?? null},
           "leaseOwner" = NULL, "leaseExpiresAt" = NULL
     WHERE id = ${opts.messageId}::uuid AND status = 'SENDING' AND "leaseOwner" = ${opts.owner}
       AND version = ${opts.version}
    RETURNING id`;
  return rows.length > 0;
}

export interface DeliveryOutcome {
  messageId: string;
  version: number;
  providerId?: string | null;
  error?: string | null;
}

/**
 * I5: recordDelivery for a sender's whole batch in one statement: each message fenced
 * as there (SENDING, this sender's lease, the version of its claim), so a message an
 * operator changed meanwhile is left alone while the others are recorded. Returns the
 * messages recorded.
 */
export async function recordDeliveries(db: RawDb, opts: { owner: string; outcomes: DeliveryOutcome[] }): Promise<string[]> {
  if (opts.outcomes.length === 0) return [];
  const rows = await db.$queryRaw<{ id: string }[]>`
    -- recordDeliveries
    UPDATE "Message" m
       SET status = CASE WHEN o.sent THEN 'SENT'::"MessageStatus" ELSE 'FAILED'::"MessageStatus" END,
           version = m.version + 1,
           "sentAt" = CASE WHEN o.sent THEN now() END,
           "providerId" = o."providerId", error = o.error,
           "leaseOwner" = NULL, "leaseExpiresAt" = NULL
      FROM unnest(${opts.outcomes.map((o) => o.messageId)}::uuid[], ${opts.outcomes.map((o) => o.version)}::int[],
                  ${opts.outcomes.map((o) => !o.error)}::boolean[], ${opts.outcomes.map((o) => o.providerId ?? null)}::text[],
                  ${opts.outcomes.map((o) => o.error ?? null)}::text[]) AS o(id, version, sent, "providerId", error)
     WHERE m.id = o.id AND m.status = 'SENDING' AND m."leaseOwner" = ${opts.owner} AND m.version = o.version
    RETURNING m.id`;
  return rows.map((r) => r.id);
}

/** The Message.status enum, as Prisma generates it from the schema (one home). */
export type { MessageStatus };

export interface MessageState {
  id: string;
  projectId: string;
  executionId: string;
  stepExecutionId: string;
  status: MessageStatus;
  /** The message's CAS token: bumped by every change (sender or operator). */
  version: number;
  leaseOwner: string | null;
  leaseExpiresAt: Date | null;
  providerId: string | null;
  error: string | null;
  sentAt: Date | null;
}

/** The current state of a message, for telling a loser what won. */
export async function readMessageState(db: RawDb, messageId: string): Promise<MessageState | null> {
  const rows = await db.$queryRaw<MessageState[]>`
    -- readMessageState
    SELECT id, "projectId", "executionId", "stepExecutionId", status::text AS status, version, "leaseOwner",
           "leaseExpiresAt", "providerId", error, "sentAt"
      FROM "Message" WHERE id = ${messageId}::uuid`;
  return rows[0] ?? null;
}

