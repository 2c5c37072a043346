import { randomBytes } from 'node:crypto';
import { Prisma, transaction, type Db, type DbTx } from '../db';
import { writeAudit, type Acting, type AuditOutcome } from '../engine/audit';
import { WEBHOOK_TEST_TYPE, webhookIdOf } from '../common/webhook-events';
import { refusedWebhookUrl } from './address-policy';

// A project's webhook endpoints as their owners manage them (webhooks.* procedures, the
// Settings console): create, change, rotate, delete, and the delivery log with redeliver
// and a test event. Every change is one raw statement in the transaction that writes its
// audit entry (I8); a change that can race is a compare-and-swap (an endpoint's version,
// a message's status). The secret leaves the server only as create's and rotateSecret's
// answer: never in an audit entry, a log line, a list or any other answer.

/** What a new secret looks like (Standard Webhooks): `whsec_` and the base64 of 24 random bytes. */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

export type DeliveryStatus = 'PENDING' | 'DELIVERED' | 'DEAD';

export interface WebhookEndpointSummary {
  id: string;
  url: string;
  description: string | null;
  eventTypes: string[];
  enabled: boolean;
  stuckThreshold: number;
  stuckIntervalSeconds: number;
  /** The secret's last 4 characters, to tell which one a receiver holds. */
  secretHint: string;
  createdAt: Date;
  createdById: string | null;
  updatedAt: Date;
  version: number;
}

export interface WebhookEndpointListing extends WebhookEndpointSummary {
  /** Messages created in the last 24 hours, by status. */
  last24h: { delivered: number; pending: number; dead: number };
  /** The latest message that was tried: its status, when it was last tried, and the answer. */
  lastDelivery: { messageId: string; status: DeliveryStatus; at: Date; responseStatus: number | null } | null;
}

const SUMMARY = Prisma.sql`e.id, e.url, e.description, e."eventTypes", e.enabled, e."stuckThreshold", e."stuckIntervalSeconds",
  right(e.secret, 4) AS "secretHint", e."createdAt", e."createdById", e."updatedAt", e.version`;

/** What an audit entry keeps of an endpoint: its settings, never its secret. */
function audited(e: WebhookEndpointSummary) {
  return {
    url: e.url,
    description: e.description,
    eventTypes: e.eventTypes,
    enabled: e.enabled,
    stuckThreshold: e.stuckThreshold,
    stuckIntervalSeconds: e.stuckIntervalSeconds,
    version: e.version,
  };
}

function audit(tx: DbTx, by: Acting, action: string, targetType: string, targetId: string, outcome: AuditOutcome, rest: { before?: unknown; after?: unknown } = {}) {
  return writeAudit(tx, { ...by, action: `webhooks.${action}`, targetType, targetId, outcome, ...rest });
}

export type Refusal =
  | { ok: false; reason: 'NOT_FOUND' }
  | { ok: false; reason: 'INVALID_URL'; message: string }
  | { ok: false; reason: 'STALE_VERSION'; currentVersion: number }
  | { ok: false; reason: 'ALREADY_PENDING'; attempts: number; nextAttemptAt: Date }
  | { ok: false; reason: 'ENDPOINT_DISABLED' };

// ---------------------------------------------------------------------------
// Endpoints

/** A project's endpoints, oldest first, each with its last 24 hours and its last delivery. */
export async function listEndpoints(db: DbTx, projectId: string): Promise<WebhookEndpointListing[]> {
  const rows = await db.$queryRaw<(WebhookEndpointSummary & { delivered: number; pending: number; dead: number; lastMessageId: string | null; lastStatus: DeliveryStatus | null; lastAt: Date | null; lastResponseStatus: number | null })[]>`
    -- listWebhookEndpoints
    SELECT ${SUMMARY}, counts.delivered, counts.pending, counts.dead,
           last.id AS "lastMessageId", last.status::text AS "lastStatus", last.at AS "lastAt", last."lastResponseStatus"
    FROM "WebhookEndpoint" e
    CROSS JOIN LATERAL (
      SELECT count(*) FILTER (WHERE m.status = 'DELIVERED')::int AS delivered,
             count(*) FILTER (WHERE m.status = 'PENDING')::int AS pending,
             count(*) FILTER (WHERE m.status = 'DEAD')::int AS dead
      FROM "WebhookMessage" m
      WHERE m."endpointId" = e.id AND m."createdAt" > now() - interval '24 hours'
    ) counts
    LEFT JOIN LATERAL (
      SELECT m.id, m.status, m."lastResponseStatus",
             coalesce((SELECT max(a.at) FROM "WebhookAttempt" a WHERE a."messageId" = m.id), m."deliveredAt", m."createdAt") AS at
      FROM "WebhookMessage" m
      WHERE m."endpointId" = e.id AND m.attempts > 0
      ORDER BY m."createdAt" DESC, m.id DESC
      LIMIT 1
    ) last ON true
    WHERE e."projectId" = ${projectId}::uuid
    ORDER BY e."createdAt", e.id`;
  return rows.map(({ delivered, pending, dead, lastMessageId, lastStatus, lastAt, lastResponseStatus, ...endpoint }) => ({
    ...endpoint,
    last24h: { delivered, pending, dead },
    lastDelivery: lastMessageId && lastStatus && lastAt ? { messageId: lastMessageId, status: lastStatus, at: lastAt, responseStatus: lastResponseStatus } : null,
  }));
}

