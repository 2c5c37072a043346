import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enroll } from '../../server/engine/enrollment';
import { notifyWorkers } from '../../server/engine/wakeup';
import { DATABASE_RETRY_AFTER_SECONDS } from '../../server/trpc/errors';
import { newApiKey } from '../support/auth';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createContact, createProject, twoEmailWorkflow, workflowFrom } from '../support/fixtures';
import { startWorkerProcess, waitFor, type WorkerProcess } from '../support/processes';
import { answer, apiClient, executionIdOf, expectAllRunOnce, type Answer } from '../support/reliability';
import { startTcpProxy, type CutMode, type TcpProxy } from '../support/tcp-proxy';
import { startWebServer, type WebServer } from '../support/web-server';

// PostgreSQL unreachable, as the web server and a worker see it: both reach the test's
// database through a TCP proxy the test cuts (connections reset and refused, or accepted
// and never answered) and restores, while the test itself keeps its direct connection.
// The API answers 503 with a sentence and Retry-After within a bounded time, never a 500
// or a hang; the worker logs the outage once, backs off, and resumes by itself; a step in
// flight when the database went away is run again under the lease rules, never twice.
//
// Shown to matter: with the outage check removed from the worker loop (every failed pass
// logged as "worker pass failed"), 'the worker to notice the outage' timed out. The
// router's mapping is shown to matter in database-errors.test.ts. Without the outage
// answer in server/http/auth-endpoint.ts, a sign-in was a 500 with an empty body; without
// P2028's "Unable to start a transaction in the given time" counted as an outage, a sign-in
// during the black hole was a 500 too.

/** How long an answer may take while the database is gone: generous, but not a hang. */
const ANSWER_BOUND_MS = 10_000;

let t: TestDatabase;
let proxy: TcpProxy;
let server: WebServer | undefined;
let worker: WorkerProcess | undefined;
let projectId = '';
let workflowId = '';
let api: ReturnType<typeof apiClient>;
const accepted: string[] = [];
let sequence = 0;

beforeAll(async () => {
  t = await freshDatabase();
  const project = await createProject(t.db);
  projectId = project.id;
  workflowId = (await workflowFrom(t.db, projectId, twoEmailWorkflow())).id;
  const key = await newApiKey(t.db, projectId, 'MARKETER');
  const target = new URL(t.url);
  proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  const viaProxy = proxy.url(t.url);
  server = await startWebServer(viaProxy, { RATE_LIMIT_PER_KEY: '0', RATE_LIMIT_PER_ADDRESS: '0' });
  // A short lease, so a step cut off mid-way is picked up again within the test. The
  // pause after claiming an email step keeps steps in flight when the cut comes.
  worker = await startWorkerProcess(viaProxy, {
    concurrency: 4,
    env: { LEASE_SECONDS: '2', WAYPOST_FAULT_PAUSE_AFTER_CLAIM_MS: '800', WAYPOST_FAULT_PAUSE_STEP_TYPE: 'SEND_EMAIL' },
  });
  api = apiClient(server.base, key.secret);
}, 900_000);

afterAll(async () => {
  worker?.kill('SIGKILL');
  await server?.stop();
  await proxy?.close();
  await t?.drop();
});

function nextEmail(): string {
  return `outage-${sequence++}@example.com`;
}

async function timed(call: () => Promise<Answer>): Promise<Answer & { ms: number }> {
  const started = Date.now();
  const a = await call();
  return { ...a, ms: Date.now() - started };
}

function expectUnavailable(a: Answer & { ms: number }, what: string): void {
  // A 500's cause is in the server's log, not its answer.
  expect(a.status, `${what}: ${JSON.stringify(a.body)}${a.status === 503 ? '' : `\nweb server log:\n${server!.log().slice(-3000)}`}`).toBe(503);
  expect(a.headers.get('retry-after'), what).toBe(String(DATABASE_RETRY_AFTER_SECONDS));
  expect(JSON.stringify(a.body), what).toContain('The database is unreachable right now');
  // The driver's own words (host, port) stay in the server's log.
  expect(JSON.stringify(a.body), what).not.toMatch(/127\.0\.0\.1|ECONN|Can't reach/);
  expect(a.ms, `${what} answered within the bound`).toBeLessThan(ANSWER_BOUND_MS);
}

/** A person signing in with a password, as the sign-in page does. */
async function signIn(email: string, password: string): Promise<Answer> {
  return answer(
    await fetch(`${server!.base}/api/auth/sign-in/email`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: server!.base },
      body: JSON.stringify({ email, password }),
    }),
  );
}

