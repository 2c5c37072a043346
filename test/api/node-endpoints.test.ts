import { request as httpRequest } from 'node:http';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedDemo } from '../../prisma/seed';
import { generateApiKey } from '../../server/auth/api-keys';
import type { Role } from '../../server/common/roles';
import { MAX_BATCH_SIZE } from '../../server/common/batch';
import { apiEndpointOf } from '../../server/http/node-endpoints';
import { restEndpoint, trpcEndpoint } from '../../server/http/endpoints';
import { freshDatabase, type TestDatabase } from '../support/database';
import { startWebServer, type WebServer } from '../support/web-server';

// scripts/web.ts answers /api/trpc and /api/v1 itself, before Next.js's request pipeline
// (server/http/node-endpoints.ts). It must answer exactly as the Next.js routes (with
// proxy.ts in front) did: the same statuses, error bodies and headers for refusals (no
// credentials, too small a role, rate limits, cross-site changes, bodies too large, bad
// input), and the requests it does not answer itself must still reach Next.js. Two
// servers on one database: one as shipped, one with WAYPOST_API_THROUGH_NEXT=1, which
// hands every request to Next.js as before; each request below goes to both.

const PER_KEY = 3;

let t: TestDatabase;
let fast: WebServer | undefined;
let viaNext: WebServer | undefined;
let projectId = '';
let workflowId = '';

beforeAll(async () => {
  t = await freshDatabase();
  await seedDemo(t.db);
  const demo = await t.db.project.findUniqueOrThrow({ where: { name: 'demo' } });
  projectId = demo.id;
  workflowId = (await t.db.workflow.findFirstOrThrow({ where: { projectId: demo.id, name: 'Welcome series' } })).id;
  const limits = { RATE_LIMIT_PER_KEY: String(PER_KEY), RATE_LIMIT_PER_ADDRESS: '0', RATE_LIMIT_PER_SESSION: '0' };
  fast = await startWebServer(t.url, limits);
  viaNext = await startWebServer(t.url, { ...limits, WAYPOST_API_THROUGH_NEXT: '1' });
}, 900_000);

afterAll(async () => {
  await Promise.all([fast?.stop(), viaNext?.stop()]);
  await t?.drop();
});