/** One endpoint of the project, or null. */
export async function getEndpoint(db: DbTx, projectId: string, id: string): Promise<WebhookEndpointSummary | null> {
  const [row] = await db.$queryRaw<WebhookEndpointSummary[]>`
    -- getWebhookEndpoint
    SELECT ${SUMMARY} FROM "WebhookEndpoint" e WHERE e.id = ${id}::uuid AND e."projectId" = ${projectId}::uuid`;
  return row ?? null;
}

export interface EndpointSettings {
  url: string;
  eventTypes: string[];
  description?: string | null | undefined;
  stuckThreshold?: number | undefined;
  stuckIntervalSeconds?: number | undefined;
}

/** The URL's refusal, if the address policy refuses it (the dispatcher checks again at connect time). */
function urlRefusal(url: string): Refusal | null {
  const message = refusedWebhookUrl(url);
  return message ? { ok: false, reason: 'INVALID_URL', message } : null;
}

export async function createEndpoint(
  db: Db,
  by: Acting,
  input: EndpointSettings,
): Promise<{ ok: true; endpoint: WebhookEndpointSummary; secret: string } | Refusal> {
  const refusal = urlRefusal(input.url);
  if (refusal) return refusal;
  const secret = generateWebhookSecret();
  return transaction(db, 'SHORT', async (tx) => {
    const [endpoint] = await tx.$queryRaw<WebhookEndpointSummary[]>`
      -- createWebhookEndpoint
      INSERT INTO "WebhookEndpoint" AS e ("projectId", url, description, "eventTypes", secret, "stuckThreshold", "stuckIntervalSeconds", "createdById")
      VALUES (${by.projectId}::uuid, ${input.url}, ${input.description ?? null}::text, ${input.eventTypes}::text[], ${secret},
              ${input.stuckThreshold ?? 1}::int, ${input.stuckIntervalSeconds ?? 3600}::int, ${by.actor})
      RETURNING ${SUMMARY}`;
    await audit(tx, by, 'create', 'webhookEndpoint', endpoint!.id, 'APPLIED', { after: audited(endpoint!) });
    return { ok: true as const, endpoint: endpoint!, secret };
  });
}

export interface EndpointChange {
  id: string;
  expectedVersion: number;
  url?: string | undefined;
  eventTypes?: string[] | undefined;
  /** Undefined leaves it; null clears it. */
  description?: string | null | undefined;
  enabled?: boolean | undefined;
  stuckThreshold?: number | undefined;
  stuckIntervalSeconds?: number | undefined;
}

/**
 * Change an endpoint's settings: a compare-and-swap on its version, so of two owners
 * saving what they each read, the second is told the endpoint changed (and nothing of
 * theirs is written) instead of silently undoing the first.
 */
