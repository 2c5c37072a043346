import { randomUUID } from 'node:crypto';
import createClient, { type Middleware } from 'openapi-fetch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedDemo } from '../../prisma/seed';
import { generateApiKey } from '../../server/auth/api-keys';
import type { Role } from '../../server/common/roles';
import { freshDatabase, type TestDatabase } from '../support/database';
import { committedRestTypes, restTypesOf, REST_TYPES_FILE } from '../support/rest-types';
import { startWebServer, type WebServer } from '../support/web-server';
import type { paths } from './generated/rest-api';
import { writeFileSync } from 'node:fs';

// /api/v1 as an integration in any language meets it: a client generated from the live
// OpenAPI document (openapi-typescript's types, openapi-fetch's calls), never hand-written
// fetches, against the product's web server on a fresh database with the demo seed. Every
// operation of the document is driven here (the last test fails on one that is not).

let t: TestDatabase;
let server: WebServer | undefined;
let projectId = '';
let welcomeId = '';
const keys = {} as Record<Role, string>;
const driven = new Set<string>();
let document: { paths: Record<string, Record<string, { operationId: string }>> };

const recordOperations: Middleware = {
  onRequest({ schemaPath, request }) {
    driven.add(`${request.method.toLowerCase()} ${schemaPath}`);
  },
};

function client(key: string | null = keys.MARKETER) {
  const c = createClient<paths>({ baseUrl: `${server!.base}/api/v1`, headers: key ? { authorization: `Bearer ${key}` } : {} });
  c.use(recordOperations);
  return c;
}

beforeAll(async () => {
  t = await freshDatabase();
  await seedDemo(t.db);
  const demo = await t.db.project.findUniqueOrThrow({ where: { name: 'demo' } });
  projectId = demo.id;
  welcomeId = (await t.db.workflow.findFirstOrThrow({ where: { projectId, name: 'Welcome series' } })).id;
  for (const role of ['VIEWER', 'MARKETER', 'OPERATOR', 'OWNER'] as const) {
    const key = generateApiKey();
    await t.db.apiKey.create({ data: { projectId, name: `rest client ${role}`, role, prefix: key.prefix, hashedSecret: key.hashedSecret } });
    keys[role] = key.secret;
  }
  server = await startWebServer(t.url, { RATE_LIMIT_PER_KEY: '0', RATE_LIMIT_PER_ADDRESS: '0', RATE_LIMIT_PER_SESSION: '0' });
  document = (await (await fetch(`${server.base}/api/v1/openapi.json`)).json()) as typeof document;
}, 900_000);

afterAll(async () => {
  await server?.stop();
  await t?.drop();
});

const email = (label: string) => `${label}-${randomUUID().slice(0, 8)}@example.com`;

/** A problem details answer: its media type and the fields every one carries. */
function expectProblem(response: Response, error: unknown, status: number, type: string) {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(error).toMatchObject({ type, status, title: expect.any(String), detail: expect.any(String), code: expect.any(String) });
}

describe('the generated client', () => {
  it('the committed types are what openapi-typescript makes of the live document', async () => {
    const fresh = await restTypesOf(document);
    if (process.env.UPDATE_REST_TYPES === '1') writeFileSync(REST_TYPES_FILE, fresh);
    expect(committedRestTypes(), 'regenerate with UPDATE_REST_TYPES=1 npx vitest run test/api/rest-client.test.ts').toBe(fresh);
  });
});

