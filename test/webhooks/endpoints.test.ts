import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Role } from '../../server/common/roles';
import { WEBHOOK_EVENT_TYPES } from '../../server/common/webhook-events';
import { actorFor, callerFor, expectCode } from '../support/callers';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createProject } from '../support/fixtures';
import { fulfilled, racers, ROUNDS, type Racers } from '../support/race';

// Webhook endpoints as owners manage them (webhooks.*, server/webhooks/endpoints.ts),
// through the real router on a real database: CRUD, who may, another project's rows,
// the secret shown once, the compare-and-swaps of update and redeliver under real
// concurrency (separate connections released together), and the URLs refused up front.

let t: TestDatabase;
let projectId: string;
let otherProjectId: string;
let owner: ReturnType<typeof callerFor>;
let otherOwner: ReturnType<typeof callerFor>;
let race: Racers;

const RACE_ROUNDS = ROUNDS;
const SECRET = /^whsec_[A-Za-z0-9+/]{32}$/;

beforeAll(async () => {
  t = await freshDatabase();
  projectId = (await createProject(t.db, 'hooks')).id;
  otherProjectId = (await createProject(t.db, 'other hooks')).id;
  owner = callerFor(t.db, actorFor(projectId, 'OWNER'));
  otherOwner = callerFor(t.db, actorFor(otherProjectId, 'OWNER'));
  race = await racers(t.url, 2);
});
afterAll(async () => {
  await race?.close();
  await t?.drop();
});

const newEndpoint = (caller = owner, url = 'https://hooks.example.com/waypost') => caller.webhooks.create({ url, eventTypes: ['execution.failed', 'event.dead'] });

/** A message of the endpoint in a given state, staged as the dispatcher would leave it. */
async function message(endpointId: string, status: 'PENDING' | 'DELIVERED' | 'DEAD', at = new Date()): Promise<string> {
  const [row] = await t.query<{ id: string }>(
    `INSERT INTO "WebhookMessage" ("projectId", "endpointId", "eventType", payload, status, attempts, "lastResponseStatus", "lastLatencyMs", "deliveredAt", "createdAt")
     SELECT "projectId", id, 'execution.failed', '{"type":"execution.failed","timestamp":"2026-12-07T10:00:00.000Z","data":{"executionId":"x"}}', $2::"WebhookStatus",
            CASE WHEN $2 = 'PENDING' THEN 0 ELSE 3 END, CASE WHEN $2 = 'DEAD' THEN 500 WHEN $2 = 'DELIVERED' THEN 200 END, 42,
            CASE WHEN $2 = 'DELIVERED' THEN now() END, $3
     FROM "WebhookEndpoint" WHERE id = $1 RETURNING id`,
    [endpointId, status, at],
  );
  return row!.id;
}

