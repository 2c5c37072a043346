import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedDemo } from '../../prisma/seed';
import { generateApiKey } from '../../server/auth/api-keys';
import { MAX_BATCH_SIZE } from '../../server/common/batch';
import { freshDatabase, type TestDatabase } from '../support/database';
import { ensureBuild } from '../../scripts/build';
import { startWebServer, type WebServer } from '../support/web-server';

// The API limits at the HTTP edge of the real server (scripts/web.ts on the
// production build): per-address, per-key and per-session rate limits with 429 and
// Retry-After; bodies refused with 413 before they are read when the caller has no
// credentials; signed-in tRPC mutations from another site refused; /api/v1 deaf to cookies.
// Small limits, so a flood is a few dozen requests. Each test sends from addresses of its
// own (127.0.x.y, every one a real client address to the server), so their buckets never meet.

const PER_ADDRESS = 60;
const PER_KEY = 30;
const PER_SESSION = 30;

let t: TestDatabase;
let server: WebServer;
const keys: string[] = [];
let workflowId = '';

beforeAll(async () => {
  ensureBuild();
  t = await freshDatabase();
  await seedDemo(t.db);
  const demo = await t.db.project.findUniqueOrThrow({ where: { name: 'demo' } });
  workflowId = (await t.db.workflow.findFirstOrThrow({ where: { projectId: demo.id } })).id;
  for (const name of ['flooding backend', 'quiet backend']) {
    const key = generateApiKey();
    await t.db.apiKey.create({ data: { projectId: demo.id, name, role: 'MARKETER', prefix: key.prefix, hashedSecret: key.hashedSecret } });
    keys.push(key.secret);
  }
  server = await startWebServer(t.url, {
    RATE_LIMIT_PER_ADDRESS: String(PER_ADDRESS),
    RATE_LIMIT_PER_KEY: String(PER_KEY),
    RATE_LIMIT_PER_SESSION: String(PER_SESSION),
  });
}, 900_000);

afterAll(async () => {
  await server?.stop();
  await t?.drop();
});

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** Body bytes written before the answer came (for streamed bodies). */
  sent: number;
}

/**
 * One request from `from` (a loopback address). A `stream` body is written in 64 KB
 * pieces, waiting for the socket to drain, and stops as soon as an answer arrives:
 * `sent` then says how much of it the server let in before answering.
 */
function send(
  from: string,
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: string; stream?: { bytes: number; chunked: boolean } } = {},
): Promise<Answer> {
  const url = new URL(path, server.base);
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = false;
    const headers: Record<string, string | number> = { ...options.headers };
    if (options.body !== undefined && !headers['transfer-encoding']) headers['content-length'] = Buffer.byteLength(options.body);
    if (options.stream && !options.stream.chunked) headers['content-length'] = options.stream.bytes;
    if (options.stream?.chunked) headers['transfer-encoding'] = 'chunked';
    const req = httpRequest({ host: url.hostname, port: url.port, path: `${url.pathname}${url.search}`, method, localAddress: from, headers }, (res) => {
      answered = true;
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => {
        // A streamed body cut short by the answer: this connection cannot carry another request.
        if (options.stream && sent < options.stream.bytes) req.destroy();
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text, sent });
      });
      res.on('error', reject);
    });
    req.on('error', (error) => {
      // The server closes the connection after refusing a body it will not read: the
      // answer has come first.
      if (!answered) reject(error);
    });
    if (!options.stream) {
      req.end(options.body);
      return;
    }
    const piece = Buffer.alloc(64 * 1024, 'x');
    const total = options.stream.bytes;
    const pump = () => {
      while (!answered && sent < total) {
        const part = piece.subarray(0, Math.min(piece.length, total - sent));
        sent += part.length;
        if (!req.write(part)) return void req.once('drain', pump);
      }
      if (!answered) req.end();
    };
    pump();
  });
}

const invariants = '/api/trpc/health.invariants';
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
const trpcError = (answer: Answer) => (JSON.parse(answer.body) as { error: { json: { message: string; data: { code: string; httpStatus: number } } } }).error.json;

