import { runMigrations } from 'graphile-worker';
import {
  backendCpu,
  commits,
  cpuSeconds,
  progress,
  ratio,
  round,
  rssMb,
  sleep,
  spawnChild,
  stopChild,
  type BenchContext,
  type Child,
} from './support';
import { enrollAll, finishedSteps, holdBack, newWorkflow, release, remaining, seedContacts, STEPS_PER_EXECUTION, stepsWorkflow } from './workload';

// Steps/s of the engine's real worker processes (`npm run worker`) against the raw
// baseline (the same statements over plain pg, bench/raw-worker.ts) and the peer
// (graphile-worker 0.17, no-op jobs), with 1, 2 and 4 processes of the same concurrency.

export const PROCESS_COUNTS = [1, 2, 4] as const;
export const CONCURRENCY = 4;

export interface Throughput {
  processes: number;
  concurrency: number;
  items: number;
  seconds: number;
  perSecond: number;
  commitsPerItem: number;
  statementsPerItem?: number;
  maxRssMb?: number | null;
  /**
   * CPU milliseconds per step (job): the worker processes', and their PostgreSQL
   * backends' (null when the server is on another host). Unlike a rate, this hardly moves
   * when something else loads the machine.
   */
  cpuMsPerItem?: { worker: number | null; postgres: number | null };
}

/** CPU milliseconds per item, or null. */
function perItem(seconds: number | null, items: number): number | null {
  return seconds === null ? null : round((seconds * 1000) / items, 3);
}

async function sumCpu(pids: number[]): Promise<number | null> {
  const each = await Promise.all(pids.map(cpuSeconds));
  return each.some((c) => c === null) ? null : each.reduce((a: number, c) => a + c!, 0);
}

const POLL_MS = 100;

/** Wait until `left()` is 0, sampling worker RSS meanwhile; the harness's own polls are counted. */
async function drain(left: () => Promise<number>, pids: number[], exited?: Promise<unknown>): Promise<{ polls: number; maxRss: number | null }> {
  let polls = 0;
  let maxRss: number | null = null;
  let done = false;
  void exited?.then(() => (done = true));
  const deadline = Date.now() + 15 * 60_000;
  for (;;) {
    for (const pid of pids) {
      const rss = await rssMb(pid);
      if (rss !== null) maxRss = Math.max(maxRss ?? 0, rss);
    }
    polls++;
    if ((await left()) === 0) return { polls, maxRss };
    if (done && (await left()) > 0) throw new Error('the workers exited with work left');
    if (Date.now() > deadline) throw new Error('the phase did not finish in 15 minutes');
    await sleep(POLL_MS);
  }
}

/** The same database as `url`, its connections named `name` in pg_stat_activity. */
function withApplicationName(url: string, name: string): string {
  const u = new URL(url);
  u.searchParams.set('application_name', name);
  return u.toString();
}

/** Start n children at once (each waits for its own ready line); if one fails, stop the others. */
async function spawnMany(n: number, start: () => Promise<Child>): Promise<Child[]> {
  const started = await Promise.allSettled(Array.from({ length: n }, start));
  const children = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) {
    await Promise.all(children.map((c) => stopChild(c, 'SIGKILL')));
    throw failed.reason;
  }
  return children;
}

