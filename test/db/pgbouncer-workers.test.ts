import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPgBouncer, type PgBouncer } from '../../scripts/pgbouncer';
import { closeDb, createDb, type Db } from '../../server/db';
import { createEngineContext } from '../../server/engine/context';
import { enroll, enrollBatch } from '../../server/engine/enrollment';
import { notifyWorkers } from '../../server/engine/wakeup';
import { runWorkerOnce } from '../../server/engine/worker';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createContact, createProject, twoEmailWorkflow, waitWorkflow, workflowFrom } from '../support/fixtures';
import { startWorkerProcess, waitFor, type WorkerProcess } from '../support/processes';
import { expectNoViolations, fulfilled, racers } from '../support/race';

// The engine through a real PgBouncer 1.18 in transaction mode with
// DATABASE_POOL_MODE=transaction (scripts/pgbouncer.ts; its database-level side is
// test/db/pgbouncer.test.ts): concurrent enrollments and claims over 4 shared server
// connections, and the worker process's wake-ups: LISTEN on DIRECT_DATABASE_URL, or,
// without it, polling every WORKER_POLL_MS.

let t: TestDatabase;
let bouncer: PgBouncer;
let pooledUrl: string;
let projectId: string;
const opened: Db[] = [];

beforeAll(async () => {
  t = await freshDatabase();
  bouncer = await startPgBouncer({ upstream: t.directUrl, defaultPoolSize: 4, maxClientConn: 400 });
  pooledUrl = bouncer.url(t.name);
  projectId = (await createProject(t.db)).id;
});

afterAll(async () => {
  await Promise.all(opened.map((db) => closeDb(db).catch(() => {})));
  await bouncer?.stop();
  await t?.drop();
});

function pooled(poolSize: number): Db {
  const db = createDb(pooledUrl, { poolMode: 'transaction', poolSize, queryTimeoutMs: 30_000, applicationName: 'waypost-test-pooled' });
  opened.push(db);
  return db;
}

describe('the engine through PgBouncer in transaction mode', () => {
  it('sixteen concurrent enrollments of one contact, over 4 server connections: exactly one execution, the rest told which', async () => {
    const r16 = await racers(pooledUrl, 16, { poolMode: 'transaction', queryTimeoutMs: 30_000 });
    try {
      const wf = await workflowFrom(t.db, projectId, waitWorkflow({ allowReentry: true }));
      for (let round = 0; round < 10; round++) {
        const contact = await createContact(t.db, projectId, `pooled-${round}@example.com`);
        const results = fulfilled(await r16.race((db) => enroll(db, { projectId, workflowId: wf.id, contactId: contact.id })));
        const winners = results.filter((r) => r.ok && r.created);
        expect(winners, `round ${round}`).toHaveLength(1);
        for (const loser of results.filter((r) => !(r.ok && r.created))) {
          expect(loser).toEqual({ ok: false, reason: 'ACTIVE_EXECUTION', executionId: (winners[0] as { executionId: string }).executionId });
        }
      }
      await expectNoViolations(t.db, 'after the enrollment races');
    } finally {
      await r16.close();
    }
  });

  it('eight engines claiming and running 300 executions at once: each finished once, one email per send step', async () => {
    const wf = await workflowFrom(t.db, projectId, twoEmailWorkflow({ allowReentry: true }));
    const emails = Array.from({ length: 300 }, (_, i) => ({ email: `batch-${i}@example.com` }));
    const enrolled = await enrollBatch(pooled(2), projectId, wf.id, emails);
    expect(enrolled.filter((r) => r.ok)).toHaveLength(300);
    const engines = Array.from({ length: 8 }, (_, i) => createEngineContext(pooled(3), { owner: `pooled-engine-${i}` }));
    // Each runs until it finds nothing; those that start late find the rest.
    await Promise.all(engines.map((ctx) => runWorkerOnce(ctx, { concurrency: 8 })));
    await runWorkerOnce(engines[0]!);
    const [done] = await t.query<{ completed: number; messages: number; doubled: number }>(
      `SELECT (SELECT count(*)::int FROM "WorkflowExecution" WHERE "workflowId" = $1 AND status = 'COMPLETED') AS completed,
              (SELECT count(*)::int FROM "Message" m JOIN "WorkflowExecution" e ON e.id = m."executionId" WHERE e."workflowId" = $1) AS messages,
              (SELECT count(*)::int FROM (SELECT m."stepExecutionId" FROM "Message" m GROUP BY 1 HAVING count(*) > 1) d) AS doubled`,
      [wf.id],
    );
    expect(done).toEqual({ completed: 300, messages: 600, doubled: 0 });
    await expectNoViolations(t.db, 'after the pooled run');
  });
});