describe('endpoints: create, list, update, rotate, delete', () => {
  it('create answers the secret once; the list and every audit entry never show it', async () => {
    const created = await owner.webhooks.create({
      url: 'https://hooks.example.com/a',
      eventTypes: ['execution.stuck', 'workflow.published'],
      description: 'pager',
      stuckThreshold: 5,
      stuckIntervalSeconds: 600,
    });
    expect(created.secret).toMatch(SECRET);
    expect(created.endpoint).toMatchObject({
      url: 'https://hooks.example.com/a',
      description: 'pager',
      eventTypes: ['execution.stuck', 'workflow.published'],
      enabled: true,
      stuckThreshold: 5,
      stuckIntervalSeconds: 600,
      secretHint: created.secret.slice(-4),
      version: 1,
    });
    expect(created.endpoint.createdById).toMatch(/^user:/);
    const [stored] = await t.query<{ secret: string }>(`SELECT secret FROM "WebhookEndpoint" WHERE id = $1`, [created.endpoint.id]);
    expect(stored!.secret).toBe(created.secret);

    const list = await owner.webhooks.list();
    const listed = list.find((e) => e.id === created.endpoint.id)!;
    expect(listed).toMatchObject({ secretHint: created.secret.slice(-4), last24h: { delivered: 0, pending: 0, dead: 0 }, lastDelivery: null });
    expect(JSON.stringify(list)).not.toContain(created.secret);
    expect(JSON.stringify(list)).not.toMatch(/whsec_/);

    const rotated = await owner.webhooks.rotateSecret({ id: created.endpoint.id });
    expect(rotated.secret).toMatch(SECRET);
    expect(rotated.secret).not.toBe(created.secret);
    expect(rotated.endpoint.secretHint).toBe(rotated.secret.slice(-4));
    const [after] = await t.query<{ secret: string }>(`SELECT secret FROM "WebhookEndpoint" WHERE id = $1`, [created.endpoint.id]);
    expect(after!.secret).toBe(rotated.secret);

    const entries = await t.query<{ action: string; text: string }>(
      `SELECT action, concat_ws(' ', before::text, after::text, reason) AS text FROM "AuditEntry" WHERE "targetId" = $1 ORDER BY at`,
      [created.endpoint.id],
    );
    expect(entries.map((e) => e.action)).toEqual(['webhooks.create', 'webhooks.rotateSecret']);
    for (const entry of entries) {
      expect(entry.text).not.toContain(created.secret);
      expect(entry.text).not.toContain(rotated.secret);
      expect(entry.text).not.toMatch(/whsec_/);
    }
  });

  it('update changes what it is given (null clears the description), bumps the version and is audited with before and after', async () => {
    const { endpoint } = await owner.webhooks.create({ url: 'https://hooks.example.com/b', eventTypes: ['event.dead'], description: 'old' });
    const updated = await owner.webhooks.update({ id: endpoint.id, expectedVersion: endpoint.version, enabled: false, description: null, eventTypes: ['message.failed', 'repair.applied'] });
    expect(updated).toMatchObject({ url: 'https://hooks.example.com/b', enabled: false, description: null, eventTypes: ['message.failed', 'repair.applied'], version: endpoint.version + 1 });
    const again = await owner.webhooks.update({ id: endpoint.id, expectedVersion: updated.version, url: 'https://hooks.example.com/c' });
    expect(again).toMatchObject({ url: 'https://hooks.example.com/c', enabled: false, eventTypes: ['message.failed', 'repair.applied'], version: updated.version + 1 });
    const [entry] = await t.query<{ before: { enabled: boolean; description: string }; after: { enabled: boolean; description: null } }>(
      `SELECT before, after FROM "AuditEntry" WHERE "targetId" = $1 AND action = 'webhooks.update' AND outcome = 'APPLIED' ORDER BY at LIMIT 1`,
      [endpoint.id],
    );
    expect(entry).toMatchObject({ before: { enabled: true, description: 'old' }, after: { enabled: false, description: null } });
  });

  it('delete removes the endpoint and its log; a second delete is NOT_FOUND', async () => {
    const { endpoint } = await newEndpoint();
    await message(endpoint.id, 'DEAD');
    const deleted = await owner.webhooks.delete({ id: endpoint.id });
    expect(deleted.id).toBe(endpoint.id);
    expect(await t.query(`SELECT 1 FROM "WebhookMessage" WHERE "endpointId" = $1`, [endpoint.id])).toEqual([]);
    await expectCode(owner.webhooks.delete({ id: endpoint.id }), 'NOT_FOUND');
    await expectCode(owner.webhooks.deliveries({ endpointId: endpoint.id }), 'NOT_FOUND');
  });

  it('eventTypes lists every event type with its description', async () => {
    const types = await owner.webhooks.eventTypes();
    expect(types.map((e) => e.type)).toEqual([...WEBHOOK_EVENT_TYPES]);
    for (const type of types) expect(type.description.length).toBeGreaterThan(10);
  });
});

