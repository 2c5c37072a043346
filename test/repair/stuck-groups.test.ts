import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WorkflowInput } from '../../server/common/workflow-definition';
import { enroll } from '../../server/engine/enrollment';
import { checkInvariants } from '../../server/engine/invariants';
import { advanceExecution, claimStep, failStep } from '../../server/engine/claims';
import { Prisma } from '../../server/db';
import { applyMany, runMany, type BulkProgress } from '../../server/repair/bulk';
import { normalisedError, stuckGroups } from '../../server/stuck/groups';
import { freshDatabase, type TestDatabase } from '../support/database';
import { runStepsOnly } from '../support/drive';
import { createProject, stepId, waitWorkflow, workflowFrom } from '../support/fixtures';

// Stuck items grouped by cause (reason, workflow, step, normalised error),
// and a bulk repair of one group selects exactly that group's rows: not the same reason's
// other steps, not the same step's other errors.

let t: TestDatabase;
let projectId: string;
const GRACE = { graceSeconds: 0 };
const OPERATOR = 'user:groups-operator';

beforeAll(async () => {
  t = await freshDatabase();
  projectId = (await createProject(t.db)).id;
});
afterAll(async () => t?.drop());

/** trigger -> update (a) -> update (b): two steps that can each fail. */
const twoSteps = (name: string): WorkflowInput => ({
  name,
  trigger: 'MANUAL',
  allowReentry: false,
  steps: [
    { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
    { key: 'a', type: 'UPDATE_CONTACT', name: 'Sync CRM', config: { set: { synced: true } } },
    { key: 'b', type: 'UPDATE_CONTACT', name: 'Sync billing', config: { set: { billed: true } } },
  ],
  transitions: [
    { from: 'start', to: 'a', branch: null },
    { from: 'a', to: 'b', branch: null },
  ],
});

let serial = 0;
/** A fresh execution that fails for good at `at` with `error`. */
async function failedAt(workflowId: string, at: 'a' | 'b', error: string): Promise<string> {
  const e = await enroll(t.db, { projectId, workflowId, email: `g${serial++}@example.com` });
  if (!e.ok) throw new Error(e.reason);
  let version = 1;
  for (const key of at === 'a' ? ['start'] : ['start', 'a']) {
    const c = await claimStep(t.db, { executionId: e.executionId, expectedVersion: version, leaseSeconds: 30 });
    if (!c.won) throw new Error(`claim ${key}`);
    const next = await stepId(t.db, workflowId, key === 'start' ? 'a' : 'b');
    const advanced = await advanceExecution(t.db, c.claim, { nextStepId: next, status: 'RUNNING', output: {} });
    if (!advanced.won) throw new Error(`advance ${key}`);
    version = advanced.version;
  }
  const c = await claimStep(t.db, { executionId: e.executionId, expectedVersion: version, leaseSeconds: 30 });
  if (!c.won) throw new Error(`claim ${at}`);
  await failStep(t.db, c.claim, { error, retryInSeconds: null });
  return e.executionId;
}

async function normalise(text: string | null): Promise<string | null> {
  const [row] = await t.db.$queryRaw<{ n: string | null }[]>`SELECT ${normalisedError(Prisma.sql`${text}::text`)} AS n`;
  return row!.n;
}

describe('error text normalisation', () => {
  it.each([
    ['timeout after 3012 ms', 'timeout after <n> ms'],
    ['timeout after 5000 ms', 'timeout after <n> ms'],
    ['row 2f1b6c1e-9a53-4c1e-8d2b-0f6e1a2b3c4d is locked', 'row <uuid> is locked'],
    ['unknown template "welcome-v2" in step', 'unknown template "…" in step'],
    ["can't reach host 'smtp-3.example.com' (attempt 4)", "can't reach host '…' (attempt <n>)"],
    ['out of memory   at 1.5 GB', 'out of memory at <n> GB'],
    ['invalid config [{ "code": "invalid_type", "path": ["subject"] }]', 'invalid config [{ "code": "…", "path": ["…"] }]'],
  ])('%s -> %s', async (text, expected) => {
    expect(await normalise(text)).toBe(expected);
  });

  it('no error stays no error', async () => {
    expect(await normalise(null)).toBeNull();
  });
});

describe('stuck groups', () => {
  let wfId: string;
  let a: string;
  let b: string;
  const ids: Record<string, string[]> = { timeoutA: [], refusedA: [], timeoutB: [] };

  beforeAll(async () => {
    const wf = await workflowFrom(t.db, projectId, twoSteps('groups-two-steps'));
    wfId = wf.id;
    [a, b] = [await stepId(t.db, wf.id, 'a'), await stepId(t.db, wf.id, 'b')];
    ids.timeoutA!.push(await failedAt(wf.id, 'a', 'CRM timeout after 3012 ms'));
    ids.timeoutA!.push(await failedAt(wf.id, 'a', 'CRM timeout after 5000 ms'));
    ids.timeoutA!.push(await failedAt(wf.id, 'a', 'CRM timeout after 41 ms'));
    ids.refusedA!.push(await failedAt(wf.id, 'a', "connection refused by 'crm-1'"));
    ids.timeoutB!.push(await failedAt(wf.id, 'b', 'CRM timeout after 12 ms'));
    // And an overdue wait in another workflow: a group without an error.
    const waiting = await workflowFrom(t.db, projectId, waitWorkflow({ name: 'groups-wait' }, 0));
    for (let i = 0; i < 2; i++) await enroll(t.db, { projectId, workflowId: waiting.id, email: `w${i}@example.com` });
    await runStepsOnly(t.db);
    await new Promise((r) => setTimeout(r, 50));
  });

  it('one group per (reason, workflow, step, normalised error), with count, oldest, newest and the oldest as sample', async () => {
    const groups = await stuckGroups(t.db, { projectId, ...GRACE });
    const failed = groups.filter((g) => g.reason === 'FAILED' && g.workflowId === wfId);
    const key = (g: (typeof groups)[number]) => `${g.stepName} | ${g.errorPattern}`;
    expect(Object.fromEntries(failed.map((g) => [key(g), g.count]))).toEqual({
      'Sync CRM | CRM timeout after <n> ms': 3,
      "Sync CRM | connection refused by '…'": 1,
      'Sync billing | CRM timeout after <n> ms': 1,
    });
    const biggest = failed[0]!;
    expect(biggest).toMatchObject({ workflowName: 'groups-two-steps', stepId: a, stepType: 'UPDATE_CONTACT' });
    expect(biggest.sample).toMatchObject({ executionId: ids.timeoutA![0], error: 'CRM timeout after 3012 ms', contactEmail: expect.stringContaining('@example.com') });
    expect(biggest.oldest.getTime()).toBeLessThanOrEqual(biggest.newest.getTime());

    const overdue = groups.filter((g) => g.reason === 'WAIT_OVERDUE');
    expect(overdue).toHaveLength(1);
    expect(overdue[0]).toMatchObject({ count: 2, errorPattern: null, workflowName: 'groups-wait', stepName: 'Wait for purchase' });

    // Filters narrow the groups, and the counts add up to the reason's count.
    const onlyFailed = await stuckGroups(t.db, { projectId, ...GRACE, reasons: ['FAILED'], workflowId: wfId });
    expect(onlyFailed.map((g) => g.count).reduce((x, y) => x + y, 0)).toBe(5);
  });

  it('a bulk repair of one group selects exactly its rows, and repairs only them', async () => {
    const filter = { reason: 'FAILED' as const, workflowId: wfId, stepId: a, errorPattern: 'CRM timeout after <n> ms' };
    const dry = await applyMany(t.db, { projectId, actor: OPERATOR, action: 'CANCEL', reason: 'incident 42', filter, dryRun: true }, GRACE);
    expect(dry.matched).toBe(3);

    const run = await applyMany(t.db, { projectId, actor: OPERATOR, action: 'CANCEL', reason: 'incident 42', filter, dryRun: false, ratePerSecond: 1000 }, GRACE);
    expect(run.items.map((i) => i.executionId).sort()).toEqual([...ids.timeoutA!].sort());
    expect(run.items.every((i) => i.outcome === 'APPLIED')).toBe(true);
    const statuses = await t.db.workflowExecution.findMany({ where: { workflowId: wfId }, select: { id: true, status: true } });
    const byId = new Map(statuses.map((s) => [s.id, s.status]));
    for (const id of ids.timeoutA!) expect(byId.get(id)).toBe('CANCELLED');
    for (const id of [...ids.refusedA!, ...ids.timeoutB!]) expect(byId.get(id)).toBe('FAILED');

    // The same step with another error, and another step with the same error, are groups of their own.
    const other = await applyMany(t.db, { projectId, actor: OPERATOR, action: 'CANCEL', reason: 'incident 42', filter: { ...filter, stepId: b }, dryRun: true }, GRACE);
    expect(other.matched).toBe(1);
    // A group without an error is selected by errorPattern null.
    const overdue = await applyMany(t.db, { projectId, actor: OPERATOR, action: 'FORCE_TIMEOUT', reason: 'x', filter: { reason: 'WAIT_OVERDUE', errorPattern: null }, dryRun: true }, GRACE);
    expect(overdue.matched).toBe(2);
    const none = await applyMany(t.db, { projectId, actor: OPERATOR, action: 'FORCE_TIMEOUT', reason: 'x', filter: { reason: 'WAIT_OVERDUE', errorPattern: 'boom' }, dryRun: true }, GRACE);
    expect(none.matched).toBe(0);
    const bad = (await checkInvariants(t.db)).filter((x) => x.violations > 0);
    expect(bad).toEqual([]);
  });

  it('runMany reports the selection, each row as it is done, and a stop between rows', async () => {
    const controller = new AbortController();
    const seen: BulkProgress[] = [];
    for await (const progress of runMany(
      t.db,
      { projectId, actor: OPERATOR, action: 'FORCE_TIMEOUT', reason: 'timer outage', filter: { reason: 'WAIT_OVERDUE' }, ratePerSecond: 1000, signal: controller.signal },
      GRACE,
    )) {
      seen.push(progress);
      if (progress.type === 'item') controller.abort();
    }
    expect(seen.map((p) => p.type)).toEqual(['selected', 'item', 'finished']);
    expect(seen[0]).toEqual({ type: 'selected', total: 2 });
    expect(seen[1]).toMatchObject({ type: 'item', done: 1, total: 2, item: { outcome: 'APPLIED' } });
    expect(seen[2]).toEqual({ type: 'finished', matched: 2, done: 1, interrupted: true });
    // The row done stays done; the other is still overdue.
    const left = await stuckGroups(t.db, { projectId, ...GRACE, reasons: ['WAIT_OVERDUE'] });
    expect(left.map((g) => g.count)).toEqual([1]);
  });
});
