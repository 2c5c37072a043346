import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enroll } from '../../server/engine/enrollment';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createProject, twoEmailWorkflow, workflowFrom } from '../support/fixtures';
import { startWorkerProcess, waitFor, type WorkerProcess } from '../support/processes';
import { createTestEndpoint, startReceiver, type Receiver } from './receiver';

// A slow endpoint never slows the engine (docs/webhooks.md): in a real worker process,
// with every webhook slot busy on an endpoint that answers only after the delivery
// timeout, the worker runs steps at the pace it runs them with no webhook at all. The
// dispatcher has its own timer, its own slots and its own two connections.

const EXECUTIONS = 30;
let t: TestDatabase;
let receiver: Receiver;
let projectId: string;
let worker: WorkerProcess | null = null;
let serial = 0;

beforeAll(async () => {
  t = await freshDatabase();
  receiver = await startReceiver();
  projectId = (await createProject(t.db)).id;
});
afterAll(async () => {
  worker?.kill('SIGKILL');
  await worker?.exited;
  await receiver?.close();
  await t?.drop();
});

/** Enroll `n` executions of a two-email workflow and time until the worker has completed them all. */
async function timeSteps(n: number): Promise<number> {
  const wf = await workflowFrom(t.db, projectId, twoEmailWorkflow());
  const started = Date.now();
  for (let i = 0; i < n; i++) {
    const e = await enroll(t.db, { projectId, workflowId: wf.id, email: `p${++serial}@example.com` });
    if (!e.ok) throw new Error(e.reason);
  }
  await waitFor(
    'the executions completed',
    async () => (await t.db.workflowExecution.count({ where: { workflowId: wf.id, status: 'COMPLETED' } })) === n,
    60_000,
    20,
  );
  return Date.now() - started;
}

/** `n` messages to the endpoint, as the outbox triggers write them. */
async function enqueue(endpointId: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    await t.db.webhookMessage.create({
      data: { projectId, endpointId, eventType: 'execution.failed', payload: { type: 'execution.failed', timestamp: new Date().toISOString(), data: { n: i } } },
    });
  }
}

describe('a slow endpoint', () => {
  it('does not delay step claims: steps run at their usual pace while every delivery times out', async () => {
    worker = await startWorkerProcess(t.url, {
      concurrency: 8,
      env: { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', WEBHOOK_TIMEOUT_MS: '3000', WEBHOOK_CONCURRENCY: '4', WEBHOOK_RETRY_SCHEDULE: '1,1,1,1,1,1,1,1,1,1' },
    });
    // Warm up, then the pace with no webhook at all.
    await timeSteps(5);
    const usual = await timeSteps(EXECUTIONS);

    // Every webhook slot busy with an endpoint that answers after the timeout.
    receiver.answer = () => ({ sleepMs: 10_000 });
    const endpointId = await createTestEndpoint(t.db, projectId, { ...receiver.endpoint('/slow'), eventTypes: ['execution.failed'] });
    await enqueue(endpointId, 40);
    await waitFor('deliveries in flight', async () => receiver.requests >= 4, 10_000, 20);
    // 40 messages, 4 at a time, 3 s each: the dispatcher's slots stay busy well past the timing below.
    const slowed = await timeSteps(EXECUTIONS);
    expect(await t.db.webhookMessage.count({ where: { endpointId, status: 'PENDING' } })).toBeGreaterThan(0);
    expect(slowed, `usual ${usual} ms, with a slow endpoint ${slowed} ms`).toBeLessThanOrEqual(usual * 2 + 1500);
    // The deliveries did time out meanwhile (the endpoint never answered in time).
    await waitFor('timed-out attempts logged', async () => (await t.db.webhookAttempt.count({ where: { error: 'timed out after 3000 ms' } })) >= 4, 20_000, 100);
  }, 120_000);
});
