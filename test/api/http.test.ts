import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { createTRPCClient, httpBatchLink, TRPCClientError } from '@trpc/client';
import superjson from 'superjson';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedDemo } from '../../prisma/seed';
import { generateApiKey } from '../../server/auth/api-keys';
import type { AppRouter } from '../../server/trpc/root';
import { freshDatabase, type TestDatabase } from '../support/database';
import { startWebServer, type WebServer } from '../support/web-server';

// The API as integrations meet it: the product's web server (the production build) on a
// fresh database with the demo seed, called over HTTP with an API key, both through tRPC
// (superjson, batching) and through the plain JSON endpoints of /api/v1.

let t: TestDatabase;
let server: WebServer | undefined;
let base = '';
let apiKey = '';
let welcomeId = '';

beforeAll(async () => {
  t = await freshDatabase();
  await seedDemo(t.db);
  const demo = await t.db.project.findUniqueOrThrow({ where: { name: 'demo' } });
  welcomeId = (await t.db.workflow.findFirstOrThrow({ where: { projectId: demo.id, name: 'Welcome series' } })).id;
  // A key as `npm run cli -- create-api-key` makes one: only the prefix and hash are stored.
  const key = generateApiKey();
  await t.db.apiKey.create({ data: { projectId: demo.id, name: 'http test backend', role: 'MARKETER', prefix: key.prefix, hashedSecret: key.hashedSecret } });
  apiKey = key.secret;
  server = await startWebServer(t.url);
  base = server.base;
}, 900_000);

afterAll(async () => {
  await server?.stop();
  await t?.drop();
});

function trpcClient(key: string | null, onFetch?: () => void) {
  return createTRPCClient<AppRouter>({
    links: [
      httpBatchLink({
        url: `${base}/api/trpc`,
        transformer: superjson,
        headers: () => (key ? { authorization: `Bearer ${key}` } : {}),
        fetch: (url, init) => {
          onFetch?.();
          return fetch(url, init);
        },
      }),
    ],
  });
}

async function clientError(promise: Promise<unknown>): Promise<TRPCClientError<AppRouter>> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(TRPCClientError);
    return error as TRPCClientError<AppRouter>;
  }
  throw new Error('expected the call to fail');
}

