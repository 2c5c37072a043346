import { hostname } from 'node:os';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { webhookIdOf } from '../../server/common/webhook-events';
import { refusedWebhookUrl } from '../../server/webhooks/address-policy';
import { claimWebhookMessages, recordWebhookAttempt } from '../../server/webhooks/dispatcher';
import { freshDatabase, type TestDatabase } from '../support/database';
import { waitFor } from '../support/processes';
import { createProject } from '../support/fixtures';
import { createTestEndpoint, dispatchAllDue, dispatcherFor, startReceiver, type Receiver } from './receiver';

// Delivery (docs/webhooks.md): retries on the configured schedule and DEAD after the last,
// every attempt in the log; the address policy refuses loopback, private, link-local and
// metadata addresses, a name that resolves to one (judged at connect time), and never
// follows a redirect, unless the host is in the allow-list; a timeout bounds each attempt;
// the outcome is recorded only under the dispatcher's own lease.

let t: TestDatabase;
let receiver: Receiver;
let projectId: string;
let serial = 0;

beforeAll(async () => {
  t = await freshDatabase();
  receiver = await startReceiver();
  projectId = (await createProject(t.db)).id;
});
afterAll(async () => {
  await receiver?.close();
  await t?.drop();
});
beforeEach(() => {
  receiver.answer = () => ({ status: 200 });
});

/** An endpoint at `url` and one message to it, as the triggers write them. */
async function messageTo(url: string, secret = 'whsec_' + Buffer.alloc(24, 7).toString('base64')): Promise<{ endpointId: string; messageId: string }> {
  const endpointId = await createTestEndpoint(t.db, projectId, { url, secret, eventTypes: ['execution.failed'] });
  const m = await t.db.webhookMessage.create({
    data: {
      projectId,
      endpointId,
      eventType: 'execution.failed',
      payload: { type: 'execution.failed', timestamp: new Date().toISOString(), data: { executionId: `e${++serial}` } },
    },
  });
  return { endpointId, messageId: m.id };
}

const message = (id: string) => t.db.webhookMessage.findUniqueOrThrow({ where: { id } });
const attempts = (messageId: string) => t.db.webhookAttempt.findMany({ where: { messageId }, orderBy: { at: 'asc' } });