describe('contacts', () => {
  it('upsert creates then merges; get by id and by email; bad email 400 with issues; a bad key 401; unknown 404', async () => {
    const api = client();
    const address = email('ada');
    const created = await api.POST('/contacts', { body: { email: address, data: { plan: 'pro' } } });
    expect(created.response.status).toBe(200);
    expect(created.data).toMatchObject({ email: address, data: { plan: 'pro' }, created: true });
    const merged = await api.POST('/contacts', { body: { email: address.toUpperCase(), data: { firstName: 'Ada' } } });
    expect(merged.data).toMatchObject({ id: created.data!.id, data: { plan: 'pro', firstName: 'Ada' }, created: false });

    const byId = await client(keys.VIEWER).GET('/contacts/{id}', { params: { path: { id: created.data!.id } } });
    expect(byId.data).toMatchObject({ id: created.data!.id, email: address, data: { plan: 'pro', firstName: 'Ada' } });
    const byEmail = await client(keys.VIEWER).GET('/contacts/by-email/{email}', { params: { path: { email: address.toUpperCase() } } });
    expect(byEmail.data?.id).toBe(created.data!.id);

    const bad = await api.POST('/contacts', { body: { email: 'not an email' } });
    expectProblem(bad.response, bad.error, 400, '/problems/invalid-request');
    expect(bad.error!.issues!.map((i) => i.path)).toEqual(['email']);
    const noKey = await client(`wp_${'x'.repeat(40)}`).GET('/contacts/{id}', { params: { path: { id: created.data!.id } } });
    expectProblem(noKey.response, noKey.error, 401, '/problems/unauthorized');
    const unknown = await api.GET('/contacts/{id}', { params: { path: { id: randomUUID() } } });
    expectProblem(unknown.response, unknown.error, 404, '/problems/not-found');
    const noEmail = await api.GET('/contacts/by-email/{email}', { params: { path: { email: email('nobody') } } });
    expectProblem(noEmail.response, noEmail.error, 404, '/problems/not-found');
    const viewerWrites = await client(keys.VIEWER).POST('/contacts', { body: { email: email('viewer') } });
    expectProblem(viewerWrites.response, viewerWrites.error, 403, '/problems/forbidden');
  });

  it('lists with filters, paging through `next` (also the Link header) until null, each contact once', async () => {
    const api = client();
    const tag = `paging-${randomUUID().slice(0, 8)}`;
    const made = new Set<string>();
    for (let i = 0; i < 5; i++) made.add((await api.POST('/contacts', { body: { email: email(tag), data: { batch: tag } } })).data!.id);
    const seen: string[] = [];
    let query: Record<string, string> | null = { dataKey: 'batch', dataValue: tag, limit: '2' };
    let pages = 0;
    while (query) {
      const page = await api.GET('/contacts', { params: { query: { dataKey: query.dataKey, dataValue: query.dataValue, limit: Number(query.limit), cursor: query.cursor } } });
      expect(page.response.status).toBe(200);
      seen.push(...page.data!.items.map((c: { id: string }) => c.id));
      pages++;
      const next: string | null = page.data!.next;
      expect(page.response.headers.get('link')).toBe(next ? `<${next}>; rel="next"` : null);
      if (!next) break;
      const url: URL = new URL(next, server!.base);
      expect(url.pathname).toBe('/api/v1/contacts');
      query = Object.fromEntries(url.searchParams);
      expect(query).toMatchObject({ dataKey: 'batch', dataValue: tag, limit: '2', cursor: expect.any(String) });
    }
    expect(pages).toBe(3);
    expect(new Set(seen)).toEqual(made);
    expect(seen).toHaveLength(5);
    const searched = await api.GET('/contacts', { params: { query: { search: tag.toUpperCase(), limit: 50 } } });
    expect(searched.data!.items).toHaveLength(5);
    const half = await api.GET('/contacts', { params: { query: { dataKey: 'batch' } } });
    expectProblem(half.response, half.error, 400, '/problems/invalid-request');
  });

  it("update replaces the data; a stale expectedUpdatedAt is 409 CONTACT_CHANGED with the current contact, nothing saved", async () => {
    const api = client();
    const contact = (await api.POST('/contacts', { body: { email: email('update'), data: { a: 1 } } })).data!;
    const read = (await api.GET('/contacts/{id}', { params: { path: { id: contact.id } } })).data!;
    const updated = await api.PATCH('/contacts/{id}', { params: { path: { id: contact.id } }, body: { data: { b: 2 }, expectedUpdatedAt: read.updatedAt } });
    expect(updated.data).toMatchObject({ id: contact.id, data: { b: 2 } });
    const stale = await api.PATCH('/contacts/{id}', { params: { path: { id: contact.id } }, body: { data: { c: 3 }, expectedUpdatedAt: read.updatedAt } });
    expectProblem(stale.response, stale.error, 409, '/problems/conflict');
    expect(stale.error!.conflict).toMatchObject({ reason: 'CONTACT_CHANGED', data: { b: 2 } });
    const missing = await api.PATCH('/contacts/{id}', { params: { path: { id: randomUUID() } }, body: { data: {} } });
    expectProblem(missing.response, missing.error, 404, '/problems/not-found');
  });

  it('erase: email and data replaced, the active execution cancelled, events and emails scrubbed, audited; again the same answer', async () => {
    const api = client();
    const address = email('erase');
    const contact = (await api.POST('/contacts', { body: { email: address, data: { phone: '+33 1 23 45 67 89' } } })).data!;
    const { executionId } = (await api.POST('/enrollments', { body: { workflowId: welcomeId, contactId: contact.id, context: { coupon: 'ADA-10' } } })).data!;
    await api.POST('/events', { body: { name: 'purchase', contactId: contact.id, data: { card: '4242' } } });

    const erased = await api.DELETE('/contacts/{id}', { params: { path: { id: contact.id } } });
    expect(erased.response.status).toBe(200);
    expect(erased.data).toMatchObject({ id: contact.id, email: `erased-${contact.id}@erased.invalid` });
    const [row] = await t.query<{ email: string; data: unknown; erasedAt: Date | null }>(`SELECT email, data, "erasedAt" FROM "Contact" WHERE id = $1`, [contact.id]);
    expect(row).toMatchObject({ email: `erased-${contact.id}@erased.invalid`, data: {}, erasedAt: expect.any(Date) });
    const [execution] = await t.query<{ status: string; context: unknown }>(`SELECT status, context FROM "WorkflowExecution" WHERE id = $1`, [executionId]);
    expect(execution).toEqual({ status: 'CANCELLED', context: {} });
    expect(await t.query(`SELECT data FROM "Event" WHERE "contactId" = $1`, [contact.id])).toEqual([{ data: {} }]);
    const personal = await t.query(`SELECT id FROM "AuditEntry" WHERE before::text LIKE $1 OR after::text LIKE $1 OR before::text LIKE '%23 45%' OR after::text LIKE '%23 45%'`, [`%${address}%`]);
    expect(personal).toEqual([]);
    const entries = await t.query<{ action: string; targetType: string }>(`SELECT action, "targetType" FROM "AuditEntry" WHERE action = 'contacts.erase' AND ("targetId" = $1 OR "targetId" = $2) ORDER BY "targetType"`, [contact.id, executionId]);
    expect(entries).toEqual([{ action: 'contacts.erase', targetType: 'contact' }, { action: 'contacts.erase', targetType: 'execution' }]);

    const again = await api.DELETE('/contacts/{id}', { params: { path: { id: contact.id } } });
    expect(again.data).toEqual(erased.data);
    expect(await t.query(`SELECT 1 FROM "AuditEntry" WHERE action = 'contacts.erase' AND "targetId" = $1`, [contact.id])).toHaveLength(1);
    const gone = await api.GET('/contacts/by-email/{email}', { params: { path: { email: address } } });
    expectProblem(gone.response, gone.error, 404, '/problems/not-found');
    // An erased contact is no one: enrolling it by its id finds no contact.
    const reenrolled = await api.POST('/enrollments', { body: { workflowId: welcomeId, contactId: contact.id } });
    expectProblem(reenrolled.response, reenrolled.error, 404, '/problems/not-found');
    const unknown = await api.DELETE('/contacts/{id}', { params: { path: { id: randomUUID() } } });
    expectProblem(unknown.response, unknown.error, 404, '/problems/not-found');
  });
});

