import net from 'node:net';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readMigrations } from '../../server/migrator';
import { READY_TIMEOUT_MS } from '../../server/http/health';
import { newApiKey } from '../support/auth';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createProject, twoEmailWorkflow, workflowFrom } from '../support/fixtures';
import { connectionRefused, waitFor } from '../support/processes';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy';
import { startWebServer, type WebServer } from '../support/web-server';

// /healthz and /readyz of the real web server (scripts/web.ts), which reaches its database
// through a TCP proxy the test cuts: liveness never asks the database, readiness answers
// 503 with a reason when the database is cut, black-holed or missing a migration, and 200
// again once it is whole. Neither is rate limited. While the database is cut, the API's
// limits are counted by the insurance in memory (server/db/rate-counter.ts): a key still
// gets its allowance and no more. And SIGTERM: /readyz turns 503 at once, new connections
// are refused, a request in flight finishes, and the process exits 0 within SHUTDOWN_SECONDS.

const PER_KEY = 4;
const PER_ADDRESS = 6;

let t: TestDatabase;
let proxy: TcpProxy;
let server: WebServer;
let projectId = '';

beforeAll(async () => {
  t = await freshDatabase();
  projectId = (await createProject(t.db)).id;
  const target = new URL(t.url);
  proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  server = await startWebServer(proxy.url(t.url), { RATE_LIMIT_PER_KEY: String(PER_KEY), RATE_LIMIT_PER_ADDRESS: String(PER_ADDRESS), RATE_LIMIT_PER_SESSION: '0' });
}, 900_000);