async function newKey(role: Role): Promise<string> {
  const key = generateApiKey();
  await t.db.apiKey.create({ data: { projectId, name: `node-endpoints ${role} ${randomUUID()}`, role, prefix: key.prefix, hashedSecret: key.hashedSecret } });
  return key.secret;
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function send(server: WebServer, method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const all: Record<string, string | number> = { ...headers };
    if (body !== undefined) all['content-length'] = Buffer.byteLength(body);
    const req = httpRequest({ host: '127.0.0.1', port: server.port, path, method, headers: all }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The headers that describe an answer (not the connection or the moment): they must match. */
const COMPARED = [
  'content-type',
  'retry-after',
  'allow',
  'location',
  'x-content-type-options',
  'referrer-policy',
  'x-frame-options',
  'cross-origin-opener-policy',
  'permissions-policy',
  'content-security-policy',
  'strict-transport-security',
  'set-cookie',
];

function comparable(answer: Answer) {
  let body: unknown = answer.body;
  try {
    body = JSON.parse(answer.body);
  } catch {
    // not JSON: compared as text
  }
  return {
    status: answer.status,
    headers: Object.fromEntries(COMPARED.map((name) => [name, answer.headers[name]])),
    // An unexpected error's request id differs from one answer to the next, and each server has its own port.
    body: JSON.parse(JSON.stringify(body ?? null).replace(/request [0-9a-f]{8}/g, 'request <id>').replace(/(localhost|127\.0\.0\.1):\d+/g, '$1:<port>')),
  };
}

/** The same request to both servers, in turn. */
async function both(method: string, path: string, headers: Record<string, string> = {}, body?: string) {
  const a = await send(fast!, method, path, headers, body);
  const b = await send(viaNext!, method, path, headers, body);
  return { fast: a, viaNext: b };
}

const json = { 'content-type': 'application/json' };
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

describe('which requests scripts/web.ts answers itself', () => {
  it('the tRPC and REST routes for the methods they export; everything else goes to Next.js', () => {
    const of = (method: string, url: string) => apiEndpointOf({ method, url });
    expect(of('POST', '/api/v1/enrollments')).toBe(restEndpoint);
    expect(of('DELETE', '/api/v1/whatever/else')).toBe(restEndpoint);
    expect(of('GET', '/api/trpc/workflows.list?input=%7B%7D')).toBe(trpcEndpoint);
    expect(of('POST', '/api/trpc/a,b?batch=1')).toBe(trpcEndpoint);
    for (const [method, url] of [
      ['HEAD', '/api/v1/enrollments'],
      ['OPTIONS', '/api/trpc/workflows.list'],
      ['PUT', '/api/trpc/workflows.list'],
      ['GET', '/api/v1/openapi.json'],
      ['POST', '/api/v1/enrollments/'],
      ['POST', '/api/v1//enrollments'],
      ['POST', '/api/v1/../trpc/enrollments.enroll'],
      ['POST', '/api/v1/%2E%2e/trpc/enrollments.enroll'],
      ['GET', '/api/trpc/a/b'],
      ['GET', '/api/trpc'],
      ['GET', '/api/v1'],
      ['POST', '/api/auth/sign-in/email'],
      ['GET', '/executions'],
    ] as const) {
      expect(of(method, url), `${method} ${url}`).toBeNull();
    }
  });
});

describe('answers of scripts/web.ts are those of the Next.js routes', () => {
  it('a real enrollment over /api/v1 and over tRPC: 200 with the same headers, then CONFLICT alike', async () => {
    const key = await newKey('OWNER');
    const [a, b] = [`fast-${randomUUID()}@node.test`, `next-${randomUUID()}@node.test`];
    const first = [await send(fast!, 'POST', '/api/v1/enrollments', { ...json, ...bearer(key) }, JSON.stringify({ workflowId, email: a })),
      await send(viaNext!, 'POST', '/api/v1/enrollments', { ...json, ...bearer(key) }, JSON.stringify({ workflowId, email: b }))];
    expect(first.map((r) => r.status)).toEqual([200, 200]);
    expect(comparable(first[0]!).headers).toEqual(comparable(first[1]!).headers);
    expect(Object.keys(JSON.parse(first[0]!.body))).toEqual(Object.keys(JSON.parse(first[1]!.body)));
    const again = await both('POST', '/api/v1/enrollments', { ...json, ...bearer(await newKey('MARKETER')) }, JSON.stringify({ workflowId, email: a }));
    expect(again.fast.status).toBe(409);
    expect(comparable(again.fast)).toEqual(comparable(again.viaNext));
  });

  const cases: { name: string; method: string; path: string; headers?: Record<string, string>; body?: string; role?: Role }[] = [
    { name: 'REST without a key: 401', method: 'POST', path: '/api/v1/enrollments', headers: json, body: JSON.stringify({ workflowId: randomUUID(), email: 'x@y.z' }) },
    { name: 'REST with an unknown key: 401', method: 'POST', path: '/api/v1/enrollments', headers: { ...json, authorization: 'Bearer wp_live_nope' }, body: '{}' },
    { name: 'REST, a VIEWER key enrolling: 403', method: 'POST', path: '/api/v1/enrollments', role: 'VIEWER', headers: json, body: JSON.stringify({ workflowId: randomUUID(), email: 'x@y.z' }) },
    { name: 'REST, bad JSON: 400', method: 'POST', path: '/api/v1/enrollments', role: 'MARKETER', headers: json, body: '{"workflowId": ' },
    { name: 'REST, bad input: 400', method: 'POST', path: '/api/v1/enrollments', role: 'MARKETER', headers: json, body: JSON.stringify({ email: 42 }) },
    { name: "REST, a workflow that is not the project's: 404", method: 'POST', path: '/api/v1/enrollments', role: 'MARKETER', headers: json, body: JSON.stringify({ workflowId: randomUUID(), email: 'x@y.z' }) },
    { name: 'REST, no such endpoint: 404', method: 'POST', path: '/api/v1/nothing-here', role: 'MARKETER', headers: json, body: '{}' },
    { name: 'REST, the wrong method: 404/405 as before', method: 'GET', path: '/api/v1/enrollments', role: 'MARKETER' },
    { name: 'REST, a project header that is not an id: 400', method: 'POST', path: '/api/v1/enrollments', role: 'MARKETER', headers: { ...json, 'x-waypost-project': 'nope' }, body: '{}' },
    { name: 'REST, a cookie session is no credential: 401', method: 'POST', path: '/api/v1/enrollments', headers: { ...json, cookie: 'waypost.session_token=abc.def', origin: 'https://evil.example' }, body: '{}' },
    { name: 'tRPC query without credentials: 401', method: 'GET', path: '/api/trpc/workflows.list?input=%7B%22json%22%3A%7B%7D%7D' },
    { name: 'tRPC batch without credentials: 401 each', method: 'GET', path: `/api/trpc/workflows.list,health.invariants?batch=1&input=${encodeURIComponent('{}')}` },
    { name: 'tRPC, no such procedure: 404', method: 'GET', path: '/api/trpc/nothing.here', role: 'VIEWER' },
    { name: 'tRPC, a batch too large: 400', method: 'GET', path: `/api/trpc/${Array.from({ length: MAX_BATCH_SIZE + 1 }, () => 'health.invariants').join(',')}?batch=1&input=%7B%7D`, role: 'VIEWER' },
    { name: 'tRPC mutation, bad input: 400', method: 'POST', path: '/api/trpc/enrollments.enroll', role: 'MARKETER', headers: json, body: JSON.stringify({ json: { workflowId: 'nope' } }) },
    { name: 'tRPC mutation, bad JSON: 400', method: 'POST', path: '/api/trpc/enrollments.enroll', role: 'MARKETER', headers: json, body: '{' },
    { name: 'tRPC, a role too small: 403', method: 'POST', path: '/api/trpc/repair.apply', role: 'MARKETER', headers: json, body: JSON.stringify({ json: {} }) },
    { name: 'tRPC, a query by POST: 405', method: 'POST', path: '/api/trpc/workflows.list', role: 'VIEWER', headers: json, body: '{}' },
    { name: 'tRPC, a signed-in change from another site: 403', method: 'POST', path: '/api/trpc/enrollments.enroll', headers: { ...json, cookie: 'waypost.session_token=abc.def', 'sec-fetch-site': 'cross-site' }, body: '{}' },
    { name: 'tRPC, a signed-in change from another origin: 403', method: 'POST', path: '/api/trpc/enrollments.enroll', headers: { ...json, cookie: 'waypost.session_token=abc.def', origin: 'https://evil.example' }, body: '{}' },
    { name: 'tRPC, an invalid session cookie from the console itself: 401', method: 'POST', path: '/api/trpc/enrollments.enroll', headers: { ...json, cookie: 'waypost.session_token=abc.def', 'sec-fetch-site': 'same-origin' }, body: '{}' },
    { name: 'an anonymous body over 16 KB: 413', method: 'POST', path: '/api/v1/enrollments', headers: json, body: JSON.stringify({ pad: 'x'.repeat(20_000) }) },
    { name: 'an undecodable query: 400', method: 'GET', path: '/api/trpc/workflows.list?input=%E0%A4%A' },
    { name: 'HEAD, OPTIONS and other methods are still Next.js\'s: HEAD', method: 'HEAD', path: '/api/v1/enrollments' },
    { name: 'OPTIONS', method: 'OPTIONS', path: '/api/trpc/workflows.list' },
    { name: 'PUT on tRPC', method: 'PUT', path: '/api/trpc/workflows.list', headers: json, body: '{}' },
    { name: 'a trailing slash', method: 'POST', path: '/api/v1/enrollments/', headers: json, body: '{}' },
    { name: 'the OpenAPI document', method: 'GET', path: '/api/v1/openapi.json' },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const headers = { ...c.headers, ...(c.role ? bearer(await newKey(c.role)) : {}) };
      const { fast: a, viaNext: b } = await both(c.method, c.path, headers, c.body);
      expect(a.status).toBeLessThan(500);
      expect(comparable(a)).toEqual(comparable(b));
    });
  }

  it('rate limits per key: the same allowance, then 429 with Retry-After in the same shape', async () => {
    for (const path of ['/api/v1/enrollments', '/api/trpc/enrollments.enroll']) {
      // A key for each server: the two share one count of a key's calls (server/db/rate-counter.ts).
      const [keyFast, keyViaNext] = [await newKey('MARKETER'), await newKey('MARKETER')];
      const body = path.startsWith('/api/v1') ? '{}' : JSON.stringify({ json: {} });
      const answers: ReturnType<typeof comparable>[][] = [[], []];
      for (let i = 0; i <= PER_KEY; i++) {
        const a = await send(fast!, 'POST', path, { ...json, ...bearer(keyFast) }, body);
        const b = await send(viaNext!, 'POST', path, { ...json, ...bearer(keyViaNext) }, body);
        answers[0]!.push(comparable(a));
        answers[1]!.push(comparable(b));
      }
      expect(answers[0]!.map((a) => a.status)).toEqual([...Array(PER_KEY).fill(400), 429]);
      // Retry-After counts down in seconds: the same bucket, a moment apart.
      const last = answers.map((a) => a.at(-1)!);
      expect(Math.abs(Number(last[0]!.headers['retry-after']) - Number(last[1]!.headers['retry-after']))).toBeLessThanOrEqual(1);
      last[1]!.headers['retry-after'] = last[0]!.headers['retry-after'];
      last[1]!.body = JSON.parse(JSON.stringify(last[1]!.body).replace(/Try again in \d+ s/, 'Try again in N s'));
      last[0]!.body = JSON.parse(JSON.stringify(last[0]!.body).replace(/Try again in \d+ s/, 'Try again in N s'));
      expect(answers[0]).toEqual(answers[1]);
      // /api/v1 answers every refusal as problem details, the rate limit's included.
      if (path.startsWith('/api/v1')) {
        expect(last[0]!.headers['content-type']).toBe('application/problem+json');
        expect(last[0]!.body).toMatchObject({ type: '/problems/rate-limited', status: 429, code: 'TOO_MANY_REQUESTS', detail: expect.any(String) });
      }
    }
  });
});
