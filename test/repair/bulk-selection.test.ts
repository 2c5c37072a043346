import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../server/db';
import { createEngineContext } from '../../server/engine/context';
import type { WorkflowInput } from '../../server/common/workflow-definition';
import { enroll } from '../../server/engine/enrollment';
import { checkInvariants } from '../../server/engine/invariants';
import { advanceExecution, claimStep, failStep, retryStep } from '../../server/engine/claims';
import { continueRunning, resolveWait } from '../../server/engine/runner';
import { applyMany, type BulkFilter } from '../../server/repair/bulk';
import { freshDatabase, type TestDatabase } from '../support/database';
import { runStepsOnly } from '../support/drive';
import { createProject, delayWorkflow, stepId, workflowFrom } from '../support/fixtures';

// A bulk repair acts on what was selected, not on what the row has become
// by the time its turn comes. Each row carries its version and step execution from the
// selection to its apply; a row that moved on (workers resumed meanwhile: a newer wait, a
// newer step) is reported SKIPPED_CHANGED and left alone.

let t: TestDatabase;
let projectId: string;
const GRACE = { graceSeconds: 0 };
const OPERATOR = 'user:bulk-operator';

beforeAll(async () => {
  t = await freshDatabase();
  projectId = (await createProject(t.db)).id;
});
afterAll(async () => t?.drop());

async function expectHealthy() {
  const bad = (await checkInvariants(t.db)).filter((x) => x.violations > 0);
  expect(bad).toEqual([]);
}

/** trigger -> wait for "open" (1 s) -> wait for "purchase" (an hour) -> mail. */
function twoWaits(name: string): WorkflowInput {
  return {
    name,
    trigger: 'MANUAL',
    allowReentry: false,
    steps: [
      { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
      { key: 'first', type: 'WAIT_FOR_EVENT', name: 'Wait for open', config: { eventName: 'open', timeoutSeconds: 1 } },
      { key: 'second', type: 'WAIT_FOR_EVENT', name: 'Wait for purchase', config: { eventName: 'purchase', timeoutSeconds: 3600 } },
      { key: 'mail', type: 'SEND_EMAIL', name: 'Mail', config: { subject: 'Hi', body: 'b' } },
    ],
    transitions: [
      { from: 'start', to: 'first', branch: null },
      { from: 'first', to: 'second', branch: 'EVENT' },
      { from: 'first', to: 'second', branch: 'TIMEOUT' },
      { from: 'second', to: 'mail', branch: 'EVENT' },
      { from: 'second', to: 'mail', branch: 'TIMEOUT' },
    ],
  };
}

async function enrollMany(workflowId: string, prefix: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const e = await enroll(t.db, { projectId, workflowId, email: `${prefix}-${i}@example.com` });
    if (!e.ok) throw new Error(e.reason);
    ids.push(e.executionId);
  }
  return ids;
}

const rowOf = (executionId: string, stepIdValue: string) =>
  t.db.stepExecution.findUniqueOrThrow({ where: { executionId_stepId: { executionId, stepId: stepIdValue } } });