describe('events and enrollments', () => {
  it('one enrollment 200, a duplicate 409 ACTIVE_EXECUTION; a batch answers each row as enrollMany does', async () => {
    const api = client();
    const address = email('enroll');
    const first = await api.POST('/enrollments', { body: { workflowId: welcomeId, email: address } });
    expect(first.response.status).toBe(200);
    const duplicate = await api.POST('/enrollments', { body: { workflowId: welcomeId, email: address } });
    expectProblem(duplicate.response, duplicate.error, 409, '/problems/conflict');
    expect(duplicate.error!.conflict).toEqual({ reason: 'ACTIVE_EXECUTION', executionId: first.data!.executionId });

    const fresh = email('batch');
    const batch = await api.POST('/enrollments/batch', { body: { workflowId: welcomeId, contacts: [{ email: fresh, data: { plan: 'pro' } }, { email: 'nope' }, { email: address }] } });
    expect(batch.response.status).toBe(200);
    expect(batch.data!.results).toMatchObject([
      { row: 1, email: fresh, executionId: expect.any(String) },
      { row: 2, error: { reason: 'INVALID' } },
      { row: 3, email: address, error: { reason: 'ACTIVE_EXECUTION', executionId: first.data!.executionId } },
    ]);
    expect(batch.data!.summary).toMatchObject({ rows: 3, enrolled: 1, failed: 2 });
    const tooMany = await api.POST('/enrollments/batch', { body: { workflowId: welcomeId, contacts: Array.from({ length: 1001 }, (_, i) => ({ email: `r${i}@example.com` })) } });
    expectProblem(tooMany.response, tooMany.error, 400, '/problems/invalid-request');
    const foreign = await api.POST('/enrollments/batch', { body: { workflowId: randomUUID(), contacts: [{ email: fresh }] } });
    expectProblem(foreign.response, foreign.error, 404, '/problems/not-found');
  });

  it('an event; a batch of events each answered on its own, stored once per idempotencyKey', async () => {
    const api = client();
    const address = email('events');
    const one = await api.POST('/events', { body: { name: 'signup', email: address } });
    expect(one.data).toEqual({ eventId: expect.any(String), duplicate: false });
    const orderKey = `order-${randomUUID()}`;
    const batch = await api.POST('/events/batch', {
      body: {
        events: [
          { name: 'purchase', email: address, data: { total: 42 }, idempotencyKey: orderKey },
          { name: 'bad name!', email: address },
          { name: 'purchase', contactId: randomUUID() },
          { name: 'purchase', email: address, idempotencyKey: orderKey },
        ],
      },
    });
    expect(batch.response.status).toBe(200);
    const [stored, invalid, unknown, repeat] = batch.data!.results;
    expect(stored).toEqual({ index: 0, eventId: expect.any(String), duplicate: false });
    expect(invalid).toMatchObject({ index: 1, error: { reason: 'INVALID', message: expect.stringMatching(/^name/) } });
    expect(unknown).toMatchObject({ index: 2, error: { reason: 'CONTACT_NOT_FOUND' } });
    expect(repeat).toEqual({ index: 3, eventId: stored!.eventId, duplicate: true });
    expect(await t.query(`SELECT 1 FROM "Event" WHERE "idempotencyKey" = $1`, [orderKey])).toHaveLength(1);
    const empty = await api.POST('/events/batch', { body: { events: [] } });
    expectProblem(empty.response, empty.error, 400, '/problems/invalid-request');
  });

  it('Idempotency-Key: the same request again answers the first answer and writes nothing; another body 422; expired keys run again', async () => {
    const api = client();
    const key = `retry-${randomUUID()}`;
    const body = { name: 'checkout', email: email('idem') };
    const first = await api.POST('/events', { body, headers: { 'Idempotency-Key': key } });
    const again = await api.POST('/events', { body, headers: { 'Idempotency-Key': key } });
    expect(again.data).toEqual(first.data);
    expect(again.response.headers.get('idempotent-replayed')).toBe('true');
    expect(await t.query(`SELECT 1 FROM "Event" WHERE name = 'checkout' AND id = $1`, [first.data!.eventId])).toHaveLength(1);
    expect(await t.query(`SELECT 1 FROM "Event" WHERE name = 'checkout'`)).toHaveLength(1);
    const other = await api.POST('/events', { body: { ...body, data: { other: true } }, headers: { 'Idempotency-Key': key } });
    expectProblem(other.response, other.error, 422, '/problems/idempotency-key-reused');
    const otherPath = await api.POST('/contacts', { body: { email: body.email }, headers: { 'Idempotency-Key': key } });
    expectProblem(otherPath.response, otherPath.error, 422, '/problems/idempotency-key-reused');
    // A refusal is an answer too: replayed, not run again.
    const refusedKey = `refused-${randomUUID()}`;
    const refused = await api.POST('/enrollments', { body: { workflowId: randomUUID(), email: body.email }, headers: { 'Idempotency-Key': refusedKey } });
    expectProblem(refused.response, refused.error, 404, '/problems/not-found');
    const refusedAgain = await api.POST('/enrollments', { body: { workflowId: randomUUID(), email: body.email }, headers: { 'Idempotency-Key': refusedKey } });
    expectProblem(refusedAgain.response, refusedAgain.error, 422, '/problems/idempotency-key-reused');

    await t.query(`UPDATE "ApiIdempotencyKey" SET "expiresAt" = now() - interval '1 second' WHERE key = $1`, [key]);
    const expired = await api.POST('/events', { body, headers: { 'Idempotency-Key': key } });
    expect(expired.data!.eventId).not.toBe(first.data!.eventId);
    expect(await t.query(`SELECT 1 FROM "Event" WHERE name = 'checkout'`)).toHaveLength(2);
    const badKey = await api.POST('/events', { body, headers: { 'Idempotency-Key': 'with space' } });
    expectProblem(badKey.response, badKey.error, 400, '/problems/invalid-request');
  });
});

