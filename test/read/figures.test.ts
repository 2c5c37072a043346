import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeDb, createDb, type Db, type DbTx } from '../../server/db';
import { executionCountsQuery, type ExecutionCount } from '../../server/read/console-figures';
import { consoleFigure, refreshFigure, settleFigureRefreshes, type FigureKey, type FigurePolicy } from '../../server/read/figures';
import { actorFor, callerFor } from '../support/callers';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createProject, waitWorkflow } from '../support/fixtures';

// Console figures (server/read/figures.ts): computed for each read while cheap; past the
// budget, the stored figure with its asOf (never presented as live), refreshed in the
// background by exactly one of the processes that find it stale, and exact after it.

let t: TestDatabase;
let projectId: string;
let workflowId: string;
let enrolled = 0;

beforeAll(async () => {
  t = await freshDatabase();
  projectId = (await createProject(t.db)).id;
  workflowId = (await callerFor(t.db, actorFor(projectId, 'MARKETER')).workflows.create(waitWorkflow({ name: 'figures' }))).id;
  for (let i = 0; i < 3; i++) await enrollOne();
});
afterAll(async () => {
  await settleFigureRefreshes();
  await t?.drop();
});

async function enrollOne() {
  await callerFor(t.db, actorFor(projectId, 'MARKETER')).enrollments.enroll({ workflowId, email: `f${enrolled++}@example.com` });
}

/** The real execution counting query, counting how often it ran; `sleepMs` makes it take that long at least. */
function countingCompute(sleepMs = 0) {
  const c = {
    runs: 0,
    compute: async (db: DbTx) => {
      c.runs++;
      if (sleepMs) await db.$queryRaw`SELECT 1 AS slept FROM pg_sleep(${sleepMs / 1000}::float8)`;
      const rows = await db.$queryRaw<ExecutionCount[]>(executionCountsQuery(projectId));
      return rows.reduce((a, r) => a + r.n, 0);
    },
  };
  return c;
}

const live: FigurePolicy = { liveBudgetMs: 3_600_000, staleAfterMs: () => 0 };
/** Every figure over budget once computed; stored figures never stale unless said. */
const stored = (staleAfterMs = Infinity): FigurePolicy => ({ liveBudgetMs: 0, staleAfterMs: () => staleAfterMs });
let keys = 0;
const newKey = (): FigureKey => ({ projectId, kind: 'counts', scope: `test-${keys++}` });

