import { randomBytes, randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIGN_IN_MAX_ATTEMPTS } from '../../server/auth/auth';
import { TEST_SENDS_PER_MINUTE } from '../../server/trpc/routers/templates.render';
import { createPerson, newApiKey } from '../support/auth';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createProject } from '../support/fixtures';
import { startWebServer, type WebServer } from '../support/web-server';

// Two web processes (scripts/web.ts, as a load balancer would have them) on one database
// enforce one limit, not one each: a key hammered through both at once gets
// RATE_LIMIT_PER_KEY calls a minute in all, an address signing in through both gets
// SIGN_IN_MAX_ATTEMPTS attempts, and a person's test emails are TEST_SENDS_PER_MINUTE. The tolerance is zero, and that is the claim: a bucket's
// window starts at its first call (each round uses a new key, and a new address), a round
// takes well under its minute, and the counter is one upsert under a row lock
// (server/db/rate-counter.ts), so no call can see a count older than another's. The
// insurance in memory is not involved while PostgreSQL answers.
//
// Shown to matter: with the limits counted in each process's memory (the code before
// server/db/rate-counter.ts), the first round allowed 2 × PER_KEY calls (each process its
// own PER_KEY) and 2 × SIGN_IN_MAX_ATTEMPTS sign-ins; with templates.testSend's limiter
// in memory (RateLimiterMemory, before this test), 20 test emails of 10.

const PER_KEY = 12;
const ROUNDS = 6;

let t: TestDatabase;
let servers: WebServer[] = [];
let projectId = '';

beforeAll(async () => {
  t = await freshDatabase();
  projectId = (await createProject(t.db)).id;
  // One AUTH_SECRET for both, as a deployment has (a session made by one is checked by the other).
  const limits = { RATE_LIMIT_PER_KEY: String(PER_KEY), RATE_LIMIT_PER_ADDRESS: '0', RATE_LIMIT_PER_SESSION: '0', AUTH_SECRET: randomBytes(32).toString('base64url') };
  servers = await Promise.all([startWebServer(t.url, limits), startWebServer(t.url, limits)]);
}, 900_000);

afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  await t?.drop();
});

function postFull(server: WebServer, path: string, headers: Record<string, string>, body: string, from = '127.0.0.1'): Promise<{ status: number; cookies: string[] }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port: server.port, path, method: 'POST', localAddress: from, agent: false, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, cookies: [res.headers['set-cookie'] ?? []].flat() }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function post(server: WebServer, path: string, headers: Record<string, string>, body: string, from = '127.0.0.1'): Promise<number> {
  return postFull(server, path, headers, body, from).then((answer) => answer.status);
}

describe('two web processes, one limit', () => {
  it(`${ROUNDS} rounds: one key hammered through both at once gets RATE_LIMIT_PER_KEY calls in all`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const key = (await newApiKey(t.db, projectId, 'MARKETER')).secret;
      const statuses = await Promise.all(
        Array.from({ length: 4 * PER_KEY }, (_, i) => post(servers[i % 2]!, '/api/v1/enrollments', { authorization: `Bearer ${key}` }, '{}').then((status) => ({ server: i % 2, status }))),
      );
      // Allowed calls reach the endpoint and are refused there as bad input (400): nothing is enrolled.
      expect(statuses.filter((s) => s.status !== 400 && s.status !== 429), `round ${round}`).toEqual([]);
      const allowed = statuses.filter((s) => s.status === 400);
      expect(allowed.length, `round ${round}: allowed through both processes`).toBe(PER_KEY);
      // Both processes served and refused: the count was shared, not one process taking it all.
      for (const server of [0, 1]) expect(statuses.filter((s) => s.server === server && s.status === 429).length).toBeGreaterThan(0);
    }
  }, 120_000);

  it(`${ROUNDS} rounds: one address signing in through both at once gets ${SIGN_IN_MAX_ATTEMPTS} attempts in all`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const from = `127.0.44.${round + 1}`;
      const statuses = await Promise.all(
        Array.from({ length: 4 * SIGN_IN_MAX_ATTEMPTS }, (_, i) => {
          const server = servers[i % 2]!;
          // A different account each time, so that only the per-address limit can refuse.
          const body = JSON.stringify({ email: `nobody-${randomUUID()}@example.com`, password: 'a wrong password' });
          return post(server, '/api/auth/sign-in/email', { origin: server.base }, body, from);
        }),
      );
      expect(statuses.filter((s) => s !== 401 && s !== 429), `round ${round}`).toEqual([]);
      expect(statuses.filter((s) => s === 401).length, `round ${round}: attempts let through both processes`).toBe(SIGN_IN_MAX_ATTEMPTS);
    }
    // Counted in PostgreSQL: one bucket per address for the sign-in path.
    const rows = await t.query(`SELECT key, points FROM "RateLimitBucket" WHERE key LIKE 'auth:%' ORDER BY key`);
    expect(rows.filter((r) => r.key.includes('127.0.44.')).map((r) => r.points)).toEqual(Array(ROUNDS).fill(4 * SIGN_IN_MAX_ATTEMPTS));
  }, 120_000);

  it(`${ROUNDS} rounds: one person's test emails through both at once are ${TEST_SENDS_PER_MINUTE} a minute in all`, async () => {
    // templates.testSend's own allowance (TEST_SENDS_PER_MINUTE a person) is counted in the
    // same table: three times the allowance, sent by one signed-in person through both
    // processes at once, sends the allowance once. Counted in each process's memory (the
    // code before), each process let its own 10 through: 20.
    for (let round = 0; round < ROUNDS; round++) {
      const email = `tester-${round}-${randomUUID()}@example.com`;
      await createPerson(t.db, { projectId, email, password: 'a long enough password', role: 'MARKETER' });
      const from = `127.0.45.${round + 1}`;
      const signIn = await postFull(servers[0]!, '/api/auth/sign-in/email', { origin: servers[0]!.base }, JSON.stringify({ email, password: 'a long enough password' }), from);
      expect(signIn.status, `round ${round}: sign-in`).toBe(200);
      const cookie = signIn.cookies.map((c) => c.split(';')[0]).join('; ');
      const body = JSON.stringify({ json: { subject: `round ${round}`, body: 'a test' } });
      const statuses = await Promise.all(
        Array.from({ length: 3 * TEST_SENDS_PER_MINUTE }, (_, i) => {
          const server = servers[i % 2]!;
          return post(server, '/api/trpc/templates.testSend', { cookie, origin: server.base, 'sec-fetch-site': 'same-origin' }, body, from);
        }),
      );
      expect(statuses.filter((s) => s !== 200 && s !== 429), `round ${round}`).toEqual([]);
      expect(statuses.filter((s) => s === 200).length, `round ${round}: test emails sent through both processes`).toBe(TEST_SENDS_PER_MINUTE);
    }
  }, 120_000);
});