describe('executions and workflows', () => {
  it('list with the console filters paging through `next`; get with its steps; cancel fenced (stale 409), audited, OPERATOR only', async () => {
    const api = client();
    const enrolled: string[] = [];
    for (let i = 0; i < 3; i++) enrolled.push((await api.POST('/enrollments', { body: { workflowId: welcomeId, email: email('exec') } })).data!.executionId);
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages < 50; pages++) {
      const page = await client(keys.VIEWER).GET('/executions', { params: { query: { workflowId: welcomeId, status: ['RUNNING', 'WAITING'], limit: 2, cursor } } });
      expect(page.response.status).toBe(200);
      expect(page.data!.items.every((e) => e.workflowId === welcomeId && ['RUNNING', 'WAITING'].includes(e.status))).toBe(true);
      seen.push(...page.data!.items.map((e) => e.id));
      if (!page.data!.next) break;
      const url = new URL(page.data!.next, server!.base);
      expect(url.searchParams.getAll('status')).toEqual(['RUNNING', 'WAITING']);
      expect(url.searchParams.get('workflowId')).toBe(welcomeId);
      cursor = url.searchParams.get('cursor')!;
    }
    expect(seen).toEqual(expect.arrayContaining(enrolled));
    expect(new Set(seen).size).toBe(seen.length);
    const byContact = await api.GET('/executions', { params: { query: { contact: 'exec-', since: '2000-01-01T00:00:00Z' } } });
    expect(byContact.data!.items.map((e) => e.id)).toEqual(expect.arrayContaining(enrolled));
    const badStatus = await api.GET('/executions', { params: { query: { status: ['NOPE' as 'RUNNING'] } } });
    expectProblem(badStatus.response, badStatus.error, 400, '/problems/invalid-request');

    const id = enrolled[0]!;
    const detail = await client(keys.VIEWER).GET('/executions/{id}', { params: { path: { id } } });
    expect(detail.data).toMatchObject({ id, workflowId: welcomeId, steps: expect.any(Array), enrolledBy: { kind: 'actor' } });
    const missing = await api.GET('/executions/{id}', { params: { path: { id: randomUUID() } } });
    expectProblem(missing.response, missing.error, 404, '/problems/not-found');

    const operator = client(keys.OPERATOR);
    const version = detail.data!.version;
    const marketer = await api.POST('/executions/{id}/cancel', { params: { path: { id } }, body: { expectedVersion: version, reason: 'customer asked' } });
    expectProblem(marketer.response, marketer.error, 403, '/problems/forbidden');
    const stale = await operator.POST('/executions/{id}/cancel', { params: { path: { id } }, body: { expectedVersion: version - 1, reason: 'customer asked' } });
    expectProblem(stale.response, stale.error, 409, '/problems/conflict');
    expect(stale.error!.conflict).toMatchObject({ reason: 'STALE_VERSION' });
    const current = (await api.GET('/executions/{id}', { params: { path: { id } } })).data!.version;
    const cancelled = await operator.POST('/executions/{id}/cancel', { params: { path: { id } }, body: { expectedVersion: current, reason: 'customer asked' } });
    expect(cancelled.data).toMatchObject({ ok: true, action: 'CANCEL', executionId: id });
    expect((await api.GET('/executions/{id}', { params: { path: { id } } })).data!.status).toBe('CANCELLED');
    expect(await t.query(`SELECT reason FROM "AuditEntry" WHERE action = 'repair.CANCEL' AND "targetId" = $1 AND outcome = 'APPLIED'`, [id])).toEqual([{ reason: 'customer asked' }]);
    const again = await operator.POST('/executions/{id}/cancel', { params: { path: { id } }, body: { expectedVersion: cancelled.data!.version, reason: 'customer asked' } });
    expectProblem(again.response, again.error, 412, '/problems/precondition-failed');
    const noReason = await operator.POST('/executions/{id}/cancel', { params: { path: { id } }, body: { expectedVersion: current, reason: '' } });
    expectProblem(noReason.response, noReason.error, 400, '/problems/invalid-request');
  });

  it('workflows: the list (one page), one with its steps and versions, an unknown one 404', async () => {
    const api = client(keys.VIEWER);
    const list = await api.GET('/workflows');
    expect(list.data!.next).toBeNull();
    expect(list.data!.items.map((w) => w.id)).toContain(welcomeId);
    const one = await api.GET('/workflows/{id}', { params: { path: { id: welcomeId } } });
    expect(one.data).toMatchObject({ id: welcomeId, name: 'Welcome series', version: { number: 1 } });
    expect(one.data!.steps.length).toBeGreaterThan(0);
    expect(one.data!.versions.map((v) => v.number)).toEqual([1]);
    const atVersion = await api.GET('/workflows/{id}', { params: { path: { id: welcomeId }, query: { version: 1 } } });
    expect(atVersion.data!.version.number).toBe(1);
    const noVersion = await api.GET('/workflows/{id}', { params: { path: { id: welcomeId }, query: { version: 99 } } });
    expectProblem(noVersion.response, noVersion.error, 404, '/problems/not-found');
    const unknown = await api.GET('/workflows/{id}', { params: { path: { id: randomUUID() } } });
    expectProblem(unknown.response, unknown.error, 404, '/problems/not-found');
  });
});

