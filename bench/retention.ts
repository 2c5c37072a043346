import { createCaller } from '../server/trpc/root';
import type { Actor } from '../server/auth/actor';
import { createDb, closeDb } from '../server/db';
import { addRemoved, total, type Removed } from '../server/retention/policy';
import { sweep } from '../server/retention/sweep';
import { seedRetentionProject, type RetentionSeeded } from './retention-seed';
import type { WorkflowInput } from '../server/common/workflow-definition';
import { CONCURRENCY, engineRound, type Throughput } from './steps';
import { percentile, progress, ratio, round, sleep, type BenchContext } from './support';
import { newWorkflow, seedContacts } from './workload';

// Retention at scale (docs/deploy.md, "Retention"): 1,000,000 executions seeded as a year
// of production leaves them (most finished and old: bench/retention-seed.ts), then one
// history sweep with RETENTION_DAYS=30 and the product's own pacing, on its own
// connection, as a worker runs it. Measured: rows removed per second, each batch's
// statement time (how long its locks are held), the workers' steps/s while it runs beside
// steps/s without it in the same run (before and after), and a console list's latency.

const WORKER_PROCESSES = 2;

export interface RetentionResult extends RetentionSeeded {
  seedSeconds: number;
  sweep: { seconds: number; rows: number; rowsPerSecond: number; batches: number; batchMs: { p50: number; p95: number; max: number }; removed: Removed };
  steps: { before: Throughput; during: Throughput; after: Throughput; ratioToBefore: number | null; ratioToAfter: number | null };
  consoleList: { alone: { p50: number; p95: number }; duringSweep: { p50: number; p95: number } | null };
}

const mailWorkflow = (n: number): WorkflowInput => ({
  name: `retention-mail-${n}`,
  trigger: 'MANUAL' as const,
  allowReentry: true,
  steps: [
    { key: 'start', type: 'TRIGGER' as const, name: 'Start', config: {} },
    { key: 'mail', type: 'SEND_EMAIL' as const, name: 'Mail', config: { subject: 'Hello', body: 'Hi' } },
  ],
  transitions: [{ from: 'start', to: 'mail', branch: null }],
});

const waitWorkflow: WorkflowInput = {
  name: 'retention-wait',
  trigger: 'MANUAL' as const,
  allowReentry: false,
  steps: [
    { key: 'start', type: 'TRIGGER' as const, name: 'Start', config: {} },
    { key: 'wait', type: 'WAIT_FOR_EVENT' as const, name: 'Wait', config: { eventName: 'purchase', timeoutSeconds: 90 * 86_400 } },
    { key: 'done', type: 'EXIT' as const, name: 'Done', config: { reason: 'done' } },
  ],
  transitions: [
    { from: 'start', to: 'wait', branch: null },
    { from: 'wait', to: 'done', branch: 'EVENT' },
    { from: 'wait', to: 'done', branch: 'TIMEOUT' },
  ],
};

/** p50/p95 ms of the console's executions list (first page, the project's newest) over `n` reads. */
async function listLatency(ctx: BenchContext, projectId: string, n: number): Promise<{ p50: number; p95: number }> {
  const actor: Actor = { kind: 'user', id: 'user:bench', label: 'bench', userId: 'bench', apiKeyId: null, projectId, role: 'VIEWER' };
  const caller = createCaller({ db: ctx.db, headers: new Headers(), actor });
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await caller.executions.list(i % 2 ? { status: ['COMPLETED'] } : {});
    samples.push(performance.now() - t0);
    await sleep(50);
  }
  return { p50: round(percentile(samples, 50), 1), p95: round(percentile(samples, 95), 1) };
}

async function stepsRound(ctx: BenchContext, label: string, executions: number): Promise<Throughput> {
  const project = await ctx.db.project.create({ data: { name: `retention-steps-${label}` } });
  const contacts = await seedContacts(ctx.db, project.id, `retention-${label}`, executions);
  const result = await engineRound(ctx, project.id, contacts, WORKER_PROCESSES);
  progress('retention', `steps ${label}: ${result.perSecond} steps/s (${result.items} in ${result.seconds} s, ${WORKER_PROCESSES} proc x ${CONCURRENCY})`);
  return result;
}