describe('who may', () => {
  it('OWNER only: MARKETER, OPERATOR and VIEWER are FORBIDDEN everywhere, and nothing changes', async () => {
    const { endpoint } = await newEndpoint();
    const messageId = await message(endpoint.id, 'DEAD');
    const before = await t.query(`SELECT e.*, m.status FROM "WebhookEndpoint" e LEFT JOIN "WebhookMessage" m ON m."endpointId" = e.id WHERE e.id = $1`, [endpoint.id]);
    for (const role of ['MARKETER', 'OPERATOR', 'VIEWER'] as Role[]) {
      const caller = callerFor(t.db, actorFor(projectId, role));
      const calls = [
        () => caller.webhooks.eventTypes(),
        () => caller.webhooks.list(),
        () => caller.webhooks.create({ url: 'https://hooks.example.com/x', eventTypes: ['event.dead'] }),
        () => caller.webhooks.update({ id: endpoint.id, expectedVersion: endpoint.version, enabled: false }),
        () => caller.webhooks.rotateSecret({ id: endpoint.id }),
        () => caller.webhooks.delete({ id: endpoint.id }),
        () => caller.webhooks.deliveries({ endpointId: endpoint.id }),
        () => caller.webhooks.delivery({ id: messageId }),
        () => caller.webhooks.redeliver({ id: messageId }),
        () => caller.webhooks.sendTest({ id: endpoint.id }),
      ];
      for (const call of calls) await expectCode(call(), 'FORBIDDEN');
    }
    await expectCode(callerFor(t.db, null).webhooks.list(), 'UNAUTHORIZED');
    expect(await t.query(`SELECT e.*, m.status FROM "WebhookEndpoint" e LEFT JOIN "WebhookMessage" m ON m."endpointId" = e.id WHERE e.id = $1`, [endpoint.id])).toEqual(before);
  });

  it("another project's endpoint and deliveries are NOT_FOUND, and stay as they were", async () => {
    const { endpoint } = await newEndpoint(otherOwner, 'https://other.example.com/hook');
    const messageId = await message(endpoint.id, 'DEAD');
    const snapshot = () => t.query(`SELECT e.*, m.status, m.attempts FROM "WebhookEndpoint" e LEFT JOIN "WebhookMessage" m ON m."endpointId" = e.id WHERE e.id = $1`, [endpoint.id]);
    const before = await snapshot();
    await expectCode(owner.webhooks.update({ id: endpoint.id, expectedVersion: endpoint.version, enabled: false }), 'NOT_FOUND');
    await expectCode(owner.webhooks.rotateSecret({ id: endpoint.id }), 'NOT_FOUND');
    await expectCode(owner.webhooks.delete({ id: endpoint.id }), 'NOT_FOUND');
    await expectCode(owner.webhooks.deliveries({ endpointId: endpoint.id }), 'NOT_FOUND');
    await expectCode(owner.webhooks.delivery({ id: messageId }), 'NOT_FOUND');
    await expectCode(owner.webhooks.redeliver({ id: messageId }), 'NOT_FOUND');
    await expectCode(owner.webhooks.sendTest({ id: endpoint.id }), 'NOT_FOUND');
    expect((await owner.webhooks.list()).map((e) => e.id)).not.toContain(endpoint.id);
    expect(await snapshot()).toEqual(before);
    // The refusals are audited in the caller's project, never as a change.
    const entries = await t.query<{ projectId: string; outcome: string }>(`SELECT "projectId", outcome::text FROM "AuditEntry" WHERE "targetId" IN ($1, $2)`, [endpoint.id, messageId]);
    expect(entries.filter((e) => e.outcome !== 'APPLIED' && e.projectId === projectId).length).toBe(5);
    expect(entries.filter((e) => e.projectId === projectId && e.outcome === 'APPLIED')).toEqual([]);
  });
});

describe('URLs', () => {
  const refused = [
    'http://127.0.0.1/hook',
    'https://127.0.0.1/hook',
    'https://10.1.2.3/hook',
    'https://172.16.0.9/hook',
    'https://192.168.1.20:8443/hook',
    'https://169.254.169.254/latest/meta-data/',
    'https://[::1]/hook',
    'https://[fe80::1]/hook',
    'https://[::ffff:127.0.0.1]/hook',
    'https://0.0.0.0/hook',
    'https://localhost/hook',
    'http://hooks.example.com/plain-http',
    'ftp://hooks.example.com/',
    'not a url',
  ];
  it.each(refused)('%s is refused with BAD_REQUEST at the url field, and nothing is written', async (url) => {
    const before = await t.query(`SELECT count(*)::int AS n FROM "WebhookEndpoint"`);
    const error = await expectCode(owner.webhooks.create({ url, eventTypes: ['event.dead'] }), 'BAD_REQUEST');
    const shape = (error as unknown as { cause?: { issues?: { path: PropertyKey[] }[] } }).cause;
    expect(shape?.issues?.[0]?.path).toEqual(['url']);
    expect(await t.query(`SELECT count(*)::int AS n FROM "WebhookEndpoint"`)).toEqual(before);
  });

  it('an update to a refused URL changes nothing', async () => {
    const { endpoint } = await newEndpoint();
    await expectCode(owner.webhooks.update({ id: endpoint.id, expectedVersion: endpoint.version, url: 'https://169.254.169.254/' }), 'BAD_REQUEST');
    const [row] = await t.query<{ url: string; version: number }>(`SELECT url, version FROM "WebhookEndpoint" WHERE id = $1`, [endpoint.id]);
    expect(row).toEqual({ url: endpoint.url, version: endpoint.version });
  });

  it('bad event types and settings are BAD_REQUEST', async () => {
    await expectCode(owner.webhooks.create({ url: 'https://hooks.example.com/', eventTypes: [] }), 'BAD_REQUEST');
    await expectCode(owner.webhooks.create({ url: 'https://hooks.example.com/', eventTypes: ['nope' as never] }), 'BAD_REQUEST');
    await expectCode(owner.webhooks.create({ url: 'https://hooks.example.com/', eventTypes: ['event.dead', 'event.dead'] }), 'BAD_REQUEST');
    await expectCode(owner.webhooks.create({ url: 'https://hooks.example.com/', eventTypes: ['execution.stuck'], stuckThreshold: 0 }), 'BAD_REQUEST');
    await expectCode(owner.webhooks.create({ url: 'https://hooks.example.com/', eventTypes: ['execution.stuck'], stuckIntervalSeconds: 1 }), 'BAD_REQUEST');
  });
});

