import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { closeDb, createDb } from '../server/db';
import { createEngineContext } from '../server/engine/context';
import { runWorkerOnce } from '../server/engine/worker';
import { claimDueEvents, claimQueuedMessages, claimReadySteps, lockDueWaits } from '../server/engine/claims';
import { appOf, commits, cpuSeconds, percentile, progress, recordStatement, round, sleep, spawnChild, stopChild, type BenchContext } from './support';
import { enrollAll, finishedSteps, holdBack, newWorkflow, release, remaining, seedContacts, stepsWorkflow } from './workload';

// What bounds the engine: statements and transactions per step (counted on the wire of
// an in-process worker), where one worker process spends its CPU (node --cpu-prof,
// grouped by package), how busy it is (CPU seconds per wall second), and what the
// claim statements cost inside PostgreSQL (EXPLAIN ANALYZE).

export interface DiagnosisResult {
  statementsPerStep: number;
  transactionsPerStep: number;
  commitsPerStep: number;
  statementsByKind: Record<string, number>;
  worker: { steps: number; seconds: number; cpuSecondsPerSecond: number; cpuByPackage: Record<string, number> };
  explain: Record<string, { planningMs: number; executionMs: number }>;
  /** One committed single-row write, one after another: the WAL flush every statement of the engine waits for. */
  commitLatencyMs: { p50: number; p95: number };
  /** What that latency allows: in-flight executions / (commits per step x commit latency). */
  boundStepsPerSecond: { concurrency: number; steps: number }[];
}

/** The latency of a durable commit on this server right now (sequential, one connection). */
async function commitLatency(ctx: BenchContext, projectId: string, n: number): Promise<{ p50: number; p95: number }> {
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await ctx.pool.query({ name: 'bench-commit-probe', text: 'UPDATE "Project" SET name = name WHERE id = $1', values: [projectId] });
    samples.push(performance.now() - t);
  }
  return { p50: round(percentile(samples, 50), 2), p95: round(percentile(samples, 95), 2) };
}

function kindOf(text: string): string {
  const first = text.trim().split(/\s+/)[0]!.toUpperCase();
  if (first === 'BEGIN' || first === 'COMMIT' || first === 'ROLLBACK') return first;
  const named = /^\s*--\s*(\w+)/.exec(text)?.[1];
  if (named) return named;
  if (/"StepExecution" AS s/.test(text) && /FOR UPDATE SKIP LOCKED/.test(text)) return 'claimReadySteps';
  if (/INSERT INTO "StepExecution"/.test(text)) return 'claimStep';
  if (/INSERT INTO "Message"/.test(text)) return 'advanceExecutions';
  if (/status = 'SENDING'/.test(text) && /QUEUED/.test(text)) return 'claimQueuedMessages';
  if (/UPDATE "Message"/.test(text)) return 'recordDelivery';
  if (/"nextDispatchAt" <= now\(\)/.test(text)) return 'claimDueEvents';
  if (/status = 'WAITING' AND s."resolvedBy" IS NOT NULL\)/.test(text) && /SET version/.test(text)) return 'advanceFromWaits';
  if (/"resolvedAt" <= now\(\)/.test(text)) return 'findPendingContinuations';
  if (/FROM "Workflow"/.test(text) || /"WorkflowStep"/.test(text)) return 'workflow graph';
  return text.replace(/\s+/g, ' ').slice(0, 40);
}

/** Count every statement the engine sends while one in-process worker drains `executions`. */
async function countStatements(ctx: BenchContext, projectId: string, contacts: string[]) {
  const workflowId = await newWorkflow(ctx.db, projectId, stepsWorkflow('diagnosis-count'));
  await enrollAll(ctx.db, projectId, workflowId, contacts);
  const byKind: Record<string, number> = {};
  let statements = 0;
  const original = pg.Client.prototype.query;
  const db = createDb(ctx.url, { poolSize: 6, applicationName: 'waypost-bench-diagnosis' });
  const before = await commits(ctx.pool);
  (pg.Client.prototype as { query: unknown }).query = function (this: pg.Client, config: unknown, ...rest: unknown[]) {
    if (appOf(this) === 'waypost-bench-diagnosis') {
      const text = typeof config === 'string' ? config : (config as { text?: string })?.text;
      if (text) {
        statements++;
        const kind = kindOf(text);
        byKind[kind] = (byKind[kind] ?? 0) + 1;
      }
    }
    return (original as (...a: unknown[]) => unknown).call(this, config, ...rest);
  } as never;
  try {
    const engine = createEngineContext(db, { owner: `bench-diagnosis:${process.pid}` });
    await runWorkerOnce(engine, { concurrency: 4 });
  } finally {
    pg.Client.prototype.query = original;
    await closeDb(db);
  }
  await sleep(500);
  const steps = await finishedSteps(ctx.db, workflowId);
  const delta = (await commits(ctx.pool)) - before - 1;
  const perStep: Record<string, number> = {};
  for (const [k, v] of Object.entries(byKind).sort((a, b) => b[1] - a[1])) perStep[k] = round(v / steps, 2);
  return { steps, statements, byKind: perStep, commits: delta };
}