describe('bulk repair carries the selection to the apply', () => {
  it('FORCE_TIMEOUT on WAIT_OVERDUE: a row that moved on to a newer wait is SKIPPED_CHANGED and the newer wait is untouched', async () => {
    const wf = await workflowFrom(t.db, projectId, twoWaits('bulk-two-waits'));
    const [first, second] = [await stepId(t.db, wf.id, 'first'), await stepId(t.db, wf.id, 'second')];
    const ids = await enrollMany(wf.id, 'moved', 3);
    await runStepsOnly(t.db);
    await new Promise((r) => setTimeout(r, 1_100)); // the first waits are overdue now
    const [mover, stayer, other] = ids as [string, string, string];

    const result = await applyMany(
      t.db,
      {
        projectId,
        actor: OPERATOR,
        action: 'FORCE_TIMEOUT',
        reason: 'timer outage',
        filter: { reason: 'WAIT_OVERDUE', workflowId: wf.id },
        dryRun: false,
        ratePerSecond: 1000,
        // Selected; now the workers come back for one row: its first wait times out and
        // it parks at the second, before the bulk repair reaches it.
        onSelected: async () => {
          const ctx = createEngineContext(t.db);
          const w = await rowOf(mover, first);
          const resumed = await resolveWait(ctx, { stepExecutionId: w.id, resolvedBy: 'TIMEOUT', branch: 'TIMEOUT' });
          if (!resumed.resumed) throw new Error('resume');
          await continueRunning(ctx, mover, resumed.version);
        },
      },
      GRACE,
    );
    expect(result.matched).toBe(3);
    const byId = new Map(result.items.map((i) => [i.executionId, i]));
    expect(byId.get(mover)).toMatchObject({ outcome: 'SKIPPED_CHANGED' });
    expect(byId.get(stayer)).toMatchObject({ outcome: 'APPLIED' });
    expect(byId.get(other)).toMatchObject({ outcome: 'APPLIED' });

    // The mover's newer wait was not forced: it is still waiting, unresolved.
    const newer = await rowOf(mover, second);
    expect(newer).toMatchObject({ status: 'WAITING', resolvedBy: null });
    expect(await t.db.workflowExecution.findUniqueOrThrow({ where: { id: mover } })).toMatchObject({ status: 'WAITING', currentStepId: second });
    // The ones still at their first wait were forced there, and only there.
    expect(await rowOf(stayer, first)).toMatchObject({ resolvedBy: 'OPERATOR' });
    await expectHealthy();
  });

  it.each([
    ['status', (wf: string, _ids: string[]): BulkFilter => ({ status: 'FAILED', workflowId: wf })],
    ['executionIds', (_wf: string, ids: string[]): BulkFilter => ({ executionIds: ids })],
  ] as const)('SKIP_STEP on FAILED selected by %s: a row that failed again at a newer step is SKIPPED_CHANGED and that step is not skipped', async (kind, filterOf) => {
    const wf = await workflowFrom(t.db, projectId, delayWorkflow(3600, { name: `bulk-skip-${kind}` }));
    const [start, pause] = [await stepId(t.db, wf.id, 'start'), await stepId(t.db, wf.id, 'pause')];
    const ids = await enrollMany(wf.id, `skip-${kind}`, 2);
    // Both fail at their first step, for good.
    for (const id of ids) {
      const c = await claimStep(t.db, { executionId: id, expectedVersion: 1, leaseSeconds: 30 });
      if (!c.won) throw new Error('claim');
      await failStep(t.db, c.claim, { error: 'boom', retryInSeconds: null });
    }
    const [mover, stayer] = ids as [string, string];

    /** Someone retries the mover; its first step now passes, and the next one fails. */
    const moveOn = async (db: Db) => {
      const x = await db.workflowExecution.findUniqueOrThrow({ where: { id: mover } });
      const retried = await retryStep(db, { executionId: mover, expectedVersion: x.version });
      if (!retried.won) throw new Error('retry');
      const a = await claimStep(db, { executionId: mover, expectedVersion: retried.version, leaseSeconds: 30 });
      if (!a.won) throw new Error('claim a');
      const advanced = await advanceExecution(db, a.claim, { nextStepId: pause, status: 'RUNNING', output: {} });
      if (!advanced.won) throw new Error('advance');
      const b = await claimStep(db, { executionId: mover, expectedVersion: advanced.version, leaseSeconds: 30 });
      if (!b.won) throw new Error('claim b');
      await failStep(db, b.claim, { error: 'boom again', retryInSeconds: null });
    };

    const result = await applyMany(
      t.db,
      { projectId, actor: OPERATOR, action: 'SKIP_STEP', reason: 'skip the broken trigger', filter: filterOf(wf.id, ids), dryRun: false, ratePerSecond: 1000, onSelected: () => moveOn(t.db) },
      GRACE,
    );
    expect(result.matched).toBe(2);
    const byId = new Map(result.items.map((i) => [i.executionId, i]));
    expect(byId.get(mover)).toMatchObject({ outcome: 'SKIPPED_CHANGED' });
    expect(byId.get(mover)!.detail).toMatch(/changed since selection/);
    expect(byId.get(stayer)).toMatchObject({ outcome: 'APPLIED' });

    // The mover's newer failed step was left as it was.
    expect(await t.db.workflowExecution.findUniqueOrThrow({ where: { id: mover } })).toMatchObject({ status: 'FAILED', currentStepId: pause });
    expect(await rowOf(mover, pause)).toMatchObject({ status: 'FAILED' });
    expect(await rowOf(stayer, start)).toMatchObject({ status: 'SKIPPED' });
    // The attempt on the mover is audited as lost, with nothing applied to it.
    expect((await t.db.auditEntry.findMany({ where: { targetId: mover, action: 'repair.SKIP_STEP' } })).map((e) => e.outcome)).toEqual(['LOST']);
    await expectHealthy();
  });

  it('a refused row says why and stays SKIPPED (not SKIPPED_CHANGED)', async () => {
    const wf = await workflowFrom(t.db, projectId, delayWorkflow(3600, { name: 'bulk-refused' }));
    const [id] = await enrollMany(wf.id, 'refused', 1);
    await runStepsOnly(t.db); // parked at the DELAY: it cannot be retried
    const result = await applyMany(
      t.db,
      { projectId, actor: OPERATOR, action: 'RETRY_STEP', reason: 'retry all', filter: { executionIds: [id!] }, dryRun: false },
      GRACE,
    );
    expect(result.items).toEqual([expect.objectContaining({ executionId: id, outcome: 'SKIPPED', detail: expect.stringMatching(/can be retried/) })]);
  });
});