function count(text: string, needle: string): number {
  return text.split(needle).length - 1;
}

describe('PostgreSQL unreachable', () => {
  const outages: CutMode[] = ['refuse', 'blackhole', 'refuse'];

  it(
    'the API answers 503 with Retry-After within the bound, the worker backs off and resumes, and nothing is lost or sent twice',
    async () => {
      for (const [round, mode] of outages.entries()) {
        // Up: enrollments over both endpoints are accepted, and the worker runs them.
        for (let i = 0; i < 4; i++) {
          const a = i % 2 === 0 ? await api.enrollRest(workflowId, nextEmail()) : await api.mutation('enrollments.enroll', { workflowId, email: nextEmail() });
          expect(a.status, JSON.stringify(a.body)).toBe(200);
          accepted.push(executionIdOf(a));
        }
        // Cut while the worker holds steps (claimed, paused before their outcome is written).
        await waitFor(
          'a step in flight',
          async () => (await t.query(`SELECT 1 FROM "StepExecution" WHERE status = 'RUNNING' LIMIT 1`)).length > 0,
          60_000,
          20,
        );
        await proxy.cut(mode);

        const unavailable = [
          ['POST /api/v1/enrollments', () => api.enrollRest(workflowId, nextEmail())],
          ['POST /api/v1/events', () => api.trackRest('purchase', `outage-0@example.com`, `order-${round}`)],
          ['tRPC enrollments.enroll', () => api.mutation('enrollments.enroll', { workflowId, email: nextEmail() })],
          ['tRPC executions.list', () => api.query('executions.list', { workflowId })],
          ['tRPC batch', () => api.batch([{ path: 'workflows.list', input: undefined }, { path: 'executions.stats', input: { workflowId } }])],
          ['POST /api/auth/sign-in/email', () => signIn('someone@example.com', 'a password of some length')],
        ] as const;
        for (const [what, call] of unavailable) expectUnavailable(await timed(call), `${mode} ${what}`);
        // Three at once, as a console page's queries come.
        for (const a of await Promise.all([0, 1, 2].map(() => timed(() => api.query('workflows.list', undefined))))) {
          expectUnavailable(a, `${mode} concurrent workflows.list`);
        }

        // Work keeps arriving by another road (the test's own connection): the worker must
        // find it when it is back.
        for (let i = 0; i < 3; i++) {
          const contact = await createContact(t.db, projectId, nextEmail());
          const r = await enroll(t.db, { projectId, workflowId, contactId: contact.id });
          accepted.push((r as { executionId: string }).executionId);
        }
        await waitFor('the worker to notice the outage', async () => count(worker!.output(), 'database unreachable; backing off') === round + 1, 60_000, 100);

        await proxy.restore();
        await notifyWorkers(t.db);
        // Back: the API answers again by itself (no restart), and the worker resumes.
        await waitFor('the API to answer again', async () => (await api.query('workflows.list', undefined)).status === 200, 60_000, 250);
        const back = await api.enrollRest(workflowId, nextEmail());
        expect(back.status, JSON.stringify(back.body)).toBe(200);
        // Sign-in answers for itself again: a wrong password is a 401, not an outage.
        expect((await signIn('someone@example.com', 'a password of some length')).status).toBe(401);
        accepted.push(executionIdOf(back));
        await waitFor('the worker to resume', async () => count(worker!.output(), 'database reachable again; resuming') === round + 1, 60_000, 100);
        await expectAllRunOnce(t, workflowId, accepted);
      }
      const log = worker!.output();
      // Once per outage, not once per failed pass or per dropped connection.
      expect(count(log, 'database unreachable; backing off')).toBe(outages.length);
      expect(count(log, 'worker pass failed')).toBe(0);
      expect(worker!.child.exitCode).toBeNull();
      // The web server said so in its log, and never logged an internal error.
      expect(server!.log()).toContain('database unreachable, answering 503');
      expect(server!.log()).not.toContain('failed (request');
    },
    300_000,
  );
});