export async function updateEndpoint(db: Db, by: Acting, change: EndpointChange): Promise<{ ok: true; endpoint: WebhookEndpointSummary } | Refusal> {
  if (change.url !== undefined) {
    const refusal = urlRefusal(change.url);
    if (refusal) return refusal;
  }
  return transaction(db, 'SHORT', async (tx) => {
    const [row] = await tx.$queryRaw<(WebhookEndpointSummary & { before: WebhookEndpointSummary })[]>`
      -- updateWebhookEndpoint
      UPDATE "WebhookEndpoint" AS e SET
        url = coalesce(${change.url ?? null}::text, e.url),
        "eventTypes" = coalesce(${change.eventTypes ?? null}::text[], e."eventTypes"),
        description = CASE WHEN ${change.description !== undefined} THEN ${change.description ?? null}::text ELSE e.description END,
        enabled = coalesce(${change.enabled ?? null}::boolean, e.enabled),
        "stuckThreshold" = coalesce(${change.stuckThreshold ?? null}::int, e."stuckThreshold"),
        "stuckIntervalSeconds" = coalesce(${change.stuckIntervalSeconds ?? null}::int, e."stuckIntervalSeconds"),
        version = e.version + 1,
        "updatedAt" = now()
      FROM (SELECT o.id, to_jsonb(o) - 'secret' AS before FROM "WebhookEndpoint" o
            WHERE o.id = ${change.id}::uuid AND o."projectId" = ${by.projectId}::uuid FOR UPDATE) old
      WHERE e.id = old.id AND e."projectId" = ${by.projectId}::uuid AND e.version = ${change.expectedVersion}::int
      RETURNING ${SUMMARY}, old.before`;
    if (!row) {
      const current = await getEndpoint(tx, by.projectId, change.id);
      if (!current) {
        await audit(tx, by, 'update', 'webhookEndpoint', change.id, 'REJECTED', { after: { error: 'NOT_FOUND' } });
        return { ok: false as const, reason: 'NOT_FOUND' as const };
      }
      await audit(tx, by, 'update', 'webhookEndpoint', change.id, 'LOST', {
        before: { expectedVersion: change.expectedVersion },
        after: { error: 'STALE_VERSION', currentVersion: current.version },
      });
      return { ok: false as const, reason: 'STALE_VERSION' as const, currentVersion: current.version };
    }
    const { before, ...endpoint } = row;
    await audit(tx, by, 'update', 'webhookEndpoint', endpoint.id, 'APPLIED', { before: audited(before), after: audited(endpoint) });
    return { ok: true as const, endpoint };
  });
}

/** A new secret for the endpoint, answered once; deliveries are signed with it from now on. */
export async function rotateSecret(db: Db, by: Acting, id: string): Promise<{ ok: true; secret: string; endpoint: WebhookEndpointSummary } | Refusal> {
  const secret = generateWebhookSecret();
  return transaction(db, 'SHORT', async (tx) => {
    const [endpoint] = await tx.$queryRaw<WebhookEndpointSummary[]>`
      -- rotateWebhookSecret
      UPDATE "WebhookEndpoint" AS e SET secret = ${secret}, version = e.version + 1, "updatedAt" = now()
      WHERE e.id = ${id}::uuid AND e."projectId" = ${by.projectId}::uuid
      RETURNING ${SUMMARY}`;
    if (!endpoint) {
      await audit(tx, by, 'rotateSecret', 'webhookEndpoint', id, 'REJECTED', { after: { error: 'NOT_FOUND' } });
      return { ok: false as const, reason: 'NOT_FOUND' as const };
    }
    // The hint only: the secret itself is the answer's alone.
    await audit(tx, by, 'rotateSecret', 'webhookEndpoint', id, 'APPLIED', { after: { url: endpoint.url, secretHint: endpoint.secretHint, version: endpoint.version } });
    return { ok: true as const, secret, endpoint };
  });
}

/** Delete an endpoint with its delivery log (ON DELETE CASCADE). */
export async function deleteEndpoint(db: Db, by: Acting, id: string): Promise<{ ok: true; endpoint: WebhookEndpointSummary } | Refusal> {
  return transaction(db, 'SHORT', async (tx) => {
    const [endpoint] = await tx.$queryRaw<WebhookEndpointSummary[]>`
      -- deleteWebhookEndpoint
      DELETE FROM "WebhookEndpoint" AS e WHERE e.id = ${id}::uuid AND e."projectId" = ${by.projectId}::uuid
      RETURNING ${SUMMARY}`;
    if (!endpoint) {
      await audit(tx, by, 'delete', 'webhookEndpoint', id, 'REJECTED', { after: { error: 'NOT_FOUND' } });
      return { ok: false as const, reason: 'NOT_FOUND' as const };
    }
    await audit(tx, by, 'delete', 'webhookEndpoint', id, 'APPLIED', { before: audited(endpoint) });
    return { ok: true as const, endpoint };
  });
}

// ---------------------------------------------------------------------------
// The delivery log

export interface DeliveryRow {
  id: string;
  /** The `webhook-id` header receivers dedupe on: the same for every attempt and redelivery. */
  webhookId: string;
  endpointId: string;
  eventType: string;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: Date;
  lastResponseStatus: number | null;
  lastLatencyMs: number | null;
  lastError: string | null;
  deliveredAt: Date | null;
  createdAt: Date;
}

