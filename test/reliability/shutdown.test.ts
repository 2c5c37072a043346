import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enroll } from '../../server/engine/enrollment';
import { notifyWorkers } from '../../server/engine/wakeup';
import { newApiKey } from '../support/auth';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createContact, createProject, twoEmailWorkflow, workflowFrom } from '../support/fixtures';
import { connectionRefused, startWorkerProcess, waitFor, type WorkerProcess } from '../support/processes';
import { apiClient, executionIdOf, expectAllRunOnce } from '../support/reliability';
import { startWebServer, type WebServer } from '../support/web-server';

// Graceful shutdown, as `npm start`'s supervisor and any process manager ask for it:
// SIGTERM. The web server (scripts/web.ts) stops accepting connections, lets the requests
// it has begun finish, and exits 0; a worker (scripts/worker.ts) stops claiming, finishes
// the steps it holds, and exits 0 leaving no step under a live lease of its own, nothing
// sent twice and nothing lost.
//
// Shown to matter: with scripts/web.ts exiting at once on SIGTERM (no server.close()), the
// web test found the server gone with a request in flight (and that request reset); with
// scripts/worker.ts exiting on SIGTERM without waiting for the loop (worker.stop()), 'no
// step left under its lease' found the held steps RUNNING.

const ROUNDS = 3;

let t: TestDatabase;
let projectId = '';
let workflowId = '';
let key = '';
const accepted: string[] = [];

beforeAll(async () => {
  t = await freshDatabase();
  projectId = (await createProject(t.db)).id;
  workflowId = (await workflowFrom(t.db, projectId, twoEmailWorkflow())).id;
  key = (await newApiKey(t.db, projectId, 'MARKETER')).secret;
}, 120_000);

afterAll(async () => {
  await t?.drop();
});

/** A POST whose body the test sends in two halves, so that it is in flight for as long as the test likes. */
function slowEnrollment(port: number, email: string) {
  const body = JSON.stringify({ workflowId, email });
  const half = Math.floor(body.length / 2);
  let finish!: () => void;
  const answered = new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, method: 'POST', path: '/api/v1/enrollments', agent: false, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.write(body.slice(0, half));
    finish = () => req.end(body.slice(half));
  });
  // Awaited once the body is finished; a reset before then must not be an unhandled rejection.
  answered.catch(() => {});
  return { answered, finish: () => finish() };
}

describe('SIGTERM to the web server under load', () => {
  it('lets the requests in flight finish, refuses new connections, answers no 5xx, and exits 0', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const server: WebServer = await startWebServer(t.url, { RATE_LIMIT_PER_KEY: '0', RATE_LIMIT_PER_ADDRESS: '0' });
      try {
        const exited = new Promise<number | null>((resolve) => server.child.once('exit', (code) => resolve(code)));
        const api = apiClient(server.base, key);
        let signalled = false;
        const statuses: number[] = [];
        const errorsBefore: string[] = [];
        let errorsAfter = 0;
        // Twenty backends enrolling in a loop until the server goes away under them.
        const clients = Array.from({ length: 20 }, async (_, n) => {
          for (let call = 0; ; call++) {
            try {
              // Mostly reads, an enrollment every fourth call: both must be drained.
              const enrolling = (n + call) % 4 === 0;
              const a = enrolling ? await api.enrollRest(workflowId, `drain-${round}-${n}-${call}@example.com`) : await api.query('executions.list', { workflowId, limit: 10 });
              statuses.push(a.status);
              if (enrolling && a.status === 200) accepted.push(executionIdOf(a));
            } catch (error) {
              // Refused or reset: the connection was not one the server had taken a request on.
              if (!signalled) errorsBefore.push(String(error));
              else errorsAfter++;
              return;
            }
          }
        });
        const slow = slowEnrollment(server.port, `drain-${round}-slow@example.com`);
        await waitFor('the load to be running', async () => statuses.length >= 40, 60_000, 20);

        signalled = true;
        const answeredBefore = statuses.length;
        const signalledAt = Date.now();
        server.child.kill('SIGTERM');
        await waitFor('the server to stop accepting connections', () => connectionRefused(server.port), 30_000, 50);
        // Still draining: the request it had begun is answered once its body arrives.
        expect(server.child.exitCode).toBeNull();
        slow.finish();
        const answer = await slow.answered;
        expect(answer.status, answer.body).toBe(200);
        accepted.push(JSON.parse(answer.body).executionId);
        await Promise.all(clients);
        expect(await exited).toBe(0);
        console.log(`round ${round}: ${answeredBefore} answers before SIGTERM, ${statuses.length - answeredBefore} after; exited ${Date.now() - signalledAt} ms after it`);

        expect(errorsBefore).toEqual([]);
        expect(errorsAfter).toBe(20);
        expect(statuses.filter((s) => s !== 200)).toEqual([]);
        expect(server.log()).not.toContain('failed (request');
      } finally {
        await server.stop();
      }
    }
    // Every enrollment a client was told about is there (and nothing else ran it twice).
    const worker = await startWorkerProcess(t.url, { concurrency: 8 });
    try {
      await expectAllRunOnce(t, workflowId, accepted);
    } finally {
      worker.kill('SIGKILL');
    }
  }, 600_000);
});