describe('the compare-and-swaps under real concurrency', () => {
  it(`two owners updating from the same version: exactly one wins, the other is CONFLICT STALE_VERSION (${RACE_ROUNDS} rounds)`, async () => {
    const { endpoint } = await newEndpoint();
    let version = endpoint.version;
    for (let round = 0; round < RACE_ROUNDS; round++) {
      const results = await race.race((db, i) =>
        callerFor(db, actorFor(projectId, 'OWNER')).webhooks.update({ id: endpoint.id, expectedVersion: version, description: `owner ${i} round ${round}` }).then(
          (e) => ({ won: true as const, e }),
          (error: { code: string; cause?: { conflict?: { reason: string; currentVersion: number } } }) => ({ won: false as const, error }),
        ),
      );
      const outcomes = fulfilled(results);
      const winners = outcomes.filter((o) => o.won);
      const losers = outcomes.filter((o) => !o.won);
      expect(winners.length, `round ${round}`).toBe(1);
      expect(losers[0]!.error.code).toBe('CONFLICT');
      expect(losers[0]!.error.cause?.conflict).toEqual({ reason: 'STALE_VERSION', currentVersion: version + 1 });
      const [row] = await t.query<{ version: number; description: string }>(`SELECT version, description FROM "WebhookEndpoint" WHERE id = $1`, [endpoint.id]);
      expect(row!.version).toBe(version + 1);
      expect(row!.description).toBe(winners[0]!.e.description);
      version = row!.version;
    }
    const audits = await t.query<{ outcome: string; n: number }>(
      `SELECT outcome::text, count(*)::int AS n FROM "AuditEntry" WHERE "targetId" = $1 AND action = 'webhooks.update' GROUP BY outcome ORDER BY outcome`,
      [endpoint.id],
    );
    expect(audits).toEqual([
      { outcome: 'APPLIED', n: RACE_ROUNDS },
      { outcome: 'LOST', n: RACE_ROUNDS },
    ]);
  });

  it(`two owners redelivering one dead message: exactly one wins, the other is CONFLICT ALREADY_PENDING (${RACE_ROUNDS} rounds)`, async () => {
    const { endpoint } = await newEndpoint();
    for (let round = 0; round < RACE_ROUNDS; round++) {
      const id = await message(endpoint.id, round % 2 === 0 ? 'DEAD' : 'DELIVERED');
      const outcomes = fulfilled(
        await race.race((db) =>
          callerFor(db, actorFor(projectId, 'OWNER')).webhooks.redeliver({ id }).then(
            (d) => ({ won: true as const, d }),
            (error: { code: string; cause?: { conflict?: { reason: string } } }) => ({ won: false as const, error }),
          ),
        ),
      );
      expect(outcomes.filter((o) => o.won).length, `round ${round}`).toBe(1);
      const loser = outcomes.find((o) => !o.won)!;
      expect(loser.error.code).toBe('CONFLICT');
      expect(loser.error.cause?.conflict?.reason).toBe('ALREADY_PENDING');
      const [row] = await t.query(`SELECT status::text, attempts, "deliveredAt", "nextAttemptAt" <= now() AS due FROM "WebhookMessage" WHERE id = $1`, [id]);
      expect(row).toEqual({ status: 'PENDING', attempts: 0, deliveredAt: null, due: true });
      const winner = outcomes.find((o) => o.won)!;
      // The same message, so the same webhook-id: a receiver that saw it dedupes.
      expect(winner.d.webhookId).toBe(`msg_${id.replace(/-/g, '')}`);
    }
  });

  it('a pending message is not redelivered (CONFLICT ALREADY_PENDING), and nothing changes', async () => {
    const { endpoint } = await newEndpoint();
    const id = await message(endpoint.id, 'PENDING');
    const before = await t.query(`SELECT * FROM "WebhookMessage" WHERE id = $1`, [id]);
    const error = await expectCode(owner.webhooks.redeliver({ id }), 'CONFLICT');
    expect((error.cause as { conflict?: { reason: string } }).conflict?.reason).toBe('ALREADY_PENDING');
    expect(await t.query(`SELECT * FROM "WebhookMessage" WHERE id = $1`, [id])).toEqual(before);
  });
});

