import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newApiKey } from '../support/auth';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createProject, twoEmailWorkflow, workflowFrom } from '../support/fixtures';
import { startWorkerProcess, waitFor, type WorkerProcess } from '../support/processes';
import { apiClient, executionIdOf, expectAllRunOnce, type Answer } from '../support/reliability';
import { startWebServer, type WebServer } from '../support/web-server';

// The web tier under load: 50 concurrent backends enroll contacts, track events and read,
// over /api/v1 and /api/trpc with API keys, for a bounded time against the product's own
// web server (its default pool and wait bounds) while two worker processes run what they
// enroll. No answer is a 5xx; a 429 (none expected: the limits are off here, and
// test/security/api-limits.test.ts covers them) would carry Retry-After. Afterwards every
// accepted enrollment ran exactly once and every invariant holds.

const CLIENTS = 50;
/** How long the clients keep calling: a bound on the test, not an assertion. */
const DURATION_MS = 15_000;

let t: TestDatabase;
let server: WebServer | undefined;
const workers: WorkerProcess[] = [];
let workflowId = '';
let keys: string[] = [];

beforeAll(async () => {
  t = await freshDatabase();
  const project = await createProject(t.db);
  workflowId = (await workflowFrom(t.db, project.id, twoEmailWorkflow())).id;
  // Five keys, ten clients each, as several backends of one project.
  keys = await Promise.all([0, 1, 2, 3, 4].map(async (i) => (await newApiKey(t.db, project.id, 'MARKETER', `backend ${i}`)).secret));
  server = await startWebServer(t.url, { RATE_LIMIT_PER_KEY: '0', RATE_LIMIT_PER_ADDRESS: '0', RATE_LIMIT_PER_SESSION: '0' });
  for (let i = 0; i < 2; i++) workers.push(await startWorkerProcess(t.url, { concurrency: 8 }));
}, 900_000);

afterAll(async () => {
  for (const w of workers) w.kill('SIGKILL');
  await server?.stop();
  await t?.drop();
});

type Kind = 'enroll v1' | 'enroll tRPC' | 'track v1' | 'track tRPC' | 'list tRPC' | 'batch tRPC';
const KINDS: Kind[] = ['enroll v1', 'enroll tRPC', 'track v1', 'track tRPC', 'list tRPC', 'batch tRPC'];

describe('the web tier under load', () => {
  it(
    `${CLIENTS} concurrent clients enrolling, tracking and reading while workers run: no 5xx, every enrollment run once, invariants hold`,
    async () => {
      const answers = new Map<Kind, number[]>(KINDS.map((k) => [k, []]));
      const failures: string[] = [];
      const withoutRetryAfter: string[] = [];
      const accepted: string[] = [];
      const latencies: number[] = [];
      const deadline = Date.now() + DURATION_MS;

      const client = async (n: number) => {
        const api = apiClient(server!.base, keys[n % keys.length]!);
        const mine: string[] = [];
        // Until the deadline, and at least one call of each kind whatever the machine's speed.
        for (let call = 0; call < KINDS.length || Date.now() < deadline; call++) {
          const kind = KINDS[(n + call) % KINDS.length]!;
          const email = `load-${n}-${call}@example.com`;
          const someone = mine.length ? mine[call % mine.length]! : email;
          let a: Answer;
          const started = Date.now();
          switch (kind) {
            case 'enroll v1':
              a = await api.enrollRest(workflowId, email);
              break;
            case 'enroll tRPC':
              a = await api.mutation('enrollments.enroll', { workflowId, email });
              break;
            case 'track v1':
              a = await api.trackRest('purchase', someone, `v1-${n}-${call}`);
              break;
            case 'track tRPC':
              a = await api.mutation('events.track', { name: 'visit', email: someone, data: { page: call } });
              break;
            case 'list tRPC':
              a = await api.query('executions.list', { workflowId, limit: 20 });
              break;
            case 'batch tRPC':
              a = await api.batch([
                { path: 'workflows.list', input: undefined },
                { path: 'executions.stats', input: { workflowId } },
              ]);
              break;
          }
          answers.get(kind)!.push(a.status);
          latencies.push(Date.now() - started);
          if (a.status >= 500) failures.push(`${kind} ${a.status}: ${JSON.stringify(a.body).slice(0, 300)}`);
          if (a.status === 429 && !a.headers.get('retry-after')) withoutRetryAfter.push(kind);
          if (a.status === 200 && kind.startsWith('enroll')) {
            accepted.push(executionIdOf(a));
            mine.push(email);
          }
        }
      };
      await Promise.all(Array.from({ length: CLIENTS }, (_, n) => client(n)));

      const summary = Object.fromEntries(
        [...answers].map(([kind, statuses]) => [kind, Object.fromEntries([...new Set(statuses)].map((s) => [s, statuses.filter((x) => x === s).length]))]),
      );
      latencies.sort((a, b) => a - b);
      const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
      console.log(`load: ${CLIENTS} clients for ${DURATION_MS / 1000} s, ${latencies.length} calls, p50 ${at(0.5)} ms, p99 ${at(0.99)} ms`, JSON.stringify(summary));
      expect(failures, server!.log().slice(-4000)).toEqual([]);
      expect(withoutRetryAfter).toEqual([]);
      // With the limits off, every call of every kind succeeds (each kind at least once per client).
      for (const kind of KINDS) {
        const statuses = answers.get(kind)!;
        expect(statuses.length, kind).toBeGreaterThanOrEqual(CLIENTS);
        expect(statuses.filter((s) => s !== 200 && s !== 429), kind).toEqual([]);
      }
      expect(server!.log()).not.toContain('failed (request');

      await expectAllRunOnce(t, workflowId, accepted, 120_000);
      await waitFor('every tracked event to be dispatched', async () => {
        const [row] = await t.query(`SELECT count(*)::int AS n FROM "Event" WHERE "processedAt" IS NULL AND "deadAt" IS NULL`);
        return row.n === 0;
      });
      const [dead] = await t.query(`SELECT count(*)::int AS n FROM "Event" WHERE "deadAt" IS NOT NULL`);
      expect(dead.n).toBe(0);
    },
    300_000,
  );
});
