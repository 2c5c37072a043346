import { closeDb, createDb } from '../server/db';
import { createEngineContext } from '../server/engine/context';
import { trackEvent } from '../server/engine/events';
import { progress, round, sleep, spawnChild, stopChild, type BenchContext, type Child } from './support';
import { enrollAll, holdBack, newWorkflow, release, seedContacts, waitWorkflow } from './workload';

// Wait resolutions/s in an event-versus-timeout storm: every execution parks on a
// WAIT_FOR_EVENT; then all their deadlines are moved to 2 s from now (the timer of 2
// worker processes) while 8 callers track the awaited event for half of the contacts (inline
// dispatch). Each wait must be resolved exactly once, by whichever side won (I4). Two rates:
// over the whole storm (its first 2 s are events only: no wait is due yet), and after the
// deadline (the waits still unresolved then, over the time it took to finish them).

export interface WaitsResult {
  waits: number;
  workers: number;
  /** From the storm's start (deadlines moved to 2 s ahead, events begin) until every wait is resolved and advanced. */
  seconds: number;
  resolutionsPerSecond: number;
  /** From the moment the deadlines passed until done: the timer's share, with no idle time in it. */
  afterDeadlineSeconds: number;
  /** Waits still unresolved at the deadline, resolved per second after it (by the timer, or by late-dispatched events). */
  afterDeadlinePerSecond: number;
  byEvent: number;
  byTimeout: number;
}

async function count(ctx: BenchContext, sql: string, values: unknown[]): Promise<number> {
  const { rows } = await ctx.pool.query<{ n: number }>(sql, values);
  return rows[0]!.n;
}

export async function waitsPhase(ctx: BenchContext, projectId: string): Promise<WaitsResult> {
  const total = ctx.options.quick ? 200 : 3000;
  const workersN = 2;
  const contacts = await seedContacts(ctx.db, projectId, 'waits', total);
  const workflowId = await newWorkflow(ctx.db, projectId, waitWorkflow('waits-storm', 3600));
  await enrollAll(ctx.db, projectId, workflowId, contacts);
  await holdBack(ctx.db, workflowId);
  const workers: Child[] = [];
  for (let i = 0; i < workersN; i++) {
    workers.push(await spawnChild(['--import', 'tsx', 'scripts/worker.ts', '--concurrency', '4'], { env: { DATABASE_URL: ctx.url }, marker: 'worker started' }));
  }
  const db = createDb(ctx.url, { poolSize: 8, applicationName: 'waypost-bench-events' });
  try {
    await release(ctx.db, workflowId);
    const parked = `SELECT count(*)::int AS n FROM "WorkflowExecution" WHERE "workflowId" = $1 AND status = 'WAITING'`;
    while ((await count(ctx, parked, [workflowId])) < total) await sleep(100);
    // Statistics of the parked waits, as a running system's autovacuum would take them: with
    // the steps round's (no wait parked), the dispatch and the timer walk every parked wait.
    await ctx.pool.query('ANALYZE "WorkflowExecution", "StepExecution", "Event"');
    progress('waits', `${total} executions parked on WAIT_FOR_EVENT; the storm begins`);

    const engine = createEngineContext(db, { owner: `bench:${process.pid}` });
    const t0 = performance.now();
    // Every deadline comes due in a moment: events accepted before it resume their wait
    // (by dispatch, or by the timer taking the event), later ones find it timed out.
    await ctx.pool.query(
      `UPDATE "StepExecution" s SET "dueAt" = now() + interval '2 seconds'
         FROM "WorkflowExecution" e WHERE e.id = s."executionId" AND e."workflowId" = $1 AND s.status = 'WAITING'`,
      [workflowId],
    );
    const deadlineAt = t0 + 2000;
    let unresolvedAtDeadline: number | null = null;
    const unresolved = `SELECT count(*)::int AS n FROM "StepExecution" s JOIN "WorkflowExecution" e ON e.id = s."executionId"
                         WHERE e."workflowId" = $1 AND s.status = 'WAITING' AND s."resolvedBy" IS NULL`;
    const atDeadline = (async () => {
      await sleep(Math.max(0, deadlineAt - performance.now()));
      unresolvedAtDeadline = await count(ctx, unresolved, [workflowId]);
    })();
    const targets = contacts.filter((_, i) => i % 2 === 0);
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < targets.length) {
          const contactId = targets[next++]!;
          const r = await trackEvent(engine, { projectId, name: 'purchase', contactId, data: { total: 42 } });
          if (!r.ok) throw new Error(`trackEvent refused: ${r.reason}`);
        }
      }),
    );
    const active = `SELECT count(*)::int AS n FROM "WorkflowExecution" WHERE "workflowId" = $1 AND status IN ('RUNNING', 'WAITING')`;
    const deadline = Date.now() + 10 * 60_000;
    while ((await count(ctx, active, [workflowId])) > 0) {
      if (Date.now() > deadline) throw new Error('the wait storm did not settle in 10 minutes');
      await sleep(100);
    }
    const done = performance.now();
    await atDeadline;
    const seconds = (done - t0) / 1000;
    const afterDeadlineSeconds = Math.max(0.001, (done - deadlineAt) / 1000);
    const { rows } = await ctx.pool.query<{ by: string; n: number }>(
      `SELECT s."resolvedBy"::text AS by, count(*)::int AS n FROM "StepExecution" s
         JOIN "WorkflowExecution" e ON e.id = s."executionId"
         JOIN "WorkflowStep" ws ON ws.id = s."stepId" AND ws.type = 'WAIT_FOR_EVENT'
        WHERE e."workflowId" = $1 GROUP BY 1`,
      [workflowId],
    );
    const by = Object.fromEntries(rows.map((r) => [r.by, r.n]));
    const result = {
      waits: total,
      workers: workersN,
      seconds: round(seconds, 2),
      resolutionsPerSecond: round(total / seconds),
      afterDeadlineSeconds: round(afterDeadlineSeconds, 2),
      afterDeadlinePerSecond: round((unresolvedAtDeadline ?? 0) / afterDeadlineSeconds),
      byEvent: by.EVENT ?? 0,
      byTimeout: by.TIMEOUT ?? 0,
    };
    if (result.byEvent + result.byTimeout !== total) throw new Error(`waits resolved ${result.byEvent + result.byTimeout} times, expected ${total}`);
    progress('waits', `${result.resolutionsPerSecond} resolutions/s (${result.byEvent} by event, ${result.byTimeout} by timeout, ${result.seconds} s); after the deadline ${result.afterDeadlinePerSecond}/s (${unresolvedAtDeadline} in ${result.afterDeadlineSeconds} s)`);
    return result;
  } finally {
    await Promise.all(workers.map((w) => stopChild(w)));
    await closeDb(db);
  }
}