describe('the delivery log', () => {
  it('pages newest first by keyset, filters by status, and counts the last 24 hours', async () => {
    const { endpoint } = await newEndpoint();
    const base = Date.now() - 60_000;
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push(await message(endpoint.id, i % 3 === 0 ? 'DEAD' : 'DELIVERED', new Date(base + i * 1000)));
    await message(endpoint.id, 'DELIVERED', new Date(Date.now() - 2 * 86_400_000));
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await owner.webhooks.deliveries({ endpointId: endpoint.id, limit: 3, ...(cursor ? { cursor } : {}) });
      seen.push(...page.items.map((d) => d.id));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    expect(seen.slice(0, 7)).toEqual([...ids].reverse());
    expect(seen).toHaveLength(8);
    const dead = await owner.webhooks.deliveries({ endpointId: endpoint.id, status: 'DEAD' });
    expect(dead.items.map((d) => d.id)).toEqual([ids[6], ids[3], ids[0]]);
    const listed = (await owner.webhooks.list()).find((e) => e.id === endpoint.id)!;
    expect(listed.last24h).toEqual({ delivered: 4, pending: 0, dead: 3 });
    expect(listed.lastDelivery).toMatchObject({ messageId: ids[6], status: 'DEAD', responseStatus: 500 });
  });

  it('a delivery answers its payload and attempts oldest first', async () => {
    const { endpoint } = await newEndpoint();
    const id = await message(endpoint.id, 'DEAD');
    await t.query(
      `INSERT INTO "WebhookAttempt" ("messageId", at, "responseStatus", "latencyMs", "responseExcerpt", error, dispatcher)
       VALUES ($1, now() - interval '2 minutes', 503, 120, 'busy', NULL, 'worker-1'), ($1, now() - interval '1 minute', NULL, 10000, NULL, 'timeout after 10000 ms', 'worker-2')`,
      [id],
    );
    const delivery = await owner.webhooks.delivery({ id });
    expect(delivery).toMatchObject({ id, status: 'DEAD', eventType: 'execution.failed', endpointUrl: endpoint.url, payload: { type: 'execution.failed', data: { executionId: 'x' } } });
    expect(delivery.attemptLog.map((a) => [a.responseStatus, a.responseExcerpt, a.error, a.dispatcher])).toEqual([
      [503, 'busy', null, 'worker-1'],
      [null, null, 'timeout after 10000 ms', 'worker-2'],
    ]);
    expect(delivery.attemptLog[0]!.at).toBeInstanceOf(Date);
  });

  it('sendTest queues one webhook.test message to that endpoint; a disabled endpoint is PRECONDITION_FAILED', async () => {
    const { endpoint } = await newEndpoint();
    const queued = await owner.webhooks.sendTest({ id: endpoint.id });
    expect(queued).toMatchObject({ endpointId: endpoint.id, eventType: 'webhook.test', status: 'PENDING', attempts: 0 });
    const [row] = await t.query<{ payload: { type: string; timestamp: string; data: { endpointId: string } } }>(`SELECT payload FROM "WebhookMessage" WHERE id = $1`, [queued.id]);
    expect(row!.payload).toMatchObject({ type: 'webhook.test', data: { endpointId: endpoint.id } });
    expect(new Date(row!.payload.timestamp).toISOString()).toBe(row!.payload.timestamp);
    const disabled = await owner.webhooks.update({ id: endpoint.id, expectedVersion: endpoint.version, enabled: false });
    await expectCode(owner.webhooks.sendTest({ id: disabled.id }), 'PRECONDITION_FAILED');
    expect(await t.query(`SELECT count(*)::int AS n FROM "WebhookMessage" WHERE "endpointId" = $1`, [endpoint.id])).toEqual([{ n: 1 }]);
  });
});