/** Every child's exit code; a round that has not finished in 15 minutes is killed and reported. */
async function allExited(workers: Child[]): Promise<(number | null)[]> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      for (const w of workers) w.child.kill('SIGKILL');
      reject(new Error(`the round did not finish in 15 minutes:\n${workers.map((w) => w.output().slice(-2000)).join('\n')}`));
    }, 15 * 60_000);
  });
  try {
    return await Promise.race([Promise.all(workers.map((w) => w.exited)), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function prepareRound(ctx: BenchContext, projectId: string, contacts: string[], label: string): Promise<string> {
  const workflowId = await newWorkflow(ctx.db, projectId, stepsWorkflow(label));
  await enrollAll(ctx.db, projectId, workflowId, contacts);
  await holdBack(ctx.db, workflowId);
  // A running system's tables have statistics; a round's freshly seeded backlog must not
  // be planned as if the tables were empty (for the engine and the peer alike).
  await ctx.pool.query('ANALYZE "WorkflowExecution", "StepExecution", "Message", "Contact"');
  return workflowId;
}

export async function engineRound(ctx: BenchContext, projectId: string, contacts: string[], n: number): Promise<Throughput> {
  const workflowId = await prepareRound(ctx, projectId, contacts, `steps-engine-${n}`);
  const workers = await spawnMany(n, () =>
    spawnChild(['--import', 'tsx', 'scripts/worker.ts', '--concurrency', String(CONCURRENCY)], {
      env: { DATABASE_URL: ctx.url, LOG_LEVEL: process.env.LOG_LEVEL ?? 'info' },
      marker: 'worker started',
    }),
  );
  const pids = workers.map((w) => w.child.pid!);
  const before = await commits(ctx.pool);
  const cpuBefore = await sumCpu(pids);
  const backends = backendCpu(ctx.pool, ['waypost-worker']);
  const t0 = performance.now();
  await release(ctx.db, workflowId);
  const { polls, maxRss } = await drain(() => remaining(ctx.db, workflowId), pids);
  const seconds = (performance.now() - t0) / 1000;
  const cpuAfter = await sumCpu(pids);
  const postgresCpu = await backends.stop();
  await Promise.all(workers.map((w) => stopChild(w)));
  await sleep(200);
  const steps = await finishedSteps(ctx.db, workflowId);
  if (steps !== contacts.length * STEPS_PER_EXECUTION) throw new Error(`engine ran ${steps} steps, expected ${contacts.length * STEPS_PER_EXECUTION}`);
  const delta = (await commits(ctx.pool)) - before - 2 * polls - 2;
  return {
    processes: n,
    concurrency: CONCURRENCY,
    items: steps,
    seconds: round(seconds, 2),
    perSecond: round(steps / seconds),
    commitsPerItem: round(delta / steps, 2),
    maxRssMb: maxRss,
    cpuMsPerItem: { worker: perItem(cpuBefore !== null && cpuAfter !== null ? cpuAfter - cpuBefore : null, steps), postgres: perItem(postgresCpu, steps) },
  };
}

async function rawRound(ctx: BenchContext, projectId: string, contacts: string[], n: number): Promise<Throughput> {
  const workflowId = await prepareRound(ctx, projectId, contacts, `steps-raw-${n}`);
  const workers = await spawnMany(n, () =>
    spawnChild(['--import', 'tsx', 'bench/raw-worker.ts', '--concurrency', String(CONCURRENCY), '--workflow', workflowId], {
      env: { DATABASE_URL: ctx.url },
      marker: 'ready',
    }),
  );
  await release(ctx.db, workflowId);
  const before = await commits(ctx.pool);
  const backends = backendCpu(ctx.pool, ['waypost-bench-raw']);
  const t0 = performance.now();
  for (const w of workers) w.child.stdin!.write('go\n');
  const codes = await allExited(workers);
  const seconds = (performance.now() - t0) / 1000;
  const postgresCpu = await backends.stop();
  if (codes.some((c) => c !== 0)) throw new Error(`a raw worker failed:\n${workers.map((w) => w.output()).join('\n')}`);
  if ((await remaining(ctx.db, workflowId)) !== 0) throw new Error('the raw workers left work behind');
  await sleep(200);
  const steps = await finishedSteps(ctx.db, workflowId);
  if (steps !== contacts.length * STEPS_PER_EXECUTION) throw new Error(`raw baseline ran ${steps} steps, expected ${contacts.length * STEPS_PER_EXECUTION}`);
  const delta = (await commits(ctx.pool)) - before - 1;
  const statements = workers.reduce((sum, w) => sum + (w.result()?.statements ?? 0), 0);
  const workerCpu = workers.reduce((sum, w) => sum + (w.result()?.cpuSeconds ?? 0), 0);
  return {
    processes: n,
    concurrency: CONCURRENCY,
    items: steps,
    seconds: round(seconds, 2),
    perSecond: round(steps / seconds),
    commitsPerItem: round(delta / steps, 2),
    statementsPerItem: round(statements / steps, 2),
    cpuMsPerItem: { worker: perItem(workerCpu, steps), postgres: perItem(postgresCpu, steps) },
  };
}

async function peerRound(ctx: BenchContext, jobs: number, n: number): Promise<Throughput> {
  // perfTest's init.js: jobs queued in bulk with add_job over a generate_series.
  await ctx.pool.query(`
    do $$
    begin
      perform graphile_worker.add_job('log_if_999', json_build_object('id', i)) from generate_series(1, ${jobs}) i;
    end;
    $$ language plpgsql;`);
  await ctx.pool.query('ANALYZE graphile_worker._private_jobs, graphile_worker._private_job_queues, graphile_worker._private_tasks');
  const workers = await spawnMany(n, () =>
    spawnChild(['--import', 'tsx', 'bench/peer-worker.ts', '--concurrency', String(CONCURRENCY)], {
      env: { DATABASE_URL: withApplicationName(ctx.url, 'waypost-bench-peer'), NO_LOG_SUCCESS: '1' },
      marker: 'ready',
    }),
  );
  const before = await commits(ctx.pool);
  const backends = backendCpu(ctx.pool, ['waypost-bench-peer']);
  const t0 = performance.now();
  for (const w of workers) w.child.stdin!.write('go\n');
  const codes = await allExited(workers);
  const seconds = (performance.now() - t0) / 1000;
  const postgresCpu = await backends.stop();
  if (codes.some((c) => c !== 0)) throw new Error(`a graphile-worker process failed:\n${workers.map((w) => w.output()).join('\n')}`);
  const { rows } = await ctx.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM graphile_worker._private_jobs');
  if (rows[0]!.n !== 0) throw new Error(`graphile-worker left ${rows[0]!.n} jobs`);
  await sleep(200);
  const delta = (await commits(ctx.pool)) - before - 2;
  const workerCpu = workers.reduce((sum, w) => sum + (w.result()?.cpuSeconds ?? 0), 0);
  return {
    processes: n,
    concurrency: CONCURRENCY,
    items: jobs,
    seconds: round(seconds, 2),
    perSecond: round(jobs / seconds),
    commitsPerItem: round(delta / jobs, 2),
    cpuMsPerItem: { worker: perItem(workerCpu, jobs), postgres: perItem(postgresCpu, jobs) },
  };
}

export interface StepsResult {
  workflow: string;
  executionsPerRound: number;
  engine: Throughput[];
  raw: Throughput[];
  peer: Throughput[];
  ratios: { processes: number; engineToRaw: number | null; engineToPeer: number | null }[];
}

const cpuText = (t: Throughput) => `CPU ms/item: worker ${t.cpuMsPerItem?.worker ?? '?'}, postgres ${t.cpuMsPerItem?.postgres ?? '?'}`;

export async function stepsPhase(ctx: BenchContext, projectId: string): Promise<StepsResult> {
  const executions = ctx.options.quick ? 120 : 2000;
  const jobs = executions * STEPS_PER_EXECUTION;
  const contacts = await seedContacts(ctx.db, projectId, 'steps', executions);
  await runMigrations({ connectionString: ctx.url, noHandleSignals: true, logger: undefined });
  const result: StepsResult = {
    workflow: 'TRIGGER -> SEND_EMAIL -> DELAY 0 -> CONDITION -> EXIT',
    executionsPerRound: executions,
    engine: [],
    raw: [],
    peer: [],
    ratios: [],
  };
  for (const n of PROCESS_COUNTS) {
    const engine = await engineRound(ctx, projectId, contacts, n);
    progress('steps', `engine  ${n} proc x ${CONCURRENCY}: ${engine.perSecond} steps/s (${engine.items} in ${engine.seconds} s, ${engine.commitsPerItem} commits/step, ${cpuText(engine)}, RSS ${engine.maxRssMb} MB)`);
    const raw = await rawRound(ctx, projectId, contacts, n);
    progress('steps', `raw     ${n} proc x ${CONCURRENCY}: ${raw.perSecond} steps/s (${raw.commitsPerItem} commits/step, ${raw.statementsPerItem} statements/step, ${cpuText(raw)})`);
    const peer = await peerRound(ctx, jobs, n);
    progress('steps', `peer    ${n} proc x ${CONCURRENCY}: ${peer.perSecond} jobs/s (${peer.items} in ${peer.seconds} s, ${peer.commitsPerItem} commits/job, ${cpuText(peer)})`);
    result.engine.push(engine);
    result.raw.push(raw);
    result.peer.push(peer);
    result.ratios.push({
      processes: n,
      engineToRaw: ratio(engine.perSecond, raw.perSecond),
      engineToPeer: ratio(engine.perSecond, peer.perSecond),
    });
  }
  return result;
}