afterAll(async () => {
  await server?.stop();
  await proxy?.close();
  await t?.drop();
});

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function send(port: number, method: string, path: string, headers: Record<string, string> = {}, body?: string, from = '127.0.0.1'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const all: Record<string, string | number> = { ...headers };
    if (body !== undefined) all['content-length'] = Buffer.byteLength(body);
    const req = httpRequest({ host: '127.0.0.1', port, path, method, headers: all, localAddress: from, agent: false }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const get = (path: string, from?: string) => send(server.port, 'GET', path, {}, undefined, from);

describe('/healthz and /readyz', () => {
  it('answer 200 JSON with the security headers of every answer, never cached, and are not rate limited', async () => {
    for (const path of ['/healthz', '/readyz']) {
      const answers = [];
      // More than the address's allowance, from one address: none of them is counted.
      for (let i = 0; i < PER_ADDRESS * 2; i++) answers.push(await get(path, '127.0.61.1'));
      expect(answers.map((a) => a.status)).toEqual(Array(PER_ADDRESS * 2).fill(200));
      const [a] = answers;
      expect(JSON.parse(a!.body)).toEqual({ status: 'ok' });
      expect(a!.headers).toMatchObject({
        'content-type': 'application/json',
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
        'x-frame-options': 'DENY',
        'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
      });
      const head = await send(server.port, 'HEAD', path);
      expect(head.status).toBe(200);
      expect(head.body).toBe('');
      const post = await send(server.port, 'POST', path, {}, '{}');
      expect(post.status).toBe(405);
      expect(post.headers.allow).toBe('GET, HEAD');
    }
    // The address was not charged: its API allowance is whole.
    expect((await get('/api/v1/nothing-here', '127.0.61.1')).status).not.toBe(429);
  });

  it('/readyz is 503 with a reason while the database is cut or black-holed, /healthz stays 200, and both recover', async () => {
    for (const mode of ['refuse', 'blackhole'] as const) {
      await proxy.cut(mode);
      try {
        const started = Date.now();
        const ready = await get('/readyz');
        const took = Date.now() - started;
        expect(ready.status).toBe(503);
        expect(JSON.parse(ready.body)).toEqual({
          status: 'unavailable',
          reason: mode === 'refuse' ? 'the database is unreachable' : `the database did not answer within ${READY_TIMEOUT_MS} ms`,
        });
        expect(took).toBeLessThan(READY_TIMEOUT_MS + 1_500);
        expect(ready.headers['x-content-type-options']).toBe('nosniff');
        // No host, user or driver message in the reason.
        expect(ready.body).not.toMatch(/127\.0\.0\.1|postgres|ECONN/i);
        const live = await get('/healthz');
        expect(live.status).toBe(200);
      } finally {
        await proxy.restore();
      }
      await waitFor('readiness to come back', async () => (await get('/readyz')).status === 200, 30_000, 200);
    }
  }, 120_000);

  it('/readyz is 503 naming the migrations not applied, and 200 once they are', async () => {
    const last = readMigrations().at(-1)!.name;
    const [row] = await t.query(`DELETE FROM "_prisma_migrations" WHERE migration_name = $1 RETURNING *`, [last]);
    try {
      const ready = await get('/readyz');
      expect(ready.status).toBe(503);
      expect(JSON.parse(ready.body)).toEqual({ status: 'unavailable', reason: 'migrations pending', pending: [last] });
    } finally {
      await t.query(
        `INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, logs, rolled_back_at, started_at, applied_steps_count) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [row.id, row.checksum, row.finished_at, row.migration_name, row.logs, row.rolled_back_at, row.started_at, row.applied_steps_count],
      );
    }
    expect((await get('/readyz')).status).toBe(200);
  });
});

describe('the API limits while PostgreSQL is unreachable', () => {
  it('the insurance in memory takes over: a key gets its allowance (503: no database) and then 429, and PostgreSQL counts again once back', async () => {
    for (let round = 0; round < 3; round++) {
      const key = (await newApiKey(t.db, projectId, 'MARKETER')).secret;
      const from = `127.0.62.${round + 1}`;
      const call = () => send(server.port, 'POST', '/api/v1/enrollments', { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, '{}', from);
      // One call counted in PostgreSQL first (400: bad input).
      expect((await call()).status).toBe(400);
      await proxy.cut('refuse');
      const during: number[] = [];
      try {
        for (let i = 0; i < PER_KEY + 2; i++) during.push((await call()).status);
      } finally {
        await proxy.restore();
      }
      // The last count this process saw was 1: three more are let through (to a 503, the
      // database being gone), then the insurance refuses.
      expect(during).toEqual([...Array(PER_KEY - 1).fill(503), 429, 429, 429]);
      await waitFor('the database to answer', async () => (await get('/readyz')).status === 200, 30_000, 200);
      // PostgreSQL's count (1) decides again, not the memory's.
      const after: number[] = [];
      for (let i = 0; i < PER_KEY; i++) after.push((await call()).status);
      expect(after).toEqual([...Array(PER_KEY - 1).fill(400), 429]);
    }
    expect(server.log()).toContain("counting in this process's memory");
  }, 120_000);
});

/** A raw connection that sends `text` now and lets the test send more later; `received` is everything the server wrote until it closed. */
function rawConnection(port: number, text: string) {
  const socket = net.connect(port, '127.0.0.1');
  let data = '';
  socket.on('data', (c: Buffer) => (data += c.toString()));
  const received = new Promise<string>((resolve) => socket.on('close', () => resolve(data)));
  socket.on('error', () => {});
  socket.write(text);
  return { more: (rest: string) => socket.write(rest), received };
}

describe('SIGTERM', () => {
  it('/readyz turns 503 at once, new connections are refused, a request in flight finishes, and the process exits 0 within SHUTDOWN_SECONDS', async () => {
    const SHUTDOWN_SECONDS = 4;
    const workflowId = (await workflowFrom(t.db, projectId, twoEmailWorkflow())).id;
    const key = (await newApiKey(t.db, projectId, 'MARKETER')).secret;
    for (let round = 0; round < 2; round++) {
      const web = await startWebServer(t.url, { SHUTDOWN_SECONDS: String(SHUTDOWN_SECONDS), RATE_LIMIT_PER_KEY: '0', RATE_LIMIT_PER_ADDRESS: '0' });
      try {
        const exited = new Promise<number | null>((resolve) => web.child.once('exit', (code) => resolve(code)));
        const body = JSON.stringify({ workflowId, email: `drain-${round}@example.com` });
        const head = `POST /api/v1/enrollments HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`;
        const half = Math.floor(body.length / 2);
        // In flight when the signal comes: half its body sent.
        const inFlight = rawConnection(web.port, head + body.slice(0, half));
        // Never finished: the bound must end it.
        const stuck = rawConnection(web.port, head + body.slice(0, half));
        await new Promise((r) => setTimeout(r, 300));

        const signalledAt = Date.now();
        web.child.kill('SIGTERM');
        await waitFor('new connections to be refused', () => connectionRefused(web.port), 10_000, 20);
        // The rest of the body, and right behind it on the same connection, /readyz.
        inFlight.more(body.slice(half) + 'GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
        const answers = await inFlight.received;
        const statuses = [...answers.matchAll(/^HTTP\/1\.1 (\d{3})/gm)].map((m) => Number(m[1]));
        expect(statuses, answers).toEqual([200, 503]);
        expect(answers).toContain('"reason":"draining: this process is shutting down"');

        expect(await exited).toBe(0);
        const took = Date.now() - signalledAt;
        // The stuck request held the drain to its bound, and no longer.
        expect(took).toBeGreaterThanOrEqual(SHUTDOWN_SECONDS * 1000 - 500);
        expect(took).toBeLessThan(SHUTDOWN_SECONDS * 1000 + 3_000);
        expect(await stuck.received).toBe('');
        expect(web.log()).toContain(`SIGTERM: draining (at most ${SHUTDOWN_SECONDS} s)`);
      } finally {
        await web.stop();
      }
    }
    expect(await t.db.workflowExecution.count({ where: { workflowId } })).toBe(2);
  }, 300_000);
});