function postJson(pathname: string, body: unknown, key: string | null = apiKey) {
  return fetch(`${base}${pathname}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

describe('tRPC over HTTP with an API key', () => {
  it('enrolls, and a duplicate enrollment is CONFLICT with data.conflict.reason ACTIVE_EXECUTION', async () => {
    const client = trpcClient(apiKey);
    const email = `http-${randomUUID().slice(0, 8)}@example.com`;
    const { executionId } = await client.enrollments.enroll.mutate({ workflowId: welcomeId, email, context: { source: 'http test' } });
    const execution = await t.db.workflowExecution.findUniqueOrThrow({ where: { id: executionId }, include: { contact: true } });
    expect(execution.contact.email).toBe(email);
    const audit = await t.db.auditEntry.findFirstOrThrow({ where: { targetId: executionId } });
    expect(audit.actor).toMatch(/^apikey:/);

    const duplicate = await clientError(client.enrollments.enroll.mutate({ workflowId: welcomeId, email }));
    expect(duplicate.data?.code).toBe('CONFLICT');
    expect(duplicate.data?.httpStatus).toBe(409);
    expect((duplicate.data as unknown as { conflict: unknown }).conflict).toEqual({ reason: 'ACTIVE_EXECUTION', executionId });
  });

  it('tracks an event with an idempotency key twice: one event stored, the same eventId both times', async () => {
    let requests = 0;
    const client = trpcClient(apiKey, () => requests++);
    const idempotencyKey = `order-${randomUUID()}`;
    const input = { name: 'purchase', email: 'http-buyer@example.com', data: { total: 42 }, idempotencyKey };
    // Sent together: one batched HTTP request carrying both calls.
    const [first, second] = await Promise.all([client.events.track.mutate(input), client.events.track.mutate(input)]);
    expect(requests).toBe(1);
    expect(second.eventId).toBe(first.eventId);
    expect([first.duplicate, second.duplicate].sort()).toEqual([false, true]);
    const again = await client.events.track.mutate(input);
    expect(again).toEqual({ eventId: first.eventId, duplicate: true });
    expect(await t.db.event.count({ where: { idempotencyKey } })).toBe(1);
  });

  it('no key is UNAUTHORIZED; a MARKETER key may not repair (FORBIDDEN); bad input is BAD_REQUEST, never a 500', async () => {
    expect((await clientError(trpcClient(null).workflows.list.query())).data?.code).toBe('UNAUTHORIZED');
    expect((await clientError(trpcClient(`wp_${'x'.repeat(40)}`).workflows.list.query())).data?.code).toBe('UNAUTHORIZED');
    expect((await clientError(trpcClient(apiKey).repair.stuck.query())).data?.code).toBe('FORBIDDEN');
    const bad = await clientError(trpcClient(apiKey).enrollments.enroll.mutate({ workflowId: 'not-an-id', email: 'nope' }));
    expect(bad.data?.httpStatus).toBe(400);
    expect((bad.data as unknown as { zodError: { issues: { path: string }[] } }).zodError.issues.map((i) => i.path).sort()).toEqual(['email', 'workflowId']);
    // A refusal a procedure makes itself (not its schema) names its field the same way.
    const noEmail = await clientError(trpcClient(apiKey).enrollments.importCsv.mutate({ workflowId: welcomeId, csv: 'name\nAda\n' }));
    expect(noEmail.data?.httpStatus).toBe(400);
    expect((noEmail.data as unknown as { zodError: { issues: { path: string }[] } | null }).zodError?.issues.map((i) => i.path)).toEqual(['csv']);
  });

  it('repair.apply keeps its documented name over HTTP (served by repair.applyOne)', async () => {
    // The path resolves to the procedure: a MARKETER key is FORBIDDEN there, where an
    // unknown procedure would be NOT_FOUND.
    const body = JSON.stringify({ json: { executionId: randomUUID(), action: 'CANCEL', expectedVersion: 1, reason: 'documented name' } });
    const res = await fetch(`${base}/api/trpc/repair.apply`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
      body,
    });
    expect(res.status).toBe(403);
    const unknown = await fetch(`${base}/api/trpc/repair.nonsense`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
      body,
    });
    expect(unknown.status).toBe(404);
  });

  it('a body over the size limit is 413 before the server reads it all', async () => {
    const response = await fetch(`${base}/api/trpc/enrollments.importCsv`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
      body: JSON.stringify({ json: { workflowId: welcomeId, csv: 'x'.repeat(13 * 1024 * 1024) } }),
    });
    expect(response.status).toBe(413);
  });
});

describe('REST endpoints for integrations (/api/v1)', () => {
  it('POST /api/v1/enrollments enrolls with plain JSON; a duplicate is 409 with conflict.reason', async () => {
    const email = `rest-${randomUUID().slice(0, 8)}@example.com`;
    const response = await postJson('/api/v1/enrollments', { workflowId: welcomeId, email });
    expect(response.status).toBe(200);
    const { executionId } = (await response.json()) as { executionId: string };
    expect(await t.db.workflowExecution.count({ where: { id: executionId } })).toBe(1);

    const duplicate = await postJson('/api/v1/enrollments', { workflowId: welcomeId, email });
    expect(duplicate.status).toBe(409);
    expect(duplicate.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const body = (await duplicate.json()) as { type: string; status: number; code: string; conflict: unknown };
    expect(body).toMatchObject({ type: '/problems/conflict', status: 409, code: 'CONFLICT' });
    expect(body.conflict).toEqual({ reason: 'ACTIVE_EXECUTION', executionId });
  });

  it('POST /api/v1/events is idempotent per key', async () => {
    const idempotencyKey = `rest-${randomUUID()}`;
    const input = { name: 'cart_abandoned', email: 'rest-cart@example.com', data: { items: 3 }, idempotencyKey };
    const first = (await (await postJson('/api/v1/events', input)).json()) as { eventId: string; duplicate: boolean };
    const second = (await (await postJson('/api/v1/events', input)).json()) as { eventId: string; duplicate: boolean };
    expect(first.duplicate).toBe(false);
    expect(second).toEqual({ eventId: first.eventId, duplicate: true });
    expect(await t.db.event.count({ where: { idempotencyKey } })).toBe(1);
  });

  it('answers 401 without a key, 400 for bad JSON or bad input, 404 for another project\'s workflow', async () => {
    expect((await postJson('/api/v1/enrollments', { workflowId: welcomeId, email: 'a@example.com' }, null)).status).toBe(401);
    expect((await postJson('/api/v1/enrollments', '{"workflowId": ')).status).toBe(400);
    const invalid = await postJson('/api/v1/events', '{"name": "has spaces", "email": "x", "data": {"__proto__": {"admin": true}}}');
    expect(invalid.status).toBe(400);
    const problem = (await invalid.json()) as { code: string; type: string; issues: { path: string }[] };
    expect(problem).toMatchObject({ code: 'BAD_REQUEST', type: '/problems/invalid-request' });
    expect(problem.issues.map((i) => i.path)).toEqual(expect.arrayContaining(['name', 'email']));
    expect((await postJson('/api/v1/enrollments', { workflowId: randomUUID(), email: 'a@example.com' })).status).toBe(404);
  });

  it('GET /api/v1/openapi.json describes the endpoints with bearer authentication', async () => {
    const response = await fetch(`${base}/api/v1/openapi.json`);
    expect(response.status).toBe(200);
    const doc = (await response.json()) as {
      openapi: string;
      servers: { url: string }[];
      paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: { properties: Record<string, unknown>; required?: string[] } }> }; security?: unknown[] }>>;
      components: { securitySchemes: Record<string, { type: string; scheme?: string }> };
    };
    expect(doc.openapi).toMatch(/^3\./);
    expect(doc.servers[0]!.url).toBe('/api/v1');
    const enroll = doc.paths['/enrollments']!.post!;
    expect(Object.keys(enroll.requestBody!.content['application/json']!.schema.properties).sort()).toEqual(['contactId', 'context', 'email', 'workflowId']);
    expect(enroll.requestBody!.content['application/json']!.schema.required).toEqual(['workflowId']);
    expect(enroll.security).toBeDefined();
    expect(doc.paths['/events']!.post!.requestBody!.content['application/json']!.schema.properties).toHaveProperty('idempotencyKey');
    expect(Object.values(doc.components.securitySchemes)).toContainEqual(expect.objectContaining({ type: 'http', scheme: 'bearer' }));
  });
});

describe('the HTTP edge under malformed input: never a 5xx, nothing written', () => {
  async function ownerSession(): Promise<string> {
    const res = await fetch(`${base}/api/auth/sign-in/email`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: base, 'x-forwarded-for': '203.0.113.80' },
      body: JSON.stringify({ email: 'owner@demo.waypost.dev', password: 'waypost-demo' }),
    });
    expect(res.status).toBe(200);
    return res.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
  }

  const writes = async () =>
    Number(
      (
        await t.query<{ n: string }>(
          `SELECT (SELECT count(*) FROM "AuditEntry") + (SELECT count(*) FROM "Contact") + (SELECT count(*) FROM "WorkflowExecution") + (SELECT count(*) FROM "Event") AS n`,
        )
      )[0]!.n,
    );

  it('malformed percent-encodings, cookies, headers and bodies are answered 4xx', async () => {
    const session = await ownerSession();
    const before = await writes();
    const paths = [
      '/api/trpc/%E0%A4%A',
      '/api/trpc/%',
      '/api/trpc/%C0%AF,health.invariants',
      '/api/trpc/health.invariants?input=%E0%A4%A',
      '/api/trpc/executions.list?input=%7B',
      '/api/trpc/executions.list?batch=1&input=%7B%220%22%3A1',
      '/api/v1/%E0%A4%A',
      '/api/v1/enrollments%FF',
      '/api/auth/%E0%A4%A',
      '/api/auth/get-session?x=%E0',
    ];
    const identities: Record<string, string>[] = [
      {},
      { authorization: `Bearer ${apiKey}` },
      { cookie: session },
      { cookie: `${session}; waypost_project=%E0%A4%A` },
      { cookie: `${session}; waypost_project=${'x'.repeat(4000)}` },
      { cookie: `${session}; waypost_project=%00` },
      { authorization: 'Bearer %E0%A4%A' },
      { authorization: `Bearer ${'é'.repeat(300)}` },
      { cookie: 'waypost.session_token=%E0%A4%A' },
    ];
    const bodies: (string | undefined)[] = [undefined, '{', '[]', '{"json":', `${'['.repeat(20_000)}${']'.repeat(20_000)}`, '\u0000\uffff'];
    const answers: string[] = [];
    for (const p of paths) {
      for (const headers of identities) {
        for (const [method, body] of [['GET', undefined] as const, ...bodies.map((b) => ['POST', b] as const)]) {
          const res = await fetch(`${base}${p}`, { method, headers: { 'content-type': 'application/json', origin: base, ...headers }, body });
          if (res.status >= 500) answers.push(`${method} ${p} ${JSON.stringify(Object.keys(headers))} -> ${res.status}`);
          await res.arrayBuffer();
        }
      }
    }
    expect(answers).toEqual([]);
    // The console's pages too, with a malformed project cookie.
    for (const page of ['/', '/executions', '/executions?status=%E0%A4%A', '/audit', '/stuck']) {
      const res = await fetch(`${base}${page}`, { headers: { cookie: `${session}; waypost_project=%E0%A4%A` }, redirect: 'manual' });
      expect(res.status, page).toBeLessThan(500);
    }
    expect(await writes()).toBe(before);
  }, 300_000);

  it('an undecodable path is a 400 with a sentence', async () => {
    const res = await fetch(`${base}/api/trpc/%E0%A4%A`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}` } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/not valid percent-encoding/);
  });
});

