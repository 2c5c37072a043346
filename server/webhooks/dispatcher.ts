import type { RawDb } from '../db';
import { webhookIdOf } from '../common/webhook-events';
import { deliver, type DeliveryOutcome } from './delivery';

// The webhook dispatcher (docs/webhooks.md): runs in every worker process beside the
// engine's loop, with its own timer, its own small concurrency and its own connections,
// so a slow endpoint never holds a step slot or a database connection. A pass claims due
// messages with one statement (a lease, SKIP LOCKED: dispatchers in several processes
// share the queue), delivers each over HTTP holding no connection, and records the
// attempt and its outcome with one statement guarded by the lease. A dispatcher killed
// mid-delivery leaves a lease that expires; the message is then delivered again, with the
// same webhook-id (at-least-once: receivers dedupe by it).

export interface DispatcherOptions {
  /** This dispatcher's name in leases and the attempts log (the worker's). */
  owner: string;
  /** Deliveries in flight at once. */
  concurrency: number;
  timeoutMs: number;
  /** Seconds before each retry; a message failing once more than its length is DEAD. */
  retrySchedule: readonly number[];
  allowedHosts: readonly string[];
  /** How long a claim holds a message: past the delivery's timeout, with a margin to record it. */
  leaseSeconds?: number;
  /** The sleep between passes that found nothing due. */
  pollMs?: number;
  log?: (level: 'debug' | 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
}

/** The lease of a claim: the delivery's timeout plus 5 s to record its outcome. */
export function webhookLeaseSeconds(timeoutMs: number): number {
  return Math.ceil(timeoutMs / 1000) + 5;
}

export interface ClaimedWebhook {
  id: string;
  attempts: number;
  /** The stored payload's text: the body, identical on every attempt. */
  body: string;
  url: string;
  secret: string;
}

/**
 * Claim up to `limit` due messages: PENDING, due, and not leased (or the lease ran out),
 * of an enabled endpoint, oldest due first. Concurrent dispatchers skip each other's rows.
 */
export async function claimWebhookMessages(db: RawDb, opts: { owner: string; limit: number; leaseSeconds: number }): Promise<ClaimedWebhook[]> {
  if (opts.limit <= 0) return [];
  return db.$queryRaw<ClaimedWebhook[]>`
    -- claimWebhookMessages
    UPDATE "WebhookMessage" m
       SET "leaseOwner" = ${opts.owner}, "leaseExpiresAt" = now() + ${opts.leaseSeconds}::float8 * interval '1 second'
      FROM "WebhookEndpoint" e
     WHERE e.id = m."endpointId"
       AND m.id IN (
         SELECT q.id FROM "WebhookMessage" q JOIN "WebhookEndpoint" qe ON qe.id = q."endpointId" AND qe.enabled
          WHERE q.status = 'PENDING' AND q."nextAttemptAt" <= now()
            AND (q."leaseExpiresAt" IS NULL OR q."leaseExpiresAt" < now())
          ORDER BY q."nextAttemptAt"
          LIMIT ${opts.limit}
            FOR UPDATE OF q SKIP LOCKED)
    RETURNING m.id, m.attempts, m.payload::text AS body, e.url, e.secret`;
}

/**
 * Record one attempt and its outcome, only while this dispatcher still holds the lease
 * (a lease that ran out and was claimed again belongs to the other dispatcher, whose
 * answer counts). 2xx: DELIVERED. Otherwise attempts + 1, and the next attempt after the
 * schedule's delay for it, or DEAD after the last. The attempt is logged either way (it
 * was made). True when the outcome was recorded.
 */
export async function recordWebhookAttempt(
  db: RawDb,
  opts: { messageId: string; owner: string; outcome: DeliveryOutcome; retrySchedule: readonly number[] },
): Promise<boolean> {
  const o = opts.outcome;
  const excerpt = o.excerpt === null ? null : o.excerpt.replace(/\u0000/g, '');
  const rows = await db.$queryRaw<{ id: string }[]>`
    -- recordWebhookAttempt
    WITH attempt AS (
      INSERT INTO "WebhookAttempt" ("messageId", "responseStatus", "latencyMs", "responseExcerpt", error, dispatcher)
      SELECT id, ${o.status}::int, ${o.latencyMs}::int, ${excerpt}::text, ${o.error}::text, ${opts.owner}
        FROM "WebhookMessage" WHERE id = ${opts.messageId}::uuid
    )
    UPDATE "WebhookMessage"
       SET attempts = attempts + 1,
           status = CASE WHEN ${o.ok} THEN 'DELIVERED'::"WebhookStatus"
                         WHEN attempts + 1 > cardinality(${opts.retrySchedule}::int[]) THEN 'DEAD'::"WebhookStatus"
                         ELSE 'PENDING'::"WebhookStatus" END,
           "deliveredAt" = CASE WHEN ${o.ok} THEN now() ELSE "deliveredAt" END,
           "nextAttemptAt" = CASE WHEN ${o.ok} OR attempts + 1 > cardinality(${opts.retrySchedule}::int[]) THEN "nextAttemptAt"
                                  ELSE now() + (${opts.retrySchedule}::int[])[attempts + 1] * interval '1 second' END,
           "lastResponseStatus" = ${o.status}::int, "lastError" = ${o.error}::text, "lastLatencyMs" = ${o.latencyMs}::int,
           "leaseOwner" = NULL, "leaseExpiresAt" = NULL
     WHERE id = ${opts.messageId}::uuid AND status = 'PENDING' AND "leaseOwner" = ${opts.owner}
    RETURNING id`;
  return rows.length > 0;
}

/** Claim, deliver and record one batch; resolves when every delivery of it was recorded. Returns how many it claimed. */
export async function dispatchOnce(db: RawDb, opts: DispatcherOptions, limit = opts.concurrency): Promise<number> {
  const claimed = await claimWebhookMessages(db, { owner: opts.owner, limit, leaseSeconds: opts.leaseSeconds ?? webhookLeaseSeconds(opts.timeoutMs) });
  await Promise.all(claimed.map((m) => deliverClaimed(db, opts, m)));
  return claimed.length;
}

async function deliverClaimed(db: RawDb, opts: DispatcherOptions, m: ClaimedWebhook): Promise<void> {
  const outcome = await deliver({
    url: m.url,
    secret: m.secret,
    webhookId: webhookIdOf(m.id),
    body: m.body,
    timeoutMs: opts.timeoutMs,
    allowedHosts: opts.allowedHosts,
  });
  const recorded = await recordWebhookAttempt(db, { messageId: m.id, owner: opts.owner, outcome, retrySchedule: opts.retrySchedule });
  if (!recorded) opts.log?.('warn', 'webhook attempt outcome not recorded: the lease ran out first, or the message is gone (its endpoint deleted)', { messageId: m.id });
  else if (!outcome.ok) opts.log?.('debug', 'webhook delivery failed', { messageId: m.id, attempt: m.attempts + 1, error: outcome.error });
}

/**
 * The dispatcher's loop: keeps up to `concurrency` deliveries in flight, claiming as many
 * due messages as it has free slots, and sleeps `pollMs` when nothing is due. stop() stops
 * claiming and waits for the deliveries in flight (each bounded by the timeout).
 */
export class WebhookDispatcher {
  private stopping = false;
  private loop: Promise<void> | null = null;
  private readonly inFlight = new Set<Promise<void>>();
  private wake: (() => void) | null = null;