describe('SIGTERM to a worker mid-steps', () => {
  it('finishes the steps it holds and exits 0: no step left under its lease, nothing sent twice', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      // A long lease, so that only the worker's own drain, not lease expiry, can clear its steps;
      // the pause after claiming an email step keeps steps held when the signal comes.
      const worker: WorkerProcess = await startWorkerProcess(t.url, {
        concurrency: 4,
        env: { LEASE_SECONDS: '600', WAYPOST_FAULT_PAUSE_AFTER_CLAIM_MS: '1500', WAYPOST_FAULT_PAUSE_STEP_TYPE: 'SEND_EMAIL' },
      });
      const owner = `%:${worker.pid}`;
      for (let i = 0; i < 8; i++) {
        const contact = await createContact(t.db, projectId, `worker-drain-${round}-${i}@example.com`);
        accepted.push(((await enroll(t.db, { projectId, workflowId, contactId: contact.id })) as { executionId: string }).executionId);
      }
      await notifyWorkers(t.db);
      await waitFor(
        'the worker to hold email steps',
        async () => (await t.query(`SELECT 1 FROM "StepExecution" WHERE status = 'RUNNING' AND "leaseOwner" LIKE $1`, [owner])).length > 0,
        60_000,
        20,
      );
      worker.kill('SIGTERM');
      expect(await worker.exited).toBe(0);
      expect(worker.output()).toContain('SIGTERM: draining');
      expect(worker.output()).toContain('"message":"stopped"');

      // No step left under its lease, no email left mid-send by it.
      const held = await t.query(`SELECT id FROM "StepExecution" WHERE status = 'RUNNING' AND "leaseOwner" LIKE $1 AND "leaseExpiresAt" > now()`, [owner]);
      expect(held, `round ${round}: no step left under its lease`).toEqual([]);
      const sending = await t.query(`SELECT id FROM "Message" WHERE status = 'SENDING' AND "leaseOwner" LIKE $1`, [owner]);
      expect(sending, `round ${round}: no email left mid-send`).toEqual([]);
    }
    // Another worker finishes the rest: each email exactly once.
    const finisher = await startWorkerProcess(t.url, { concurrency: 8 });
    try {
      await expectAllRunOnce(t, workflowId, accepted);
    } finally {
      finisher.kill('SIGKILL');
    }
  }, 300_000);
});

describe('SIGTERM to a worker whose steps outlast SHUTDOWN_SECONDS', () => {
  it('exits 1 at the bound, saying so, and another worker finishes its steps once their leases lapse', async () => {
    const SHUTDOWN_SECONDS = 2;
    const ownWorkflowId = (await workflowFrom(t.db, projectId, twoEmailWorkflow())).id;
    const mine: string[] = [];
    // Each email step pauses 20 s after its claim: far past the bound.
    const worker = await startWorkerProcess(t.url, {
      concurrency: 2,
      env: { SHUTDOWN_SECONDS: String(SHUTDOWN_SECONDS), LEASE_SECONDS: '3', WAYPOST_FAULT_PAUSE_AFTER_CLAIM_MS: '20000', WAYPOST_FAULT_PAUSE_STEP_TYPE: 'SEND_EMAIL' },
    });
    const owner = `%:${worker.pid}`;
    for (let i = 0; i < 2; i++) {
      const contact = await createContact(t.db, projectId, `worker-bound-${i}@example.com`);
      mine.push(((await enroll(t.db, { projectId, workflowId: ownWorkflowId, contactId: contact.id })) as { executionId: string }).executionId);
    }
    await notifyWorkers(t.db);
    await waitFor('the worker to hold an email step', async () => (await t.query(`SELECT 1 FROM "StepExecution" WHERE status = 'RUNNING' AND "leaseOwner" LIKE $1`, [owner])).length > 0, 60_000, 20);
    const signalledAt = Date.now();
    worker.kill('SIGTERM');
    expect(await worker.exited).toBe(1);
    const took = Date.now() - signalledAt;
    expect(took).toBeGreaterThanOrEqual(SHUTDOWN_SECONDS * 1000 - 200);
    expect(took).toBeLessThan(SHUTDOWN_SECONDS * 1000 + 3_000);
    expect(worker.output()).toContain(`drain did not finish within SHUTDOWN_SECONDS (${SHUTDOWN_SECONDS} s)`);
    const finisher = await startWorkerProcess(t.url, { concurrency: 8 });
    try {
      await expectAllRunOnce(t, ownWorkflowId, mine);
    } finally {
      finisher.kill('SIGKILL');
    }
  }, 180_000);
});