export interface DeliveryAttempt {
  id: string;
  at: Date;
  responseStatus: number | null;
  latencyMs: number;
  responseExcerpt: string | null;
  error: string | null;
  dispatcher: string;
}

export interface DeliveryDetail extends DeliveryRow {
  payload: unknown;
  endpointUrl: string;
  /** Oldest first. */
  attemptLog: DeliveryAttempt[];
}

const DELIVERY = Prisma.sql`m.id, m."endpointId", m."eventType", m.status::text AS status,
  m.attempts, m."nextAttemptAt", m."lastResponseStatus", m."lastLatencyMs", m."lastError", m."deliveredAt", m."createdAt"`;

function withWebhookId<T extends { id: string }>(row: T): T & { webhookId: string } {
  return { ...row, webhookId: webhookIdOf(row.id) };
}

export interface DeliveryFilter {
  projectId: string;
  endpointId: string;
  status?: DeliveryStatus | undefined;
  cursor?: { at: Date; id: string } | undefined;
  limit: number;
}

/**
 * An endpoint's messages, newest first, keyset-paginated on (createdAt, id) along the
 * (endpointId, createdAt DESC, id DESC) index; null when the endpoint is not the project's.
 */
export async function listDeliveries(db: DbTx, f: DeliveryFilter): Promise<{ rows: DeliveryRow[] } | null> {
  const conditions = [Prisma.sql`m."endpointId" = ${f.endpointId}::uuid`];
  if (f.status) conditions.push(Prisma.sql`m.status = ${f.status}::"WebhookStatus"`);
  if (f.cursor) conditions.push(Prisma.sql`(m."createdAt", m.id) < (${f.cursor.at}::timestamptz, ${f.cursor.id}::uuid)`);
  const [endpoint, rows] = await Promise.all([
    getEndpoint(db, f.projectId, f.endpointId),
    db.$queryRaw<Omit<DeliveryRow, 'webhookId'>[]>`
      -- listWebhookDeliveries
      SELECT ${DELIVERY} FROM "WebhookMessage" m
      WHERE ${Prisma.join(conditions, ' AND ')} AND m."projectId" = ${f.projectId}::uuid
      ORDER BY m."createdAt" DESC, m.id DESC
      LIMIT ${f.limit + 1}`,
  ]);
  return endpoint ? { rows: rows.map(withWebhookId) } : null;
}

/** One message of the project with its payload and every attempt, or null. */
export async function getDelivery(db: DbTx, projectId: string, id: string): Promise<DeliveryDetail | null> {
  const [row] = await db.$queryRaw<(Omit<DeliveryRow, 'webhookId'> & { payload: unknown; endpointUrl: string; attemptLog: (Omit<DeliveryAttempt, 'at'> & { at: string })[] })[]>`
    -- getWebhookDelivery
    SELECT ${DELIVERY}, m.payload, e.url AS "endpointUrl",
           coalesce((SELECT jsonb_agg(jsonb_build_object('id', a.id, 'at', a.at, 'responseStatus', a."responseStatus", 'latencyMs', a."latencyMs",
                                                         'responseExcerpt', a."responseExcerpt", 'error', a.error, 'dispatcher', a.dispatcher)
                                      ORDER BY a.at, a.id)
                     FROM "WebhookAttempt" a WHERE a."messageId" = m.id), '[]'::jsonb) AS "attemptLog"
    FROM "WebhookMessage" m JOIN "WebhookEndpoint" e ON e.id = m."endpointId"
    WHERE m.id = ${id}::uuid AND m."projectId" = ${projectId}::uuid`;
  if (!row) return null;
  return { ...withWebhookId(row), attemptLog: row.attemptLog.map((a) => ({ ...a, at: new Date(a.at) })) };
}

/**
 * Deliver a message again: a compare-and-swap from DEAD or DELIVERED back to PENDING with
 * its attempts reset and due now, keeping its id (so its `webhook-id`: a receiver that saw
 * it dedupes). Of two owners redelivering at once one wins; the other is told it is
 * pending already, as it is for a message still being tried.
 */
