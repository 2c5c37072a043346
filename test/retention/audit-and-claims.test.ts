import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RetentionSweeper } from '../../server/retention/sweeper';
import { claimSweep, runSweep, sweep } from '../../server/retention/sweep';
import { retentionStatus } from '../../server/retention/status';
import { DEFAULT_TIMING } from '../../server/retention/policy';
import { freshDatabase, type TestDatabase } from '../support/database';
import { actorFor, callerFor } from '../support/callers';
import { createProject } from '../support/fixtures';
import { healthyRun, violations, type Healthy } from '../support/healthy-run';
import { racers } from '../support/race';
import { ageProject, FAST, rowsOf, seedFinished } from '../support/retention';

// The audit sweep (AUDIT_RETENTION_DAYS, its own period and its own walk), and how a
// sweep is claimed, recorded and shown: one worker at a time per kind, the outcome in
// RetentionSweep and RetentionProjectSweep, read by retention.status.

let t: TestDatabase;
const GRACE = 120;

beforeAll(async () => {
  t = await freshDatabase();
});
afterAll(async () => {
  await t.drop();
});

const auditTargets = async (projectId: string) =>
  (await t.query(`SELECT "targetId" FROM "AuditEntry" WHERE "projectId" = $1`, [projectId])).map((r) => r.targetId as string);

describe('the audit sweep', () => {
  let run: Healthy;
  beforeAll(async () => {
    run = await healthyRun(t);
    await ageProject(t, run.projectId, 40);
  });

  it('removes nothing younger than AUDIT_RETENTION_DAYS, and nothing but audit entries', async () => {
    const before = await rowsOf(t, run.projectId);
    const result = await sweep(t.db, 'audit', { days: 60, graceSeconds: GRACE, timing: FAST });
    expect(result.removed).toEqual({ auditEntries: 0 });
    expect(await rowsOf(t, run.projectId)).toEqual(before);
  });

  it('keeps every entry about an execution, an email or an event still kept, so I8 still proves each manual change', async () => {
    const before = await rowsOf(t, run.projectId);
    const [{ orphans }] = await t.query(
      `SELECT count(*)::int AS orphans FROM "AuditEntry" a WHERE a."projectId" = $1
          AND NOT EXISTS (SELECT 1 FROM "WorkflowExecution" WHERE id::text = a."targetId")
          AND NOT EXISTS (SELECT 1 FROM "Message" WHERE id::text = a."targetId") AND NOT EXISTS (SELECT 1 FROM "Event" WHERE id::text = a."targetId")`,
      [run.projectId],
    );
    const result = await sweep(t.db, 'audit', { days: 30, graceSeconds: GRACE, timing: { ...FAST, rowBatch: 3 } });
    // Every execution of the healthy run is still there: only entries about something not kept (a workflow, say) go.
    expect(result.removed.auditEntries).toBe(orphans);
    expect(await rowsOf(t, run.projectId)).toEqual({ ...before, auditEntries: before.auditEntries! - orphans });
    expect(await violations(t.db)).toEqual({});
  });

  it('after the history sweep, removes the entries of what it removed, and keeps the rest', async () => {
    const history = await sweep(t.db, 'history', { days: 30, graceSeconds: GRACE, timing: FAST });
    expect(history.removed.executions).toBeGreaterThan(10);
    const before = await auditTargets(run.projectId);
    const result = await sweep(t.db, 'audit', { days: 30, graceSeconds: GRACE, timing: { ...FAST, rowBatch: 3 } });
    const after = await auditTargets(run.projectId);
    expect(result.removed.auditEntries).toBe(before.length - after.length);
    expect(result.removed.auditEntries).toBeGreaterThan(5);
    // The cancelled execution is gone, and its CANCEL entry with it; the pending retry's RETRY_STEP stays.
    expect(after).not.toContain(run.ids.cancelled);
    expect(after).toContain(run.ids.retryPending);
    for (const target of after) {
      const [{ kept }] = await t.query(
        `SELECT EXISTS (SELECT 1 FROM "WorkflowExecution" WHERE id::text = $1) OR EXISTS (SELECT 1 FROM "Message" WHERE id::text = $1)
             OR EXISTS (SELECT 1 FROM "Event" WHERE id::text = $1) AS kept`,
        [target],
      );
      expect(kept, target).toBe(true);
    }
    expect(await violations(t.db)).toEqual({});
  });
});

