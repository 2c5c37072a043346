import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WorkflowInput } from '../../server/common/workflow-definition';
import { advanceExecution, claimStep, failStep } from '../../server/engine/claims';
import { enroll } from '../../server/engine/enrollment';
import { notifyStuckOnce, stuckGroupKey } from '../../server/webhooks/stuck-notices';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createProject, stepId, workflowFrom } from '../support/fixtures';
import { startWorkerProcess, waitFor } from '../support/processes';
import { createTestEndpoint, dispatchAllDue, dispatcherFor, startReceiver, type Receiver } from './receiver';

// execution.stuck (docs/webhooks.md): a stuck group (reason, workflow, step) reaching an
// endpoint's threshold is notified once; more of the same within the endpoint's interval
// is not; growth after the interval is notified once more; notifiers running at once (in
// several workers) send one notice. And end to end: a worker process tells an operator's
// endpoint, signed, when an outage starts.

const GRACE = { graceSeconds: 0 };
const RACE_ROUNDS = Number(process.env.RACE_ROUNDS ?? 5);

let t: TestDatabase;
let receiver: Receiver;
let serial = 0;

beforeAll(async () => {
  t = await freshDatabase();
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await t?.drop();
});

const oneStep = (name: string): WorkflowInput => ({
  name,
  trigger: 'MANUAL',
  allowReentry: false,
  steps: [
    { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
    { key: 'sync', type: 'UPDATE_CONTACT', name: 'Sync CRM', config: { set: { synced: true } } },
  ],
  transitions: [{ from: 'start', to: 'sync', branch: null }],
});

/** `n` executions failed at step sync: a FAILED stuck group of n more. */
async function failAtSync(projectId: string, workflowId: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const e = await enroll(t.db, { projectId, workflowId, email: `s${++serial}@example.com` });
    if (!e.ok) throw new Error(e.reason);
    const start = await claimStep(t.db, { executionId: e.executionId, expectedVersion: 1, leaseSeconds: 30 });
    if (!start.won) throw new Error('claim start');
    const advanced = await advanceExecution(t.db, start.claim, { nextStepId: await stepId(t.db, workflowId, 'sync'), status: 'RUNNING', output: {} });
    if (!advanced.won) throw new Error('advance');
    const c = await claimStep(t.db, { executionId: e.executionId, expectedVersion: advanced.version, leaseSeconds: 30 });
    if (!c.won) throw new Error('claim sync');
    if (!(await failStep(t.db, c.claim, { error: `CRM timeout after ${3000 + i} ms`, retryInSeconds: null })).won) throw new Error('fail');
  }
}

async function stuckMessages(projectId: string) {
  return t.db.webhookMessage.findMany({ where: { projectId, eventType: 'execution.stuck' }, orderBy: { createdAt: 'asc' } });
}

