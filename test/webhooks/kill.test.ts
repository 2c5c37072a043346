import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookIdOf } from '../../server/common/webhook-events';
import type { WorkflowInput } from '../../server/common/workflow-definition';
import { advanceExecution, claimStep, failStep } from '../../server/engine/claims';
import { enroll } from '../../server/engine/enrollment';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createProject, stepId, workflowFrom } from '../support/fixtures';
import { startWorkerProcess, waitFor, type WorkerProcess } from '../support/processes';
import { createTestEndpoint, startReceiver, type Receiver } from './receiver';

// At-least-once under a kill (docs/webhooks.md): the dispatcher runs in real worker
// processes (scripts/worker.ts, as `npm run worker` starts it). The receiver holds the
// first deliveries without answering, the worker is SIGKILLed mid-delivery, another
// starts: every committed change reaches the receiver at least once, the distinct
// webhook-ids are exactly the committed changes (none lost, none invented), and a
// delivery cut off is delivered again under the same webhook-id. Several rounds.

const ROUNDS = 3;
const CHANGES_PER_ROUND = 6;
const WORKER_ENV = {
  WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
  // A 1 s timeout: a claim's lease is 6 s (timeout + 5 s), so a killed dispatcher's messages come back quickly.
  WEBHOOK_TIMEOUT_MS: '1000',
  WEBHOOK_RETRY_SCHEDULE: '1,1,1,1,1,1,1,1',
  WEBHOOK_CONCURRENCY: '3',
  WORKERS: '1',
};

let t: TestDatabase;
let receiver: Receiver;
let projectId: string;
let workflowId: string;
let serial = 0;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  t = await freshDatabase();
  receiver = await startReceiver();
  projectId = (await createProject(t.db)).id;
  workflowId = (await workflowFrom(t.db, projectId, oneStep())).id;
  await createTestEndpoint(t.db, projectId, { ...receiver.endpoint('/kill'), eventTypes: ['execution.failed'] });
}, 60_000);
afterAll(async () => {
  for (const w of workers) w.kill('SIGKILL');
  await Promise.all(workers.map((w) => w.exited));
  await receiver?.close();
  await t?.drop();
});

function oneStep(): WorkflowInput {
  return {
    name: 'kill-round',
    trigger: 'MANUAL',
    allowReentry: true,
    steps: [
      { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
      { key: 'a', type: 'UPDATE_CONTACT', name: 'Sync', config: { set: { synced: true } } },
    ],
    transitions: [{ from: 'start', to: 'a', branch: null }],
  };
}

/** One committed change: an execution failed by the engine's failStep. */
async function failOne(): Promise<string> {
  const e = await enroll(t.db, { projectId, workflowId, email: `k${++serial}@example.com` });
  if (!e.ok) throw new Error(e.reason);
  const start = await claimStep(t.db, { executionId: e.executionId, expectedVersion: 1, leaseSeconds: 30 });
  if (!start.won) throw new Error('claim start');
  const advanced = await advanceExecution(t.db, start.claim, { nextStepId: await stepId(t.db, workflowId, 'a'), status: 'RUNNING', output: {} });
  if (!advanced.won) throw new Error('advance');
  const a = await claimStep(t.db, { executionId: e.executionId, expectedVersion: advanced.version, leaseSeconds: 30 });
  if (!a.won) throw new Error('claim a');
  if (!(await failStep(t.db, a.claim, { error: 'down', retryInSeconds: null })).won) throw new Error('fail');
  return e.executionId;
}

async function worker(): Promise<WorkerProcess> {
  const w = await startWorkerProcess(t.url, { concurrency: 2, env: WORKER_ENV });
  workers.push(w);
  return w;
}

describe('a dispatcher killed mid-delivery', () => {
  it(`loses nothing and duplicates only under the same webhook-id (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const executions: string[] = [];
      for (let i = 0; i < CHANGES_PER_ROUND; i++) executions.push(await failOne());
      const roundMessages = (await t.db.webhookMessage.findMany({ where: { projectId }, select: { id: true, payload: true } })).filter((m) =>
        executions.includes((m.payload as { data: { executionId: string } }).data.executionId),
      );
      const expected = new Set(roundMessages.map((m) => webhookIdOf(m.id)));
      expect(expected.size, 'one message per committed change').toBe(CHANGES_PER_ROUND);

      // Hold every delivery; SIGKILL the worker once it has some in flight.
      receiver.answer = () => 'hold';
      const first = await worker();
      await waitFor('deliveries held by the receiver', async () => receiver.held() >= 1, 30_000, 10);
      first.kill('SIGKILL');
      await first.exited;
      const cutOff = new Set(receiver.deliveries.filter((d) => expected.has(d.webhookId)).map((d) => d.webhookId));
      expect(cutOff.size).toBeGreaterThan(0);
      receiver.dropHeld();

      // Another worker delivers everything, the cut-off ones once their lease has run out.
      receiver.answer = () => ({ status: 200 });
      const second = await worker();
      await waitFor(
        'every message of the round delivered',
        async () => (await t.db.webhookMessage.count({ where: { projectId, status: 'DELIVERED', id: { in: roundMessages.map((m) => m.id) } } })) >= roundMessages.length,
        60_000,
        100,
      );
      second.kill('SIGTERM');
      await second.exited;

      const got = receiver.deliveries.filter((d) => expected.has(d.webhookId));
      const distinct = new Set(got.map((d) => d.webhookId));
      expect(distinct, `round ${round}: the distinct webhook-ids are the committed changes`).toEqual(expected);
      // A delivery the kill cut off arrived again, under its own id.
      for (const id of cutOff) expect(got.filter((d) => d.webhookId === id).length, `round ${round}: ${id}`).toBeGreaterThanOrEqual(2);
      // Each delivered body names its own execution, once per id.
      const bodies = new Map(got.map((d) => [d.webhookId, (d.body.data as { executionId: string }).executionId]));
      expect(new Set(bodies.values())).toEqual(new Set(executions));
    }
    expect(receiver.rejected).toEqual([]);
  }, 240_000);
});