describe('wake-ups of a worker process behind the pooler', () => {
  const listeners = () =>
    t.query(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'waypost-worker-listen' AND query LIKE 'LISTEN%'`);
  const completed = async (executionId: string) =>
    (await t.query(`SELECT status FROM "WorkflowExecution" WHERE id = $1`, [executionId]))[0]?.status === 'COMPLETED';
  const enrollOne = async (workflowId: string, email: string) => {
    const r = await enroll(t.db, { projectId, workflowId, email });
    if (!r.ok) throw new Error(r.reason);
    return r.executionId;
  };
  let worker: WorkerProcess | null = null;
  const stopWorker = async () => {
    worker?.kill('SIGTERM');
    expect(await worker?.exited).toBe(0);
    worker = null;
  };

  it('with DIRECT_DATABASE_URL: the worker LISTENs there, and a NOTIFY sent through the pooler wakes it long before its poll', async () => {
    const wf = await workflowFrom(t.db, projectId, twoEmailWorkflow({ allowReentry: true }));
    worker = await startWorkerProcess(pooledUrl, {
      concurrency: 4,
      env: { DATABASE_POOL_MODE: 'transaction', DIRECT_DATABASE_URL: t.directUrl, WORKER_POLL_MS: '60000' },
    });
    try {
      await waitFor('the worker to LISTEN on the direct connection', async () => (await listeners()).length === 1, 20_000);
      // The passes of its start are over, and it sleeps for a minute unless woken.
      await new Promise((r) => setTimeout(r, 1_000));
      const unwoken = await enrollOne(wf.id, 'unwoken@example.com');
      await new Promise((r) => setTimeout(r, 2_500));
      expect(await completed(unwoken)).toBe(false);
      const started = Date.now();
      await notifyWorkers(pooled(1));
      await waitFor('the woken worker to run the execution', () => completed(unwoken), 20_000);
      expect(Date.now() - started).toBeLessThan(15_000);
      expect(worker.output()).not.toContain('no wake-up listener');
    } finally {
      await stopWorker();
    }
  }, 90_000);

  it('without DIRECT_DATABASE_URL: no LISTEN, said once, and new work is found within WORKER_POLL_MS', async () => {
    const wf = await workflowFrom(t.db, projectId, twoEmailWorkflow({ allowReentry: true }));
    const POLL_MS = 1_500;
    worker = await startWorkerProcess(pooledUrl, {
      concurrency: 4,
      env: { DATABASE_POOL_MODE: 'transaction', DIRECT_DATABASE_URL: '', WORKER_POLL_MS: String(POLL_MS) },
    });
    try {
      await new Promise((r) => setTimeout(r, 1_000));
      const delays: number[] = [];
      for (let i = 0; i < 3; i++) {
        const id = await enrollOne(wf.id, `polled-${i}@example.com`);
        const started = Date.now();
        await waitFor('the polling worker to run the execution', () => completed(id), 20_000, 25);
        delays.push(Date.now() - started);
      }
      // At most one poll interval asleep, then the pass itself (a shared, busy machine: a generous margin).
      for (const d of delays) expect(d).toBeLessThan(POLL_MS + 4_000);
      expect(await listeners()).toEqual([]);
      expect(worker.output().match(/no wake-up listener: DATABASE_POOL_MODE=transaction and DIRECT_DATABASE_URL is unset/g)).toHaveLength(1);
    } finally {
      await stopWorker();
    }
  }, 90_000);
});
