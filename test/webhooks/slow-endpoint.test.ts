import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enroll } from '../../server/engine/enrollment';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createProject, twoEmailWorkflow, workflowFrom } from '../support/fixtures';
import { startWorkerProcess, waitFor, type WorkerProcess } from '../support/processes';
import { createTestEndpoint, startReceiver, type Receiver } from './receiver';

// A slow endpoint never slows the engine (docs/webhooks.md): in a real worker process,
// with every webhook slot held by an endpoint that never answers, the worker still runs
// every step to the end, while not one delivery has finished. The dispatcher has its own
// timer, its own slots and its own two connections; a step never waits for a delivery.
// (Pace is the bench's to measure: this test asserts independence, not a duration.)

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

/** Enroll `n` executions of a two-email workflow and wait until the worker has completed them all. */
async function runExecutions(n: number): Promise<void> {
  const wf = await workflowFrom(t.db, projectId, twoEmailWorkflow());
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
  it('does not hold up steps: every execution completes while every delivery slot waits on an endpoint that never answers', async () => {
    worker = await startWorkerProcess(t.url, {
      concurrency: 8,
      env: { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', WEBHOOK_TIMEOUT_MS: '120000', WEBHOOK_CONCURRENCY: '4' },
    });
    await runExecutions(5);

    // Every webhook slot busy with an endpoint that holds each request open.
    receiver.answer = () => 'hold';
    const endpointId = await createTestEndpoint(t.db, projectId, { ...receiver.endpoint('/slow'), eventTypes: ['execution.failed'] });
    await enqueue(endpointId, 40);
    await waitFor('every delivery slot in flight', async () => receiver.requests >= 4, 10_000, 20);

    // Two emails each for 30 executions: all run while the four deliveries are still held.
    await runExecutions(EXECUTIONS);
    expect(await t.db.webhookAttempt.count({ where: { message: { endpointId } } })).toBe(0);
    expect(await t.db.webhookMessage.count({ where: { endpointId, status: 'PENDING' } })).toBe(40);
    expect(receiver.requests).toBe(4);
  }, 120_000);
});