describe('rate limits', () => {
  it('a flood from one address gets 429 with Retry-After in the tRPC error shape, other addresses are served, and it recovers after Retry-After', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < PER_ADDRESS + 3; i++) statuses.push((await send('127.0.5.1', 'GET', invariants)).status);
    expect(statuses.slice(0, PER_ADDRESS).every((s) => s === 401)).toBe(true);
    expect(statuses.slice(PER_ADDRESS)).toEqual([429, 429, 429]);

    const refused = await send('127.0.5.1', 'GET', invariants);
    expect(refused.status).toBe(429);
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(trpcError(refused).data).toMatchObject({ code: 'TOO_MANY_REQUESTS', httpStatus: 429 });
    expect(trpcError(refused).message).toMatch(/Too many API calls from this address: the limit is 60 a minute/);

    expect((await send('127.0.5.2', 'GET', invariants)).status).toBe(401);
    await new Promise((r) => setTimeout(r, retryAfter * 1000 + 500));
    expect((await send('127.0.5.1', 'GET', invariants)).status).toBe(401);
  }, 120_000);

  it('a batched request counts as its number of calls', async () => {
    const batch = `/api/trpc/${Array.from({ length: MAX_BATCH_SIZE }, () => 'health.invariants').join(',')}?batch=1&input=${encodeURIComponent('{}')}`;
    const allowed = Math.floor(PER_ADDRESS / MAX_BATCH_SIZE);
    for (let i = 0; i < allowed; i++) expect((await send('127.0.5.3', 'GET', batch)).status).toBe(401);
    const refused = await send('127.0.5.3', 'GET', batch);
    expect(refused.status).toBe(429);
    const calls = JSON.parse(refused.body) as { error: { json: { data: { code: string } } } }[];
    expect(calls).toHaveLength(MAX_BATCH_SIZE);
    expect(calls.every((c) => c.error.json.data.code === 'TOO_MANY_REQUESTS')).toBe(true);
  });

  it('a forged X-Forwarded-For makes no new bucket (TRUSTED_PROXIES unset)', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < PER_ADDRESS + 2; i++) statuses.push((await send('127.0.5.4', 'GET', invariants, { headers: { 'x-forwarded-for': `198.51.100.${i + 1}` } })).status);
    expect(statuses.slice(PER_ADDRESS)).toEqual([429, 429]);
  });

  it('a flood with one API key gets 429, on /api/trpc and /api/v1 alike, while another key from the same address is served', async () => {
    const [flooding, quiet] = keys as [string, string];
    const statuses: number[] = [];
    for (let i = 0; i < PER_KEY + 2; i++) statuses.push((await send('127.0.6.1', 'GET', invariants, { headers: bearer(flooding) })).status);
    expect(statuses.slice(0, PER_KEY).every((s) => s === 200)).toBe(true);
    expect(statuses.slice(PER_KEY)).toEqual([429, 429]);
    const refused = await send('127.0.6.1', 'GET', invariants, { headers: bearer(flooding) });
    expect(trpcError(refused).message).toMatch(/from this API key/);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);

    // The same key's bucket on the REST endpoints, answered in their own error shape.
    const rest = await send('127.0.6.1', 'POST', '/api/v1/enrollments', {
      headers: { ...bearer(flooding), 'content-type': 'application/json' },
      body: JSON.stringify({ workflowId, email: 'flood@example.com' }),
    });
    expect(rest.status).toBe(429);
    expect(Number(rest.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // /api/v1 answers problem details (docs/api.md), with the same code.
    expect(JSON.parse(rest.body)).toMatchObject({ type: '/problems/rate-limited', status: 429, code: 'TOO_MANY_REQUESTS', detail: expect.stringMatching(/from this API key/) });
    expect(await t.db.contact.count({ where: { email: 'flood@example.com' } })).toBe(0);

    expect((await send('127.0.6.1', 'GET', invariants, { headers: bearer(quiet) })).status).toBe(200);
  });

  it('a signed-in session has its own bucket', async () => {
    const cookie = await signInFrom('127.0.6.2');
    const statuses: number[] = [];
    for (let i = 0; i < PER_SESSION + 1; i++) statuses.push((await send('127.0.6.3', 'GET', invariants, { headers: { cookie } })).status);
    expect(statuses.slice(0, PER_SESSION).every((s) => s === 200)).toBe(true);
    expect(statuses[PER_SESSION]).toBe(429);
    expect(trpcError(await send('127.0.6.3', 'GET', invariants, { headers: { cookie } })).message).toMatch(/from this session/);
  });
});

async function signInFrom(from: string): Promise<string> {
  const answer = await send(from, 'POST', '/api/auth/sign-in/email', {
    headers: { 'content-type': 'application/json', origin: server.base },
    body: JSON.stringify({ email: 'owner@demo.waypost.dev', password: 'waypost-demo' }),
  });
  expect(answer.status).toBe(200);
  return ([answer.headers['set-cookie']].flat() as string[]).map((c) => c.split(';')[0]).join('; ');
}