describe('retries', () => {
  it('a receiver answering 500 is retried on the schedule, then the message is DEAD, every attempt logged', async () => {
    receiver.answer = () => ({ status: 500 });
    const { url, secret } = receiver.endpoint('/retry/500');
    const { messageId } = await messageTo(url, secret);
    const opts = dispatcherFor({ retrySchedule: [1, 2] });
    expect(await dispatchAllDue(t.db, opts)).toBe(1);
    let m = await message(messageId);
    expect(m).toMatchObject({ status: 'PENDING', attempts: 1, lastResponseStatus: 500, lastError: 'answered 500', leaseOwner: null });
    const firstDelay = m.nextAttemptAt.getTime() - Date.now();
    expect(firstDelay).toBeGreaterThan(0);
    expect(firstDelay).toBeLessThanOrEqual(1000);
    // Not due yet: nothing claimed.
    expect(await dispatchAllDue(t.db, opts)).toBe(0);
    await waitFor('the second attempt', async () => (await dispatchAllDue(t.db, opts)) > 0, 5000);
    m = await message(messageId);
    expect(m).toMatchObject({ status: 'PENDING', attempts: 2 });
    expect(m.nextAttemptAt.getTime() - Date.now()).toBeGreaterThan(1000);
    await waitFor('the third attempt', async () => (await dispatchAllDue(t.db, opts)) > 0, 5000);
    m = await message(messageId);
    expect(m).toMatchObject({ status: 'DEAD', attempts: 3, lastResponseStatus: 500, deliveredAt: null });
    // Dead: never claimed again.
    await new Promise((r) => setTimeout(r, 1100));
    expect(await dispatchAllDue(t.db, opts)).toBe(0);
    const log = await attempts(messageId);
    expect(log.map((a) => [a.responseStatus, a.responseExcerpt, a.error, a.dispatcher])).toEqual(
      Array(3).fill([500, 'answer 500', 'answered 500', opts.owner]),
    );
    // The schedule's spacing: >= 1 s, then >= 2 s.
    expect(log[1]!.at.getTime() - log[0]!.at.getTime()).toBeGreaterThanOrEqual(950);
    expect(log[2]!.at.getTime() - log[1]!.at.getTime()).toBeGreaterThanOrEqual(1950);
    // Every attempt carried the same webhook-id, each freshly signed.
    const got = receiver.deliveries.filter((d) => d.path === '/retry/500');
    expect(got.map((d) => d.webhookId)).toEqual(Array(3).fill(webhookIdOf(messageId)));
  });

  it('a receiver that recovers gets the message on a retry: DELIVERED, with both attempts logged', async () => {
    let calls = 0;
    receiver.answer = (d) => (d.path === '/retry/recovers' && ++calls === 1 ? { status: 503 } : { status: 204 });
    const { url, secret } = receiver.endpoint('/retry/recovers');
    const { messageId } = await messageTo(url, secret);
    const opts = dispatcherFor({ retrySchedule: [1] });
    await dispatchAllDue(t.db, opts);
    await waitFor('the retry', async () => (await dispatchAllDue(t.db, opts)) > 0, 5000);
    expect(await message(messageId)).toMatchObject({ status: 'DELIVERED', attempts: 2, lastResponseStatus: 204, lastError: null });
    expect((await attempts(messageId)).map((a) => a.responseStatus)).toEqual([503, 204]);
  });

  it('a receiver slower than the timeout is a failed attempt, bounded by the timeout', async () => {
    receiver.answer = () => ({ sleepMs: 3000 });
    const { url, secret } = receiver.endpoint('/slow');
    const { messageId } = await messageTo(url, secret);
    const started = Date.now();
    await dispatchAllDue(t.db, dispatcherFor({ timeoutMs: 500, retrySchedule: [] }));
    expect(Date.now() - started).toBeLessThan(2000);
    const [a] = await attempts(messageId);
    expect(a).toMatchObject({ responseStatus: null, error: 'timed out after 500 ms' });
    expect(a!.latencyMs).toBeGreaterThanOrEqual(450);
  });

  it("the outcome is recorded only under the dispatcher's own lease", async () => {
    const { url, secret } = receiver.endpoint('/lease');
    const { messageId } = await messageTo(url, secret);
    const claimed = await claimWebhookMessages(t.db, { owner: 'dispatcher-a', limit: 100, leaseSeconds: 30 });
    expect(claimed.map((m) => m.id)).toEqual([messageId]);
    // A claimed message is not claimed again while its lease holds.
    expect(await claimWebhookMessages(t.db, { owner: 'dispatcher-b', limit: 100, leaseSeconds: 30 })).toEqual([]);
    const outcome = { ok: true, status: 200, latencyMs: 5, excerpt: 'ok', error: null };
    expect(await recordWebhookAttempt(t.db, { messageId, owner: 'dispatcher-b', outcome, retrySchedule: [1] })).toBe(false);
    expect(await message(messageId)).toMatchObject({ status: 'PENDING', attempts: 0, leaseOwner: 'dispatcher-a' });
    // The lease runs out; b claims it; a's late answer changes nothing.
    await t.query(`UPDATE "WebhookMessage" SET "leaseExpiresAt" = now() - interval '1 second' WHERE id = $1`, [messageId]);
    expect((await claimWebhookMessages(t.db, { owner: 'dispatcher-b', limit: 100, leaseSeconds: 30 })).map((m) => m.id)).toEqual([messageId]);
    expect(await recordWebhookAttempt(t.db, { messageId, owner: 'dispatcher-a', outcome: { ...outcome, ok: false, status: 500 }, retrySchedule: [] })).toBe(false);
    expect(await message(messageId)).toMatchObject({ status: 'PENDING', leaseOwner: 'dispatcher-b' });
    expect(await recordWebhookAttempt(t.db, { messageId, owner: 'dispatcher-b', outcome, retrySchedule: [1] })).toBe(true);
    expect(await message(messageId)).toMatchObject({ status: 'DELIVERED', attempts: 1, leaseOwner: null });
    // Every attempt reported was made (the receiver saw it), so each is logged, counted or not.
    expect((await attempts(messageId)).map((a) => a.dispatcher).sort()).toEqual(['dispatcher-a', 'dispatcher-b', 'dispatcher-b']);
  });
});

describe('dispatchers at once', () => {
  const rounds = Number(process.env.RACE_ROUNDS ?? 5);
  it(`share the queue: each message claimed and delivered once (${rounds} rounds, 4 dispatchers, 12 messages)`, async () => {
    for (let round = 0; round < rounds; round++) {
      const path = `/race/${round}`;
      const { url, secret } = receiver.endpoint(path);
      const ids: string[] = [];
      for (let i = 0; i < 12; i++) ids.push((await messageTo(url, secret)).messageId);
      await Promise.all([1, 2, 3, 4].map((n) => dispatchAllDue(t.db, dispatcherFor({ owner: `racer-${n}`, concurrency: 3 }))));
      const got = receiver.deliveries.filter((d) => d.path === path).map((d) => d.webhookId).sort();
      expect(got, `round ${round}`).toEqual(ids.map(webhookIdOf).sort());
      const log = await t.db.webhookAttempt.findMany({ where: { messageId: { in: ids } } });
      expect(log).toHaveLength(12);
      expect(await t.db.webhookMessage.count({ where: { id: { in: ids }, status: 'DELIVERED', attempts: 1 } })).toBe(12);
    }
  });
});

