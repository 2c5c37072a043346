import { closeDb, createDb } from '../server/db';
import { createEngineContext } from '../server/engine/context';
import { storeEvent, trackEvent } from '../server/engine/events';
import { progress, round, sleep, spawnChild, stopChild, type BenchContext, type Child } from './support';
import { holdBackAll, newWorkflow, seedContacts } from './workload';

// Events: tracked with inline dispatch by 8 callers (each event enrolls its contact into
// an EVENT-triggered workflow), and stored only, then dispatched by the outbox sweeper
// of 2 worker processes.

export interface EventsResult {
  trackedPerSecond: number;
  tracked: number;
  sweptPerSecond: number;
  swept: number;
  sweepWorkers: number;
}

export async function eventsPhase(ctx: BenchContext, projectId: string): Promise<EventsResult> {
  const seconds = ctx.options.quick ? 3 : 10;
  const sweepCount = ctx.options.quick ? 200 : 3000;
  const contacts = await seedContacts(ctx.db, projectId, 'events', ctx.options.quick ? 2000 : 20_000);
  await newWorkflow(ctx.db, projectId, {
    name: 'on-signup',
    trigger: 'EVENT',
    triggerEvent: 'signup',
    allowReentry: true,
    steps: [
      { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
      { key: 'done', type: 'EXIT', name: 'Done', config: {} },
    ],
    transitions: [{ from: 'start', to: 'done', branch: null }],
  });
  const db = createDb(ctx.url, { poolSize: 8, applicationName: 'waypost-bench-events' });
  const engine = createEngineContext(db, { owner: `bench:${process.pid}` });
  try {
    let tracked = 0;
    let next = 0;
    const t0 = performance.now();
    const deadline = t0 + seconds * 1000;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (performance.now() < deadline) {
          const contactId = contacts[next++ % contacts.length]!;
          const r = await trackEvent(engine, { projectId, name: 'signup', contactId, data: { n: next } });
          if (!r.ok) throw new Error(`trackEvent refused: ${r.reason}`);
          tracked++;
        }
      }),
    );
    const trackedPerSecond = round(tracked / ((performance.now() - t0) / 1000));
    progress('events', `tracked + dispatched inline: ${trackedPerSecond}/s (${tracked}, 8 callers)`);
    await holdBackAll(ctx.db);

    // The sweeper: events stored without dispatch, due at once.
    for (let i = 0; i < sweepCount; i++) {
      await storeEvent(db, { projectId, name: 'signup', contactId: contacts[(i * 7) % contacts.length]!, data: {} }, 0);
    }
    const pending = `SELECT count(*)::int AS n FROM "Event" WHERE "projectId" = $1 AND "processedAt" IS NULL AND "deadAt" IS NULL`;
    const workers: Child[] = [];
    for (let i = 0; i < 2; i++) {
      workers.push(await spawnChild(['--import', 'tsx', 'scripts/worker.ts', '--concurrency', '4'], { env: { DATABASE_URL: ctx.url }, marker: 'worker started' }));
    }
    const t1 = performance.now();
    try {
      await ctx.pool.query(`SELECT pg_notify('waypost_work', '')`);
      const end = Date.now() + 10 * 60_000;
      while ((await ctx.pool.query<{ n: number }>(pending, [projectId])).rows[0]!.n > 0) {
        if (Date.now() > end) throw new Error('the sweeper did not drain the events in 10 minutes');
        await sleep(100);
      }
    } finally {
      await Promise.all(workers.map((w) => stopChild(w)));
    }
    const sweptPerSecond = round(sweepCount / ((performance.now() - t1) / 1000));
    progress('events', `dispatched by the sweeper (2 workers): ${sweptPerSecond}/s (${sweepCount})`);
    await holdBackAll(ctx.db);
    return { trackedPerSecond, tracked, sweptPerSecond, swept: sweepCount, sweepWorkers: 2 };
  } finally {
    await closeDb(db);
  }
}