/** The server process's peak resident memory (VmHWM), in bytes. */
function peakMemory(): number {
  const kb = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${server.child.pid}/status`, 'utf8'))?.[1];
  return Number(kb) * 1024;
}

describe('request bodies', () => {
  const TEN_MB = 10 * 1024 * 1024;

  it.each([
    ['with Content-Length', false],
    ['chunked', true],
  ])('an unauthenticated 10 MB body %s is 413 before the server reads it, and its memory does not grow by 10 MB', async (_, chunked) => {
    // Warm: the route's first request loads its code.
    await send('127.0.7.1', 'POST', '/api/trpc/enrollments.importCsv', { headers: { 'content-type': 'application/json' }, body: '{}' });
    const before = peakMemory();
    for (const path of ['/api/trpc/enrollments.importCsv', '/api/v1/enrollments', '/api/auth/sign-in/email']) {
      const answer = await send('127.0.7.1', 'POST', path, { headers: { 'content-type': 'application/json' }, stream: { bytes: TEN_MB, chunked } });
      expect(answer.status, path).toBe(413);
      // /api/v1 answers problem details; the other routes their usual error shape. Same code.
      expect(JSON.parse(answer.body), path).toMatchObject(path.startsWith('/api/v1/') ? { status: 413, code: 'PAYLOAD_TOO_LARGE' } : { error: { code: 'PAYLOAD_TOO_LARGE' } });
      expect(answer.sent, path).toBeLessThan(TEN_MB);
    }
    expect(peakMemory() - before).toBeLessThan(TEN_MB);
  }, 120_000);

  it('a small chunked body without credentials is served as usual; an invented key or cookie does not buy the large bound', async () => {
    const small = await send('127.0.7.2', 'POST', '/api/trpc/events.track', {
      headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      body: JSON.stringify({ json: { name: 'x', email: 'x@example.com' } }),
    });
    expect(small.status).toBe(401);
    for (const headers of [bearer(`wp_${'x'.repeat(40)}`), { cookie: 'waypost.session_token=forged.signature' }]) {
      // The server looks the credential up before answering, so the kernel may take all of a
      // 1 MB body meanwhile: only the answer is asserted here, its memory in the test above.
      for (const chunked of [false, true]) {
        const answer = await send('127.0.7.2', 'POST', '/api/trpc/enrollments.importCsv', { headers: { 'content-type': 'application/json', ...headers }, stream: { bytes: 1024 * 1024, chunked } });
        expect(answer.status).toBe(413);
        expect(JSON.parse(answer.body)).toMatchObject({ error: { code: 'PAYLOAD_TOO_LARGE', message: expect.stringMatching(/without a session or API key/) } });
      }
    }
  });

  it('a real key may send a large body, chunked or not', async () => {
    const csv = `email\n${Array.from({ length: 2000 }, (_, i) => `bulk-${i}@example.com`).join('\n')}\n`;
    const body = JSON.stringify({ json: { workflowId, csv } });
    expect(body.length).toBeGreaterThan(32 * 1024);
    for (const chunked of [false, true]) {
      const answer = await send('127.0.7.3', 'POST', '/api/trpc/enrollments.importCsv', {
        headers: { ...bearer(keys[1]!), 'content-type': 'application/json', ...(chunked ? { 'transfer-encoding': 'chunked' } : {}) },
        body,
      });
      expect(answer.status, answer.body).toBe(200);
    }
  });
});

describe('cookies and origins', () => {
  const track = (from: string, headers: Record<string, string>) =>
    send(from, 'POST', '/api/trpc/events.track', {
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ json: { name: 'origin_check', email: 'origin@example.com' } }),
    });

  it('a signed-in mutation from another site is 403 and changes nothing; one from the console passes', async () => {
    const cookie = await signInFrom('127.0.8.1');
    const events = () => t.db.event.count({ where: { name: 'origin_check' } });
    const crossSite: Record<string, string>[] = [
      { origin: 'http://evil.example' },
      { origin: 'null' },
      { origin: server.base, 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'same-site' },
    ];
    for (const headers of crossSite) {
      const refused = await track('127.0.8.2', { cookie, ...headers });
      expect(refused.status, JSON.stringify(headers)).toBe(403);
      expect(trpcError(refused)).toMatchObject({ data: { code: 'FORBIDDEN' }, message: expect.stringMatching(/console's own pages/) });
    }
    expect(await events()).toBe(0);
    expect((await track('127.0.8.2', { cookie, origin: server.base, 'sec-fetch-site': 'same-origin' })).status).toBe(200);
    // An API key is never sent by a browser on its own: not checked.
    expect((await track('127.0.8.2', { ...bearer(keys[1]!), origin: 'http://evil.example' })).status).toBe(200);
    expect(await events()).toBe(2);
  });

  it('/api/v1 ignores cookies: a session cookie alone is 401', async () => {
    const cookie = await signInFrom('127.0.8.3');
    // The same cookie is a signed-in person on /api/trpc.
    expect((await send('127.0.8.4', 'GET', invariants, { headers: { cookie } })).status).toBe(200);
    const answer = await send('127.0.8.4', 'POST', '/api/v1/enrollments', {
      headers: { cookie, origin: server.base, 'content-type': 'application/json' },
      body: JSON.stringify({ workflowId, email: 'cookie-only@example.com' }),
    });
    expect(answer.status).toBe(401);
    expect(await t.db.contact.count({ where: { email: 'cookie-only@example.com' } })).toBe(0);
  });
});
