import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { enrollAudited } from '../../server/engine/enrollment';
import { WAKE_SPACING_MS, WAKEUP_CHANNEL, wakeWorkersSoon } from '../../server/engine/wakeup';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createProject, delayWorkflow, workflowFrom } from '../support/fixtures';

// Workers are woken by NOTIFY after an enrollment through the API has committed, never
// from inside its transaction (NOTIFY's lock would be held through the WAL flush and
// serialise concurrent enrollments), and a burst of enrollments shares its wake-ups.

let t: TestDatabase;
let listener: pg.Client;
let heard: number[] = [];

beforeAll(async () => {
  t = await freshDatabase();
  listener = new pg.Client({ connectionString: t.url });
  await listener.connect();
  listener.on('notification', (n) => {
    if (n.channel === WAKEUP_CHANNEL) heard.push(Date.now());
  });
  await listener.query(`LISTEN ${WAKEUP_CHANNEL}`);
});
afterAll(async () => {
  await listener?.end();
  await t?.drop();
});
afterEach(() => {
  heard = [];
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Waits until `n` wake-ups have been heard (or 5 s), then a little longer for any extra one. */
async function heardAfter(n: number): Promise<number> {
  const deadline = Date.now() + 5_000;
  while (heard.length < n && Date.now() < deadline) await sleep(10);
  await sleep(WAKE_SPACING_MS * 20);
  return heard.length;
}

describe('waking the workers', () => {
  it('an accepted enrollment wakes them once it has committed; a refused one does not', async () => {
    const p = await createProject(t.db);
    const wf = await workflowFrom(t.db, p.id, delayWorkflow(3600));
    const by = { projectId: p.id, actor: 'system' };
    const accepted = await enrollAudited(t.db, by, { workflowId: wf.id, email: 'wake@example.com' });
    expect(accepted).toMatchObject({ ok: true, created: true });
    expect(await heardAfter(1)).toBe(1);
    // The execution the wake-up is for is committed: a worker woken by it finds it.
    const [row] = await t.query<{ n: number }>('SELECT count(*)::int AS n FROM "WorkflowExecution" WHERE id = $1', [
      (accepted as { executionId: string }).executionId,
    ]);
    expect(row!.n).toBe(1);

    heard = [];
    // Already in the workflow: refused, audited, nothing for the workers.
    const refused = await enrollAudited(t.db, by, { workflowId: wf.id, email: 'wake@example.com' });
    expect(refused).toMatchObject({ ok: false, reason: 'ACTIVE_EXECUTION' });
    expect(await heardAfter(0)).toBe(0);
  });

  it('a burst of wake-ups from one process is one NOTIFY at once and one more after the spacing', async () => {
    for (let round = 0; round < 3; round++) {
      heard = [];
      for (let i = 0; i < 100; i++) wakeWorkersSoon(t.db);
      expect(await heardAfter(2)).toBe(2);
      // The second comes at least the spacing after the first: the burst shared it.
      expect(heard[1]! - heard[0]!).toBeGreaterThanOrEqual(WAKE_SPACING_MS - 2);
    }
  });

  it('concurrent enrollments share wake-ups, and the last of them is followed by one', async () => {
    const p = await createProject(t.db);
    const wf = await workflowFrom(t.db, p.id, delayWorkflow(3600));
    const by = { projectId: p.id, actor: 'system' };
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => enrollAudited(t.db, by, { workflowId: wf.id, email: `burst-${i}@example.com` })),
    );
    const done = Date.now();
    expect(results.every((r) => r.ok)).toBe(true);
    const count = await heardAfter(1);
    expect(count).toBeGreaterThanOrEqual(1);
    expect(count).toBeLessThan(40);
    // Nothing is left unannounced: a wake-up is heard after the last enrollment returned.
    expect(heard[heard.length - 1]!).toBeGreaterThanOrEqual(done - WAKE_SPACING_MS * 2);
  });
});