describe('claims and outcomes', () => {
  it('of several workers asking at once, one sweeps; the others get null, and none errs', async () => {
    const projectId = (await createProject(t.db)).id;
    await seedFinished(t, t.db, projectId, 20, 40);
    await t.query(`UPDATE "RetentionSweep" SET "lastFinishedAt" = NULL, owner = NULL, "runningSince" = NULL WHERE kind = 'history'`);
    const r = await racers(t.url, 5);
    try {
      const results = await r.race((db, i) => runSweep(db, 'history', `worker:${i}`, { days: 30, graceSeconds: GRACE, timing: { ...FAST, executionBatch: 3 } }));
      expect(results.filter((x) => x.status === 'rejected')).toEqual([]);
      const ran = results.map((x) => (x as PromiseFulfilledResult<unknown>).value).filter((v) => v !== null);
      expect(ran).toHaveLength(1);
      expect(ran[0]).toMatchObject({ outcome: 'COMPLETED', removed: { executions: 20, steps: 40, emails: 20 } });
    } finally {
      await r.close();
    }
    const [row] = await t.query(`SELECT * FROM "RetentionSweep" WHERE kind = 'history'`);
    expect(row).toMatchObject({ owner: null, runningSince: null, lastOutcome: 'COMPLETED', lastDays: 30, lastError: null });
    expect(row.lastRemoved).toMatchObject({ executions: 20, steps: 40, emails: 20 });
    expect(row.lastDurationMs).toBeGreaterThanOrEqual(0);
    const [mine] = await t.query(`SELECT removed FROM "RetentionProjectSweep" WHERE "projectId" = $1 AND kind = 'history'`, [projectId]);
    expect(mine.removed).toMatchObject({ executions: 20, steps: 40, emails: 20, events: 0 });
  });

  it('is not due again until an hour after the last one ended; a claim whose worker stopped reporting is taken over', async () => {
    expect(await runSweep(t.db, 'history', 'worker:a', { days: 30, graceSeconds: GRACE, timing: FAST })).toBeNull();
    expect(await runSweep(t.db, 'history', 'worker:a', { days: 30, graceSeconds: GRACE, timing: { ...FAST, everyMs: 0 } })).not.toBeNull();
    const since = await claimSweep(t.db, 'history', 'worker:dead', { ...DEFAULT_TIMING, everyMs: 0 });
    expect(since).toBeInstanceOf(Date);
    // Held, and reported a moment ago: nobody else may sweep.
    expect(await claimSweep(t.db, 'history', 'worker:b', { ...DEFAULT_TIMING, everyMs: 0 })).toBeNull();
    await t.query(`UPDATE "RetentionSweep" SET "heartbeatAt" = now() - interval '3 minutes' WHERE kind = 'history'`);
    const taken = await runSweep(t.db, 'history', 'worker:b', { days: 30, graceSeconds: GRACE, timing: { ...FAST, everyMs: 0 } });
    expect(taken?.outcome).toBe('COMPLETED');
    const [row] = await t.query(`SELECT owner, "lastOutcome" FROM "RetentionSweep" WHERE kind = 'history'`);
    expect(row).toEqual({ owner: null, lastOutcome: 'COMPLETED' });
  });

  it('a sweep taken over stops at its next batch, and leaves the outcome to the worker that took it', async () => {
    const projectId = (await createProject(t.db)).id;
    await seedFinished(t, t.db, projectId, 12, 40);
    await t.query(`UPDATE "RetentionSweep" SET "lastFinishedAt" = NULL WHERE kind = 'history'`);
    const running = runSweep(t.db, 'history', 'worker:slow', { days: 30, graceSeconds: GRACE, timing: { executionBatch: 2, minPauseMs: 100, pauseRatio: 0 } });
    await new Promise((r) => setTimeout(r, 150));
    // Another worker took the claim over (this one looked dead to it).
    await t.query(`UPDATE "RetentionSweep" SET owner = 'worker:fast' WHERE kind = 'history'`);
    const result = await running;
    expect(result?.stopped).toBe(true);
    expect(result!.removed.executions).toBeLessThan(12);
    const [row] = await t.query(`SELECT owner FROM "RetentionSweep" WHERE kind = 'history'`);
    expect(row.owner).toBe('worker:fast');
    await t.query(`UPDATE "RetentionSweep" SET owner = NULL, "runningSince" = NULL, "heartbeatAt" = NULL WHERE kind = 'history'`);
  });

  it("a worker's sweeper stops between two batches on SIGTERM, and records the sweep STOPPED", async () => {
    const projectId = (await createProject(t.db)).id;
    await seedFinished(t, t.db, projectId, 30, 40);
    await t.query(`UPDATE "RetentionSweep" SET "lastFinishedAt" = NULL WHERE kind = 'history'`);
    const sweeper = new RetentionSweeper(t.db, {
      owner: 'worker:stopping',
      historyDays: 30,
      auditDays: 0,
      graceSeconds: GRACE,
      timing: { executionBatch: 2, minPauseMs: 30, pauseRatio: 0, checkEveryMs: 60_000 },
    });
    sweeper.start();
    await new Promise((r) => setTimeout(r, 150));
    await sweeper.stop();
    const [row] = await t.query(`SELECT owner, "lastOutcome", "lastRemoved" FROM "RetentionSweep" WHERE kind = 'history'`);
    expect(row).toMatchObject({ owner: null, lastOutcome: 'STOPPED' });
    expect(row.lastRemoved.executions).toBeGreaterThan(0);
    expect(row.lastRemoved.executions).toBeLessThan(30);
    // Off (both periods 0): a sweeper that never starts.
    expect(new RetentionSweeper(t.db, { owner: 'w', historyDays: 0, auditDays: 0, graceSeconds: GRACE }).enabled).toBe(false);
  });
});