describe('execution.stuck notices', () => {
  it('a group appears: one notice; more within the interval: none; grows after it: one more', async () => {
    const projectId = (await createProject(t.db)).id;
    const wf = await workflowFrom(t.db, projectId, oneStep('outage'));
    const endpointId = await createTestEndpoint(t.db, projectId, {
      ...receiver.endpoint('/stuck/a'),
      eventTypes: ['execution.stuck'],
      stuckThreshold: 2,
      stuckIntervalSeconds: 2,
    });
    // Under the threshold: nothing.
    await failAtSync(projectId, wf.id, 1);
    expect(await notifyStuckOnce(t.db, GRACE)).toBe(0);
    // Reaches it: one notice, delivered signed.
    await failAtSync(projectId, wf.id, 1);
    expect(await notifyStuckOnce(t.db, GRACE)).toBe(1);
    expect(await notifyStuckOnce(t.db, GRACE)).toBe(0);
    await dispatchAllDue(t.db, dispatcherFor());
    const syncStep = await stepId(t.db, wf.id, 'sync');
    expect(receiver.deliveries.filter((d) => d.path === '/stuck/a').map((d) => d.body)).toEqual([
      {
        type: 'execution.stuck',
        timestamp: expect.any(String),
        data: {
          reason: 'FAILED',
          workflowId: wf.id,
          workflowName: 'outage',
          stepKey: 'sync',
          count: 2,
          threshold: 2,
          link: `/stuck?reason=FAILED&workflowId=${wf.id}`,
        },
      },
    ]);
    const notice = await t.db.webhookStuckNotice.findUniqueOrThrow({
      where: { endpointId_groupKey: { endpointId, groupKey: stuckGroupKey({ reason: 'FAILED', workflowId: wf.id, stepId: syncStep }) } },
    });
    expect(notice.lastCount).toBe(2);
    // Grows within the interval: none (one notice per group per interval, not one per execution).
    await failAtSync(projectId, wf.id, 2);
    expect(await notifyStuckOnce(t.db, GRACE)).toBe(0);
    // After the interval: one more, with the new count; then quiet again.
    await new Promise((r) => setTimeout(r, 2100));
    expect(await notifyStuckOnce(t.db, GRACE)).toBe(1);
    expect(await notifyStuckOnce(t.db, GRACE)).toBe(0);
    const counts = (await stuckMessages(projectId)).map((m) => (m.payload as { data: { count: number } }).data.count);
    expect(counts).toEqual([2, 4]);
    // The interval passed but nothing grew: none.
    await new Promise((r) => setTimeout(r, 2100));
    expect(await notifyStuckOnce(t.db, GRACE)).toBe(0);
  });

  it('a group that cleared is new again when it returns, though still at most once per interval', async () => {
    const projectId = (await createProject(t.db)).id;
    const wf = await workflowFrom(t.db, projectId, oneStep('returns'));
    const endpointId = await createTestEndpoint(t.db, projectId, { ...receiver.endpoint('/stuck/returns'), eventTypes: ['execution.stuck'], stuckIntervalSeconds: 1 });
    await failAtSync(projectId, wf.id, 2);
    expect(await notifyStuckOnce(t.db, GRACE)).toBe(1);
    // The outage ends: an operator cancels the failed executions; the group is gone.
    await t.query(`UPDATE "WorkflowExecution" SET status = 'CANCELLED', version = version + 1 WHERE "workflowId" = $1`, [wf.id]);
    expect(await notifyStuckOnce(t.db, GRACE)).toBe(0);
    expect((await t.db.webhookStuckNotice.findFirstOrThrow({ where: { endpointId } })).lastCount).toBe(0);
    // It comes back smaller than before: still within the interval, nothing; after it, one notice.
    await failAtSync(projectId, wf.id, 1);
    await t.query(`UPDATE "WebhookStuckNotice" SET "lastNotifiedAt" = now() WHERE "endpointId" = $1`, [endpointId]);
    expect(await notifyStuckOnce(t.db, GRACE)).toBe(0);
    await new Promise((r) => setTimeout(r, 1100));
    expect(await notifyStuckOnce(t.db, GRACE)).toBe(1);
    const counts = (await stuckMessages(projectId)).map((m) => (m.payload as { data: { count: number } }).data.count);
    expect(counts).toEqual([2, 1]);
  });

  it('endpoints not taking execution.stuck, or disabled, get none', async () => {
    const projectId = (await createProject(t.db)).id;
    const wf = await workflowFrom(t.db, projectId, oneStep('elsewhere'));
    await createTestEndpoint(t.db, projectId, { ...receiver.endpoint('/stuck/no'), eventTypes: ['event.dead'] });
    await createTestEndpoint(t.db, projectId, { ...receiver.endpoint('/stuck/off'), eventTypes: ['execution.stuck'], enabled: false });
    await failAtSync(projectId, wf.id, 2);
    await notifyStuckOnce(t.db, GRACE);
    expect(await stuckMessages(projectId)).toEqual([]);
  });

  it(`notifiers running at once send one notice per group (${RACE_ROUNDS} rounds, 4 at once)`, async () => {
    const projectId = (await createProject(t.db)).id;
    await createTestEndpoint(t.db, projectId, { ...receiver.endpoint('/stuck/race'), eventTypes: ['execution.stuck'], stuckIntervalSeconds: 0 });
    for (let round = 0; round < RACE_ROUNDS; round++) {
      const wf = await workflowFrom(t.db, projectId, oneStep(`race-${round}`));
      await failAtSync(projectId, wf.id, 1);
      const before = (await stuckMessages(projectId)).length;
      // A new group, and (interval 0) each earlier group is due again only if it grew: none did.
      const written = await Promise.all([1, 2, 3, 4].map(() => notifyStuckOnce(t.db, GRACE)));
      expect(written.reduce((a, b) => a + b, 0), `round ${round}: ${written.join(',')}`).toBe(1);
      expect((await stuckMessages(projectId)).length).toBe(before + 1);
      // It grows: again exactly one among concurrent notifiers.
      await failAtSync(projectId, wf.id, 1);
      const again = await Promise.all([1, 2, 3, 4].map(() => notifyStuckOnce(t.db, GRACE)));
      expect(again.reduce((a, b) => a + b, 0), `round ${round} (grown): ${again.join(',')}`).toBe(1);
    }
  });

  it('end to end: a worker process sends a signed execution.stuck to the endpoint when an outage starts', async () => {
    const projectId = (await createProject(t.db)).id;
    const wf = await workflowFrom(t.db, projectId, oneStep('e2e-outage'));
    await createTestEndpoint(t.db, projectId, { ...receiver.endpoint('/stuck/e2e'), eventTypes: ['execution.stuck'], stuckThreshold: 3 });
    const w = await startWorkerProcess(t.url, {
      concurrency: 2,
      env: { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', WEBHOOK_STUCK_CHECK_SECONDS: '1', STUCK_GRACE_SECONDS: '0' },
    });
    try {
      await failAtSync(projectId, wf.id, 3);
      const got = await waitFor('the execution.stuck delivery', async () => receiver.deliveries.find((d) => d.path === '/stuck/e2e'), 30_000, 100);
      expect(got.body).toMatchObject({ type: 'execution.stuck', data: { reason: 'FAILED', workflowId: wf.id, stepKey: 'sync', count: 3 } });
      // Once per group per interval (3600 s): no second notice from later passes.
      await new Promise((r) => setTimeout(r, 2500));
      expect(receiver.deliveries.filter((d) => d.path === '/stuck/e2e')).toHaveLength(1);
    } finally {
      w.kill('SIGTERM');
      await w.exited;
    }
    expect(receiver.rejected).toEqual([]);
  }, 60_000);
});