describe('the address policy', () => {
  const refusedTargets = () => [
    `http://127.0.0.1:${receiver.port}/ssrf`,
    `https://127.0.0.1:${receiver.port}/ssrf`,
    `https://10.1.2.3:${receiver.port}/ssrf`,
    `https://169.254.169.254/latest/meta-data/`,
    `https://[::1]:${receiver.port}/ssrf`,
    `https://[::ffff:127.0.0.1]:${receiver.port}/ssrf`,
    `http://localhost:${receiver.port}/ssrf`,
    `https://localhost:${receiver.port}/ssrf`,
  ];

  it('refuses loopback, private, link-local and metadata addresses up front, and http://', () => {
    for (const url of refusedTargets()) expect(refusedWebhookUrl(url, []), url).not.toBeNull();
    expect(refusedWebhookUrl('https://hooks.example.com/waypost', [])).toBeNull();
    expect(refusedWebhookUrl('http://hooks.example.com/waypost', [])).toMatch(/https/);
    expect(refusedWebhookUrl('https://localhost./x', [])).not.toBeNull();
    expect(refusedWebhookUrl(`http://127.0.0.1:${receiver.port}/x`, ['127.0.0.1'])).toBeNull();
  });

  it('without the allow-list no delivery reaches the receiver: every such endpoint fails its attempt', async () => {
    const before = receiver.requests;
    const ids: string[] = [];
    for (const url of refusedTargets()) ids.push((await messageTo(url)).messageId);
    await dispatchAllDue(t.db, dispatcherFor({ allowedHosts: [], retrySchedule: [] }));
    expect(receiver.requests).toBe(before);
    for (const id of ids) {
      const m = await message(id);
      expect(m.status, m.lastError ?? '').toBe('DEAD');
      expect(m.lastError).toMatch(/refused by the address policy/);
    }
  });

  it('a name that resolves to 127.0.0.1 is refused at connect time, by the address DNS answered', async () => {
    const name = hostname(); // in /etc/hosts as 127.0.0.1 here; not a literal address, not "localhost"
    const url = `https://${name}:${receiver.port}/ssrf-dns`;
    expect(refusedWebhookUrl(url, [])).toBeNull();
    const before = receiver.requests;
    const { messageId } = await messageTo(url);
    await dispatchAllDue(t.db, dispatcherFor({ allowedHosts: [], retrySchedule: [] }));
    expect(receiver.requests).toBe(before);
    const m = await message(messageId);
    expect(m.status).toBe('DEAD');
    expect(m.lastError).toMatch(/is not allowed/);
  });

  it('a redirect is never followed: a 3xx is a failed attempt, and its target is never called', async () => {
    receiver.answer = (d) => (d.path === '/redirect' ? { status: 302, location: `http://localhost:${receiver.port}/target` } : { status: 200 });
    const { url, secret } = receiver.endpoint('/redirect');
    receiver.endpoint('/target');
    const { messageId } = await messageTo(url, secret);
    await dispatchAllDue(t.db, dispatcherFor({ allowedHosts: ['127.0.0.1'], retrySchedule: [] }));
    const m = await message(messageId);
    expect(m).toMatchObject({ status: 'DEAD', lastResponseStatus: 302 });
    expect(m.lastError).toMatch(/redirect, not followed/);
    expect(receiver.deliveries.filter((d) => d.path === '/target')).toEqual([]);
  });

  it('with the host in the allow-list, the same addresses are delivered to', async () => {
    const name = hostname();
    const cases = [
      { url: receiver.endpoint('/allowed/ip').url, secret: receiver.endpoint('/allowed/ip').secret, allowed: '127.0.0.1' },
      { ...receiver.endpoint('/allowed/localhost', 'localhost'), allowed: 'localhost' },
      { ...receiver.endpoint('/allowed/name', name), allowed: name },
    ];
    const ids: string[] = [];
    for (const c of cases) ids.push((await messageTo(c.url, c.secret)).messageId);
    await dispatchAllDue(t.db, dispatcherFor({ allowedHosts: cases.map((c) => c.allowed), retrySchedule: [] }));
    for (const id of ids) expect((await message(id)).status).toBe('DELIVERED');
    expect(receiver.deliveries.filter((d) => d.path.startsWith('/allowed/')).map((d) => d.path).sort()).toEqual(
      ['/allowed/ip', '/allowed/localhost', '/allowed/name'],
    );
  });
});