describe('retention.status', () => {
  it('shows the policy (off, or the days with their variable), the last sweep, and what it removed in the caller\'s project only', async () => {
    const projectId = (await createProject(t.db)).id;
    const other = (await createProject(t.db)).id;
    await seedFinished(t, t.db, projectId, 3, 40);
    await seedFinished(t, t.db, other, 5, 40);
    await runSweep(t.db, 'history', 'worker:s', { days: 30, graceSeconds: GRACE, timing: { ...FAST, everyMs: 0 } });
    await runSweep(t.db, 'audit', 'worker:s', { days: 90, graceSeconds: GRACE, timing: { ...FAST, everyMs: 0 } });

    const status = await retentionStatus(t.db, projectId, { historyDays: 30, auditDays: 0 });
    expect(status.history).toMatchObject({
      variable: 'RETENTION_DAYS',
      days: 30,
      runningSince: null,
      last: { outcome: 'COMPLETED', days: 30, finishedAt: expect.any(Date), error: null },
      project: { removed: { executions: 3, steps: 6, emails: 3 } },
    });
    expect(status.audit).toMatchObject({ variable: 'AUDIT_RETENTION_DAYS', days: null, last: { days: 90 }, project: { removed: { auditEntries: 0 } } });
    expect(status.neverRemoved.join(' ')).toMatch(/failed ones not yet repaired/);

    // Through the router, as any member: this test process has neither variable set, so both read off.
    const viewer = callerFor(t.db, actorFor(projectId, 'VIEWER'));
    const shown = await viewer.retention.status();
    expect(shown.history).toMatchObject({ days: null, project: { removed: { executions: 3 } } });
    expect(shown.audit.days).toBeNull();
  });
});