export async function retentionPhase(ctx: BenchContext): Promise<RetentionResult> {
  const executions = ctx.options.quick ? 50_000 : 1_000_000;
  const roundExecutions = ctx.options.quick ? 300 : 2000;
  // The bench's worker processes sweep nothing of their own.
  process.env.RETENTION_DAYS = '0';
  process.env.AUDIT_RETENTION_DAYS = '0';
  const project = await ctx.db.project.create({ data: { name: 'retention' } });
  const mail: string[] = [];
  for (let n = 0; n < 10; n++) mail.push(await newWorkflow(ctx.db, project.id, mailWorkflow(n)));
  const wait = await newWorkflow(ctx.db, project.id, waitWorkflow);
  const t0 = performance.now();
  const client = await ctx.pool.connect();
  let seeded: RetentionSeeded;
  try {
    seeded = await seedRetentionProject(client, project.id, { mail, wait }, executions);
  } finally {
    client.release();
  }
  const seedSeconds = round((performance.now() - t0) / 1000, 1);
  progress('retention', `seeded ${seeded.executions} executions (${seeded.removable} old, finished, not stuck) in ${seedSeconds} s`);

  const alone = await listLatency(ctx, project.id, 30);
  const before = await stepsRound(ctx, 'before', roundExecutions);

  // The sweep, on a connection of its own as a worker's sweeper has it, with the product's pacing.
  const sweepDb = createDb(ctx.url, { poolSize: 1, applicationName: 'waypost-retention' });
  const batchMs: number[] = [];
  const removed: Removed = {};
  let sweeping = true;
  const s0 = performance.now();
  const swept = sweep(sweepDb, 'history', {
    days: 30,
    graceSeconds: 120,
    onBatch: (ms, r) => {
      batchMs.push(ms);
      addRemoved(removed, r);
      if (batchMs.length % 200 === 0) progress('retention', `sweep: ${batchMs.length} batches, ${total(removed)} rows so far`);
    },
  }).finally(() => (sweeping = false));
  let during: Throughput;
  let duringSweep: { p50: number; p95: number } | null = null;
  try {
    await sleep(3000);
    during = await stepsRound(ctx, 'during', roundExecutions);
    if (!sweeping) progress('retention', 'warning: the sweep ended before the round beside it did');
    if (sweeping) duringSweep = await listLatency(ctx, project.id, 30);
    await swept;
  } finally {
    await swept.catch(() => {});
    await closeDb(sweepDb);
  }
  const result = await swept;
  const seconds = (performance.now() - s0) / 1000;
  const rows = total(result.removed);
  progress('retention', `sweep: ${rows} rows in ${seconds.toFixed(1)} s (${Math.round(rows / seconds)}/s), ${result.batches} batches, ${JSON.stringify(result.removed)}`);
  if ((result.removed.executions ?? 0) + (result.removed.executionsReduced ?? 0) !== seeded.removable) {
    throw new Error(`the sweep removed ${result.removed.executions} and reduced ${result.removed.executionsReduced} executions; ${seeded.removable} were removable`);
  }
  const after = await stepsRound(ctx, 'after', roundExecutions);
  return {
    ...seeded,
    seedSeconds,
    sweep: {
      seconds: round(seconds, 1),
      rows,
      rowsPerSecond: Math.round(rows / seconds),
      batches: result.batches,
      batchMs: { p50: round(percentile(batchMs, 50), 1), p95: round(percentile(batchMs, 95), 1), max: round(Math.max(...batchMs), 1) },
      removed: result.removed,
    },
    steps: { before, during, after, ratioToBefore: ratio(during.perSecond, before.perSecond), ratioToAfter: ratio(during.perSecond, after.perSecond) },
    consoleList: { alone, duringSweep },
  };
}