export async function redeliver(db: Db, by: Acting, id: string): Promise<{ ok: true; delivery: DeliveryRow } | Refusal> {
  return transaction(db, 'SHORT', async (tx) => {
    const [row] = await tx.$queryRaw<(Omit<DeliveryRow, 'webhookId'> & { before: { status: DeliveryStatus; attempts: number } })[]>`
      -- redeliverWebhookMessage
      UPDATE "WebhookMessage" AS m SET status = 'PENDING', attempts = 0, "nextAttemptAt" = now(), "deliveredAt" = NULL,
        "leaseOwner" = NULL, "leaseExpiresAt" = NULL
      FROM (SELECT o.id, jsonb_build_object('status', o.status, 'attempts', o.attempts) AS before FROM "WebhookMessage" o
            WHERE o.id = ${id}::uuid AND o."projectId" = ${by.projectId}::uuid FOR UPDATE) old
      WHERE m.id = old.id AND m.status IN ('DEAD', 'DELIVERED')
      RETURNING ${DELIVERY}, old.before`;
    if (!row) {
      const [current] = await tx.$queryRaw<{ attempts: number; nextAttemptAt: Date }[]>`
        -- currentWebhookMessage
        SELECT attempts, "nextAttemptAt" FROM "WebhookMessage" WHERE id = ${id}::uuid AND "projectId" = ${by.projectId}::uuid`;
      if (!current) {
        await audit(tx, by, 'redeliver', 'webhookMessage', id, 'REJECTED', { after: { error: 'NOT_FOUND' } });
        return { ok: false as const, reason: 'NOT_FOUND' as const };
      }
      await audit(tx, by, 'redeliver', 'webhookMessage', id, 'LOST', { after: { error: 'ALREADY_PENDING', attempts: current.attempts } });
      return { ok: false as const, reason: 'ALREADY_PENDING' as const, ...current };
    }
    const { before, ...changed } = row;
    const delivery = withWebhookId(changed);
    await audit(tx, by, 'redeliver', 'webhookMessage', id, 'APPLIED', {
      before,
      after: { status: delivery.status, attempts: 0, endpointId: delivery.endpointId, eventType: delivery.eventType },
    });
    return { ok: true as const, delivery };
  });
}

const TEST_MESSAGE = 'A test event from Waypost: this endpoint receives signed webhooks.';

/**
 * A `webhook.test` message to one endpoint, whatever it subscribes to, delivered (signed,
 * retried, logged) as every other message is. A disabled endpoint is refused: nothing is
 * delivered to it.
 */
export async function sendTestEvent(db: Db, by: Acting, endpointId: string): Promise<{ ok: true; delivery: DeliveryRow } | Refusal> {
  return transaction(db, 'SHORT', async (tx) => {
    const [row] = await tx.$queryRaw<(Omit<DeliveryRow, 'webhookId'> & { enabled: boolean })[]>`
      -- sendWebhookTest
      WITH endpoint AS (
        SELECT e.id, e.enabled FROM "WebhookEndpoint" e WHERE e.id = ${endpointId}::uuid AND e."projectId" = ${by.projectId}::uuid
      ), inserted AS (
        INSERT INTO "WebhookMessage" ("projectId", "endpointId", "eventType", payload)
        SELECT ${by.projectId}::uuid, endpoint.id, ${WEBHOOK_TEST_TYPE},
               jsonb_build_object('type', ${WEBHOOK_TEST_TYPE}::text, 'timestamp', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                                  'data', jsonb_build_object('endpointId', endpoint.id, 'message', ${TEST_MESSAGE}::text))
        FROM endpoint WHERE endpoint.enabled
        RETURNING *
      )
      SELECT endpoint.enabled, m.id, m."endpointId", m."eventType", m.status::text AS status,
             m.attempts, m."nextAttemptAt", m."lastResponseStatus", m."lastLatencyMs", m."lastError", m."deliveredAt", m."createdAt"
      FROM endpoint LEFT JOIN inserted m ON true`;
    if (!row) {
      await audit(tx, by, 'sendTest', 'webhookEndpoint', endpointId, 'REJECTED', { after: { error: 'NOT_FOUND' } });
      return { ok: false as const, reason: 'NOT_FOUND' as const };
    }
    const { enabled, ...inserted } = row;
    if (!enabled) {
      await audit(tx, by, 'sendTest', 'webhookEndpoint', endpointId, 'REJECTED', { after: { error: 'ENDPOINT_DISABLED' } });
      return { ok: false as const, reason: 'ENDPOINT_DISABLED' as const };
    }
    const delivery = withWebhookId(inserted);
    await audit(tx, by, 'sendTest', 'webhookEndpoint', endpointId, 'APPLIED', { after: { messageId: delivery.id, eventType: WEBHOOK_TEST_TYPE } });
    return { ok: true as const, delivery };
  });
}