describe('security headers', () => {
  it('pages carry a nonce-based policy that forbids framing; API answers a policy that loads nothing; assets are nosniff', async () => {
    const page = await fetch(`${base}/sign-in`);
    const csp = page.headers.get('content-security-policy') ?? '';
    const nonce = csp.match(/'nonce-([A-Za-z0-9+/=]+)'/)?.[1];
    expect(nonce).toBeTruthy();
    expect(csp).toContain(`frame-ancestors 'none'`);
    expect(csp).toContain(`object-src 'none'`);
    expect(csp).not.toContain('unsafe-eval');
    const html = await page.text();
    // Every script of the page carries this response's nonce, and the next response has another.
    const scripts = [...html.matchAll(/<script\b[^>]*>/g)].map((m) => m[0]);
    expect(scripts.length).toBeGreaterThan(0);
    expect(scripts.every((tag) => tag.includes(`nonce="${nonce}"`))).toBe(true);
    const again = (await fetch(`${base}/sign-in`)).headers.get('content-security-policy');
    expect(again).not.toBe(csp);

    const api = await fetch(`${base}/api/trpc/health.invariants`);
    expect(api.headers.get('content-security-policy')).toBe(`default-src 'none'; frame-ancestors 'none'`);
    const asset = html.match(/src="(\/_next\/static\/[^"]+\.js)"/)?.[1];
    expect(asset).toBeTruthy();
    for (const res of [page, api, await fetch(`${base}${asset}`), await fetch(`${base}/api/v1/openapi.json`)]) {
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('referrer-policy')).toBe('strict-origin-when-cross-origin');
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      // Served over http here: no HSTS (it would pin a plain-http site).
      expect(res.headers.get('strict-transport-security')).toBeNull();
    }
  });
});