describe('webhooks', () => {
  it('an OWNER key adds an endpoint (the secret once), lists, changes (a stale version 409), tests, reads the log page by page, redelivers, rotates and deletes; a MARKETER key is 403', async () => {
    const api = client(keys.OWNER);
    const types = await api.GET('/webhooks/event-types');
    expect(types.data!.map((e) => e.type)).toEqual(expect.arrayContaining(['execution.failed', 'execution.stuck', 'message.failed', 'event.dead', 'repair.applied', 'workflow.published']));
    const refused = await client(keys.MARKETER).GET('/webhooks/endpoints');
    expectProblem(refused.response, refused.error, 403, '/problems/forbidden');
    const privateUrl = await api.POST('/webhooks/endpoints', { body: { url: 'https://169.254.169.254/latest', eventTypes: ['execution.failed'] } });
    expectProblem(privateUrl.response, privateUrl.error, 400, '/problems/invalid-request');

    const created = await api.POST('/webhooks/endpoints', { body: { url: 'https://hooks.example.com/waypost', eventTypes: ['execution.failed', 'execution.stuck'], description: 'ops pager', stuckThreshold: 5 } });
    expect(created.data!.secret).toMatch(/^whsec_/);
    const endpoint = created.data!.endpoint;
    expect(endpoint).toMatchObject({ url: 'https://hooks.example.com/waypost', enabled: true, stuckThreshold: 5, secretHint: created.data!.secret.slice(-4) });
    const listed = await api.GET('/webhooks/endpoints');
    expect(listed.data!.find((e) => e.id === endpoint.id)).toMatchObject({ secretHint: endpoint.secretHint, last24h: { delivered: 0, pending: 0, dead: 0 } });
    expect(JSON.stringify(listed.data)).not.toContain(created.data!.secret);

    const updated = await api.PATCH('/webhooks/endpoints/{id}', { params: { path: { id: endpoint.id } }, body: { expectedVersion: endpoint.version, enabled: false } });
    expect(updated.data).toMatchObject({ enabled: false, version: endpoint.version + 1 });
    const stale = await api.PATCH('/webhooks/endpoints/{id}', { params: { path: { id: endpoint.id } }, body: { expectedVersion: endpoint.version, enabled: true } });
    expectProblem(stale.response, stale.error, 409, '/problems/conflict');
    expect(stale.error!.conflict).toMatchObject({ reason: 'STALE_VERSION' });
    const disabled = await api.POST('/webhooks/endpoints/{id}/test', { params: { path: { id: endpoint.id } } });
    expectProblem(disabled.response, disabled.error, 412, '/problems/precondition-failed');
    await api.PATCH('/webhooks/endpoints/{id}', { params: { path: { id: endpoint.id } }, body: { expectedVersion: endpoint.version + 1, enabled: true } });

    // Three test messages (this web server runs no worker: they stay PENDING), read two at a time.
    const sent = [];
    for (let i = 0; i < 3; i++) sent.push((await api.POST('/webhooks/endpoints/{id}/test', { params: { path: { id: endpoint.id } } })).data!);
    expect(sent.map((m) => m.status)).toEqual(['PENDING', 'PENDING', 'PENDING']);
    const first = await api.GET('/webhooks/endpoints/{endpointId}/deliveries', { params: { path: { endpointId: endpoint.id }, query: { limit: 2 } } });
    expect(first.data!.items).toHaveLength(2);
    const nextUrl = new URL(first.data!.next!, server!.base);
    expect(nextUrl.pathname).toBe(`/api/v1/webhooks/endpoints/${endpoint.id}/deliveries`);
    const second = await api.GET('/webhooks/endpoints/{endpointId}/deliveries', { params: { path: { endpointId: endpoint.id }, query: { limit: 2, cursor: nextUrl.searchParams.get('cursor')! } } });
    expect([...first.data!.items, ...second.data!.items].map((m) => m.id).sort()).toEqual(sent.map((m) => m.id).sort());
    expect(second.data!.next).toBeNull();

    const message = sent[0]!;
    const one = await api.GET('/webhooks/deliveries/{id}', { params: { path: { id: message.id } } });
    expect(one.data).toMatchObject({ id: message.id, eventType: 'webhook.test', webhookId: message.webhookId, attemptLog: [] });
    const pending = await api.POST('/webhooks/deliveries/{id}/redeliver', { params: { path: { id: message.id } } });
    expectProblem(pending.response, pending.error, 409, '/problems/conflict');
    expect(pending.error!.conflict).toMatchObject({ reason: 'ALREADY_PENDING' });
    await t.query(`UPDATE "WebhookMessage" SET status = 'DEAD', attempts = 6 WHERE id = $1`, [message.id]);
    const redelivered = await api.POST('/webhooks/deliveries/{id}/redeliver', { params: { path: { id: message.id } } });
    expect(redelivered.data).toMatchObject({ id: message.id, webhookId: message.webhookId, status: 'PENDING', attempts: 0 });

    const rotated = await api.POST('/webhooks/endpoints/{id}/rotate-secret', { params: { path: { id: endpoint.id } } });
    expect(rotated.data!.secret).toMatch(/^whsec_/);
    expect(rotated.data!.secret).not.toBe(created.data!.secret);
    const deleted = await api.DELETE('/webhooks/endpoints/{id}', { params: { path: { id: endpoint.id } } });
    expect(deleted.data!.id).toBe(endpoint.id);
    const gone = await api.GET('/webhooks/deliveries/{id}', { params: { path: { id: message.id } } });
    expectProblem(gone.response, gone.error, 404, '/problems/not-found');
  });
});

describe('the document', () => {
  it('every operation was driven through the generated client above', () => {
    const operations = Object.entries(document.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ key: `${method} ${path}`, operationId: op.operationId })));
    expect(operations.length).toBeGreaterThanOrEqual(14);
    expect(operations.filter((op) => !driven.has(op.key)).map((op) => op.operationId)).toEqual([]);
  });
});