/** Where one real worker process spends its CPU, by package. */
function cpuByPackage(dir: string): Record<string, number> {
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) return {};
  const profile = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as {
    nodes: { id: number; callFrame: { url: string; functionName: string } }[];
    samples: number[];
  };
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const totals: Record<string, number> = {};
  for (const id of profile.samples) {
    const node = byId.get(id)!;
    const url = node.callFrame.url;
    const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
    const group = m
      ? m[1]!
      : url.includes('/server/')
        ? 'waypost server/'
        : url.startsWith('node:')
          ? 'node internals'
          : node.callFrame.functionName === '(idle)'
            ? '(idle)'
            : node.callFrame.functionName === '(garbage collector)'
              ? '(gc)'
              : url
                ? 'other'
                : `(${node.callFrame.functionName || 'native'})`.replace('((', '(').replace('))', ')');
    totals[group] = (totals[group] ?? 0) + 1;
  }
  const busy = Object.entries(totals).filter(([k]) => k !== '(idle)').reduce((s, [, n]) => s + n, 0);
  const shares: [string, number][] = Object.entries(totals)
    .filter(([k]) => k !== '(idle)')
    .map(([k, n]) => [k, round((100 * n) / busy, 1)]);
  return Object.fromEntries(shares.sort((a, b) => b[1] - a[1]).slice(0, 12));
}

async function profileWorker(ctx: BenchContext, projectId: string, contacts: string[]) {
  const workflowId = await newWorkflow(ctx.db, projectId, stepsWorkflow('diagnosis-profile'));
  await enrollAll(ctx.db, projectId, workflowId, contacts);
  await holdBack(ctx.db, workflowId);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'waypost-bench-prof-'));
  const worker = await spawnChild(['--cpu-prof', `--cpu-prof-dir=${dir}`, '--import', 'tsx', 'scripts/worker.ts', '--concurrency', '4'], {
    env: { DATABASE_URL: ctx.url },
    marker: 'worker started',
  });
  const cpu0 = (await cpuSeconds(worker.child.pid!)) ?? 0;
  const t0 = performance.now();
  await release(ctx.db, workflowId);
  while ((await remaining(ctx.db, workflowId)) > 0) await sleep(100);
  const seconds = (performance.now() - t0) / 1000;
  const cpu = ((await cpuSeconds(worker.child.pid!)) ?? 0) - cpu0;
  await stopChild(worker);
  const steps = await finishedSteps(ctx.db, workflowId);
  const byPackage = cpuByPackage(dir);
  rmSync(dir, { recursive: true, force: true });
  return { steps, seconds: round(seconds, 2), cpuSecondsPerSecond: round(cpu / seconds, 2), cpuByPackage: byPackage };
}

/** EXPLAIN ANALYZE of the claims a pass sends, on a queue of ready work, rolled back. */
async function explainClaims(ctx: BenchContext, projectId: string, contacts: string[]) {
  const workflowId = await newWorkflow(ctx.db, projectId, stepsWorkflow('diagnosis-explain'));
  await enrollAll(ctx.db, projectId, workflowId, contacts);
  const owner = 'bench-explain';
  const statements = {
    claimReadySteps: recordStatement((db) => claimReadySteps(db, { limit: 4, leaseSeconds: 30, owner, maxAttempts: 3 })),
    lockDueWaits: recordStatement((db) => lockDueWaits(db, { limit: 4 })),
    claimDueEvents: recordStatement((db) => claimDueEvents(db, { owner, leaseSeconds: 30, limit: 4 })),
    claimQueuedMessages: recordStatement((db) => claimQueuedMessages(db, { owner, leaseSeconds: 30, limit: 4 })),
  };
  const out: Record<string, { planningMs: number; executionMs: number }> = {};
  const client = await ctx.pool.connect();
  try {
    for (const [name, s] of Object.entries(statements)) {
      await client.query('BEGIN');
      const { rows } = await client.query<{ 'QUERY PLAN': [{ 'Planning Time': number; 'Execution Time': number }] }>(
        `EXPLAIN (ANALYZE, FORMAT JSON) ${s.text}`,
        s.values as unknown[],
      );
      await client.query('ROLLBACK');
      const plan = rows[0]!['QUERY PLAN'][0];
      out[name] = { planningMs: round(plan['Planning Time'], 3), executionMs: round(plan['Execution Time'], 3) };
    }
  } finally {
    client.release();
  }
  await holdBack(ctx.db, workflowId);
  return out;
}

export async function diagnosisPhase(ctx: BenchContext, projectId: string): Promise<DiagnosisResult> {
  const n = ctx.options.quick ? 120 : 1000;
  const contacts = await seedContacts(ctx.db, projectId, 'diagnosis', n);
  const counted = await countStatements(ctx, projectId, contacts);
  const statementsPerStep = round(counted.statements / counted.steps, 2);
  const transactionsPerStep = round(counted.commits / counted.steps, 2);
  progress('diagnosis', `in-process worker: ${statementsPerStep} statements/step, ${transactionsPerStep} commits/step; per step: ${JSON.stringify(counted.byKind)}`);
  const worker = await profileWorker(ctx, projectId, contacts);
  progress('diagnosis', `one worker process (--cpu-prof): ${round(worker.steps / worker.seconds)} steps/s, ${worker.cpuSecondsPerSecond} CPU s per s; CPU by package %: ${JSON.stringify(worker.cpuByPackage)}`);
  const explain = await explainClaims(ctx, projectId, contacts);
  progress('diagnosis', `EXPLAIN ANALYZE (ms): ${JSON.stringify(explain)}`);
  const latency = await commitLatency(ctx, projectId, ctx.options.quick ? 100 : 400);
  const boundStepsPerSecond = [4, 8, 16].map((c) => ({ concurrency: c, steps: round((c * 1000) / (transactionsPerStep * latency.p50)) }));
  progress('diagnosis', `commit latency p50 ${latency.p50} ms, p95 ${latency.p95} ms: at ${transactionsPerStep} commits/step that allows ${boundStepsPerSecond.map((b) => `${b.steps} steps/s with ${b.concurrency} in flight`).join(', ')} (before group commit)`);
  return {
    commitLatencyMs: latency,
    boundStepsPerSecond,
    statementsPerStep,
    transactionsPerStep,
    commitsPerStep: transactionsPerStep,
    statementsByKind: counted.byKind,
    worker,
    explain,
  };
}