describe('bounded work per request', () => {
  it('a batch of more than MAX_BATCH_SIZE calls is refused with 400 before any runs; one of that size is served', async () => {
    const { MAX_BATCH_SIZE } = await import('../../server/common/batch');
    const batch = (n: number) =>
      fetch(`${base}/api/trpc/${Array.from({ length: n }, () => 'health.invariants').join(',')}?batch=1&input=${encodeURIComponent(JSON.stringify({}))}`, {
        headers: { authorization: `Bearer ${apiKey}` },
      });
    const ok = await batch(MAX_BATCH_SIZE);
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as unknown[]).length).toBe(MAX_BATCH_SIZE);
    const refused = await batch(200);
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain('Batch call exceeds maximum size');
    expect((await batch(MAX_BATCH_SIZE + 1)).status).toBe(400);
  });
});

describe('sign-in floods', () => {
  /** A sign-in from a real local address (127.x.y.z: each its own client to the server), optionally claiming another in X-Forwarded-For. */
  function attempt(email: string, password: string, from: string, forged?: string): Promise<{ status: number; retryAfter: string | null; body: string }> {
    const url = new URL(`${base}/api/auth/sign-in/email`);
    const body = JSON.stringify({ email, password });
    return new Promise((resolve, reject) => {
      const req = httpRequest(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          localAddress: from,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), origin: base, ...(forged ? { 'x-forwarded-for': forged } : {}) },
        },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: (res.headers['retry-after'] as string | undefined) ?? null, body: text }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  it('a forged X-Forwarded-For is not an address: one client claiming a new one each time still meets the per-address limit', async () => {
    const answers: number[] = [];
    for (let i = 0; i < 8; i++) answers.push((await attempt('operator@demo.waypost.dev', `wrong ${i}`, '127.0.3.1', `198.51.100.${i + 1}`)).status);
    expect(answers.filter((s) => s === 401).length).toBeLessThanOrEqual(5);
    expect(answers.slice(5)).toEqual([429, 429, 429]);
  });

  it('30 wrong passwords for one account at once from 30 addresses: 10 are tried, 20 refused with 429 and Retry-After', async () => {
    const { ACCOUNT_MAX_FAILURES } = await import('../../server/auth/sign-in-limit');
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => attempt('marketer@demo.waypost.dev', `wrong password ${i}`, `127.0.1.${i + 1}`)));
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 401)).toHaveLength(ACCOUNT_MAX_FAILURES);
    expect(statuses.filter((s) => s === 429)).toHaveLength(30 - ACCOUNT_MAX_FAILURES);
    const refused = answers.find((r) => r.status === 429)!;
    expect(Number(refused.retryAfter)).toBeGreaterThan(60);
    expect((JSON.parse(refused.body) as { code: string }).code).toBe('TOO_MANY_ATTEMPTS');
    // Even the right password waits now, from any address; another account is not affected.
    expect((await attempt('marketer@demo.waypost.dev', 'waypost-demo', '127.0.2.1')).status).toBe(429);
    expect((await attempt('viewer@demo.waypost.dev', 'waypost-demo', '127.0.2.2')).status).toBe(200);
  });
});