  constructor(
    private readonly db: RawDb,
    private readonly options: DispatcherOptions,
  ) {}

  start(): void {
    this.loop ??= this.run();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    await this.loop;
    await Promise.all(this.inFlight);
  }

  private async run(): Promise<void> {
    const o = this.options;
    const leaseSeconds = o.leaseSeconds ?? webhookLeaseSeconds(o.timeoutMs);
    let failures = 0;
    while (!this.stopping) {
      let claimed = 0;
      const free = o.concurrency - this.inFlight.size;
      try {
        const batch = await claimWebhookMessages(this.db, { owner: o.owner, limit: free, leaseSeconds });
        claimed = batch.length;
        failures = 0;
        for (const m of batch) {
          const run: Promise<void> = deliverClaimed(this.db, o, m)
            .catch((error: unknown) => o.log?.('warn', 'recording a webhook attempt failed', { messageId: m.id, error: String(error) }))
            .finally(() => {
              this.inFlight.delete(run);
              this.wake?.();
            });
          this.inFlight.add(run);
        }
      } catch (error) {
        failures++;
        if (failures === 1) o.log?.('warn', 'webhook dispatch pass failed; backing off', { error: String(error).split('\n').at(-1) });
      }
      if (this.stopping) break;
      // Slots free and work found: claim again now. Otherwise sleep until a slot frees or the poll interval passes.
      if (claimed > 0 && this.inFlight.size < o.concurrency) continue;
      const idle = failures > 0 ? Math.min(10_000, 500 * 2 ** failures) : (o.pollMs ?? 1000);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, idle);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = null;
    }
  }
}

/** The dispatcher settings of a worker process, from its environment (server/env.ts). */
export function dispatcherSettings(config: {
  WEBHOOK_CONCURRENCY: number;
  WEBHOOK_TIMEOUT_MS: number;
  WEBHOOK_RETRY_SCHEDULE: number[];
  WEBHOOK_ALLOWED_HOSTS?: string[] | undefined;
}): Omit<DispatcherOptions, 'owner' | 'log'> {
  return {
    concurrency: config.WEBHOOK_CONCURRENCY,
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    retrySchedule: config.WEBHOOK_RETRY_SCHEDULE,
    allowedHosts: config.WEBHOOK_ALLOWED_HOSTS ?? [],
  };
}