describe('console figures', () => {
  it('a cheap figure is computed for each read: exact at once after a change, never "as of"', async () => {
    const key = newKey();
    const c = countingCompute();
    expect(await consoleFigure(t.db, key, c.compute, live)).toEqual({ value: enrolled, asOf: null });
    await enrollOne();
    expect(await consoleFigure(t.db, key, c.compute, live)).toEqual({ value: enrolled, asOf: null });
    expect(c.runs).toBe(2);
  });

  it('a first computation over budget turns the figure stored at once', async () => {
    const key = newKey();
    const c = countingCompute(20);
    expect((await consoleFigure(t.db, key, c.compute, stored())).asOf).toBeNull(); // nothing stored yet: computed
    const second = await consoleFigure(t.db, key, c.compute, stored());
    expect(second.asOf).toBeInstanceOf(Date);
    expect(second.value).toBe(enrolled);
    expect(c.runs).toBe(1);
  });

  it('a stored figure read again is served from the process\'s parsed copy while it is the same computation, and a refresh replaces it', async () => {
    const key = newKey();
    const c = {
      runs: 0,
      // An object value, so that the parsed copy is seen as the same object.
      compute: async (db: DbTx) => {
        c.runs++;
        const rows = await db.$queryRaw<ExecutionCount[]>(executionCountsQuery(projectId));
        return { total: rows.reduce((a, r) => a + r.n, 0), run: c.runs };
      },
    };
    await consoleFigure(t.db, key, c.compute, stored());
    const first = await consoleFigure(t.db, key, c.compute, stored());
    const again = await consoleFigure(t.db, key, c.compute, stored());
    expect(first.value).toEqual({ total: enrolled, run: 1 });
    expect(again.value).toBe(first.value); // not parsed again
    expect(again.asOf).toEqual(first.asOf);
    await enrollOne();
    expect(await refreshFigure(t.db, key, c.compute, first.asOf!)).toBe(true);
    const refreshed = await consoleFigure(t.db, key, c.compute, stored());
    expect(refreshed.value).toEqual({ total: enrolled, run: 2 });
    expect(refreshed.asOf!.getTime()).toBeGreaterThan(first.asOf!.getTime());
  });

  it('one slow computation does not turn a cheap figure stored: two in a row over budget do', async () => {
    const key = newKey();
    let sleepMs = 0;
    const c = countingCompute();
    const compute = async (db: DbTx) => {
      if (sleepMs) await db.$queryRaw`SELECT 1 AS slept FROM pg_sleep(${sleepMs / 1000}::float8)`;
      return c.compute(db);
    };
    const budget: FigurePolicy = { liveBudgetMs: 250, staleAfterMs: () => Infinity };
    expect((await consoleFigure(t.db, key, compute, budget)).asOf).toBeNull(); // cheap
    sleepMs = 500;
    expect((await consoleFigure(t.db, key, compute, budget)).asOf).toBeNull(); // judged by the cheap one: computed, slow
    expect((await consoleFigure(t.db, key, compute, budget)).asOf).toBeNull(); // one slow so far: computed again, slow
    const fourth = await consoleFigure(t.db, key, compute, budget); // two slow in a row: stored
    expect(fourth.asOf).toBeInstanceOf(Date);
    expect(fourth.value).toBe(enrolled);
    expect(c.runs).toBe(3);
  });

  it('past the budget: the stored figure with its asOf, refreshed in the background when stale, exact after the refresh', async () => {
    const key = newKey();
    const c = countingCompute(20);
    await consoleFigure(t.db, key, c.compute, stored()); // computed once, over budget: stored from here on
    const before = await consoleFigure(t.db, key, c.compute, stored());
    const counted = before.value;
    await enrollOne();
    // Not stale yet by the policy: the old count, and it says as of when.
    const old = await consoleFigure(t.db, key, c.compute, stored());
    expect(old).toEqual({ value: counted, asOf: before.asOf });
    expect(old.value).toBe(enrolled - 1);
    // Stale: still the stored figure for this read, and a refresh starts behind it.
    const stale = await consoleFigure(t.db, key, c.compute, stored(0));
    expect(stale).toEqual({ value: counted, asOf: before.asOf });
    await settleFigureRefreshes();
    const fresh = await consoleFigure(t.db, key, c.compute, stored());
    expect(fresh.value).toBe(enrolled);
    expect(fresh.asOf!.getTime()).toBeGreaterThan(before.asOf!.getTime());
    expect(c.runs).toBe(2);
  });

  // Guard: refreshFigure's claim (computedAt = the one seen, no live claim). Without it all six compute.
  it('single flight: of six processes that find the same figure stale, exactly one computes it', async () => {
    const key = newKey();
    const c = countingCompute(20);
    await consoleFigure(t.db, key, c.compute, stored()); // computed once, over budget: stored from here on
    const seen = (await consoleFigure(t.db, key, c.compute, stored())).asOf!;
    await enrollOne();
    // Six clients of their own (as six web processes), each on its own connections.
    const processes: Db[] = Array.from({ length: 6 }, () => createDb(t.url, { poolSize: 2, applicationName: 'waypost-test-figures' }));
    try {
      const slow = countingCompute(300);
      const won = await Promise.all(processes.map((db) => refreshFigure(db, key, slow.compute, seen)));
      expect(won.filter(Boolean)).toHaveLength(1);
      expect(slow.runs).toBe(1);
      // The refresh is released: the next stale reader may claim it.
      const [row] = await t.query(`SELECT "refreshStartedAt", "computedAt" FROM "ConsoleFigure" WHERE "projectId" = $1 AND kind = $2 AND scope = $3`, [
        projectId,
        key.kind,
        key.scope,
      ]);
      expect(row.refreshStartedAt).toBeNull();
      expect(row.computedAt.getTime()).toBeGreaterThan(seen.getTime());
    } finally {
      await Promise.all(processes.map((db) => closeDb(db)));
    }
    const fresh = await consoleFigure(t.db, key, c.compute, stored());
    expect(fresh.value).toBe(enrolled);
  });

  it('a refresh claimed by a process that died is taken over once abandoned, not before', async () => {
    const key = newKey();
    const c = countingCompute(20);
    await consoleFigure(t.db, key, c.compute, stored()); // computed once, over budget: stored from here on
    const seen = (await consoleFigure(t.db, key, c.compute, stored())).asOf!;
    const where = `WHERE "projectId" = $1 AND kind = $2 AND scope = $3`;
    await t.query(`UPDATE "ConsoleFigure" SET "refreshStartedAt" = now() - interval '1 minute' ${where}`, [projectId, key.kind, key.scope]);
    expect(await refreshFigure(t.db, key, c.compute, seen)).toBe(false);
    await t.query(`UPDATE "ConsoleFigure" SET "refreshStartedAt" = now() - interval '11 minutes' ${where}`, [projectId, key.kind, key.scope]);
    expect(await refreshFigure(t.db, key, c.compute, seen)).toBe(true);
  });

  it('the console procedures say their figures are live (asOf null) in a small project', async () => {
    const viewer = callerFor(t.db, actorFor(projectId, 'VIEWER'));
    const stats = await viewer.executions.stats({});
    expect(stats.asOf).toBeNull();
    expect(stats.total).toBe(enrolled);
    expect((await viewer.executions.stats({ workflowId })).total).toBe(enrolled);
    const [wf] = await viewer.workflows.list();
    expect(wf).toMatchObject({ countsAsOf: null });
    expect((await viewer.workflows.get({ id: workflowId })).countsAsOf).toBeNull();
    expect((await viewer.repair.stuckGroups({})).asOf).toBeNull();
    const invariants = await viewer.health.invariants();
    expect(invariants.every((r) => r.asOf === null && r.violations === 0)).toBe(true);
  });
});
