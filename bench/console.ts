import pg from 'pg';
import { closeDb, createDb } from '../server/db';
import { createCaller } from '../server/trpc/root';
import type { Actor } from '../server/auth/actor';
import { STUCK_REASONS } from '../server/common/stuck-reasons';
import { recomputeConsoleFigures } from '../server/read/console-figures';
import { settleFigureRefreshes } from '../server/read/figures';
import { stuckScope } from '../server/trpc/scope';
import { appOf, progress, percentile, round, type BenchContext } from './support';
import { seedConsoleProject, type SeededCounts } from './console-seed';
import { newWorkflow } from './workload';

// The console at scale: a project seeded set-based (INSERT ... SELECT generate_series)
// with executions in every status and stuck reason, their step rows, events, emails and
// audit entries, consistent with every invariant; then p50/p95 of each console query
// through the tRPC router in-process (the product's code, not a copy of its SQL), and the
// plan of every statement it sent, flagging a sequential scan of a big table.

const BIG_TABLES = ['WorkflowExecution', 'StepExecution', 'Event', 'Message'];
const APP = 'waypost-bench-console';

export interface ConsoleQuery {
  name: string;
  p50Ms: number;
  p95Ms: number;
  targetMs: number;
  samples: number;
  statements: number;
  seqScans: string[];
}

export interface ConsoleResult extends SeededCounts {
  seedSeconds: number;
  /** A bare round trip on this server right now: the floor under every figure below. */
  roundTripMs: { p50: number; p95: number };
  queries: ConsoleQuery[];
  /**
   * What computing the console's figures from scratch costs (server/read/console-figures.ts),
   * twice in a row, and the big tables its statements scan: the price of each background
   * refresh, which the console's reads above do not pay (they serve the stored figures
   * with their asOf once computing live is over budget).
   */
  figureRecomputes: { figure: string; costMs: number[]; seqScans: string[] }[];
  overTarget: string[];
  withSeqScans: string[];
}

interface Captured {
  text: string;
  values: unknown[];
}

/** Statements the product's code sends on connections of this bench's console pool, while `fn` runs. */
async function capture(fn: () => Promise<unknown>): Promise<Captured[]> {
  const seen: Captured[] = [];
  const original = pg.Client.prototype.query;
  (pg.Client.prototype as { query: unknown }).query = function (this: pg.Client, config: unknown, ...rest: unknown[]) {
    if (appOf(this) === APP && config && typeof config === 'object' && 'text' in config) {
      const c = config as { text: string; values?: unknown[] };
      if (!/^\s*(BEGIN|COMMIT|ROLLBACK|SET|SELECT 1)\b/i.test(c.text)) seen.push({ text: c.text, values: c.values ?? [] });
    }
    return (original as (...a: unknown[]) => unknown).call(this, config, ...rest);
  } as never;
  try {
    await fn();
  } finally {
    pg.Client.prototype.query = original;
  }
  return seen;
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}
const nodes = (p: PlanNode): PlanNode[] => [p, ...(p.Plans ?? []).flatMap(nodes)];

async function seqScans(pool: pg.Pool, statements: Captured[]): Promise<string[]> {
  const found = new Set<string>();
  for (const s of statements) {
    try {
      const { rows } = await pool.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (FORMAT JSON) ${s.text}`, s.values);
      for (const n of nodes(rows[0]!['QUERY PLAN'][0].Plan)) {
        if (n['Node Type'] === 'Seq Scan' && n['Relation Name'] && BIG_TABLES.includes(n['Relation Name'])) found.add(n['Relation Name']);
      }
    } catch (error) {
      found.add(`(EXPLAIN failed: ${String(error).slice(0, 80)})`);
    }
  }
  return [...found];
}

export async function consolePhase(ctx: BenchContext): Promise<ConsoleResult> {
  const executions = ctx.options.quick ? 50_000 : 1_000_000;
  const reps = ctx.options.quick ? 8 : 25;
  const project = await ctx.db.project.create({ data: { name: 'console' } });
  const workflowIds: string[] = [];
  for (let n = 0; n < 100; n++) {
    workflowIds.push(
      await newWorkflow(ctx.db, project.id, {
        name: `console-${n}`,
        trigger: 'MANUAL',
        allowReentry: false,
        steps: [
          { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
          { key: 'hello', type: 'SEND_EMAIL', name: 'Hello', config: { subject: 'Hello', body: 'Hi there' } },
          { key: 'wait', type: 'WAIT_FOR_EVENT', name: 'Wait for a purchase', config: { eventName: 'purchase', timeoutSeconds: 1800 } },
          { key: 'thanks', type: 'SEND_EMAIL', name: 'Thanks', config: { subject: 'Thanks', body: 'Thanks for buying' } },
          { key: 'bye', type: 'EXIT', name: 'No purchase', config: { reason: 'no purchase' } },
        ],
        transitions: [
          { from: 'start', to: 'hello', branch: null },
          { from: 'hello', to: 'wait', branch: null },
          { from: 'wait', to: 'thanks', branch: 'EVENT' },
          { from: 'wait', to: 'bye', branch: 'TIMEOUT' },
        ],
      }),
    );
  }
  const t0 = performance.now();
  const client = await ctx.pool.connect();
  let counts;
  try {
    counts = await seedConsoleProject(client, project.id, workflowIds, executions);
  } finally {
    client.release(true);
  }
  const seedSeconds = round((performance.now() - t0) / 1000, 1);
  progress('console', `seeded ${counts.executions} executions, ${counts.stepRows} step rows, ${counts.events} events, ${counts.messages} emails in ${seedSeconds} s`);

  const db = createDb(ctx.url, { poolSize: 4, applicationName: APP });
  const explainPool = new pg.Pool({ connectionString: ctx.url, max: 2 });
  const actor: Actor = { kind: 'user', id: 'user:bench-owner', label: 'owner@bench.example', userId: 'bench-owner', apiKeyId: null, projectId: project.id, role: 'OWNER' };
  const caller = createCaller({ db, headers: new Headers(), actor });
  try {
    const sample = await ctx.pool.query<{ id: string; contact: string }>(
      `SELECT id, "contactId" AS contact FROM "WorkflowExecution" WHERE "projectId" = $1 ORDER BY id LIMIT 50`,
      [project.id],
    );
    const waitStep = await ctx.pool.query<{ id: string }>(`SELECT id FROM "WorkflowStep" WHERE "workflowId" = $1 AND key = 'wait'`, [workflowIds[7]]);
    // The cursor of a page 10,000 rows deep, walked to the way a person paging would.
    let cursor: string | undefined;
    for (let seen = 0; seen < 10_000; seen += 200) {
      const page = await caller.executions.list({ limit: 200, cursor: cursor as never });
      cursor = (page as { nextCursor?: string | null }).nextCursor ?? undefined;
      if (!cursor) break;
    }
    const day = 86_400_000;
    const queries: { name: string; targetMs?: number; run: (i: number) => Promise<unknown> }[] = [
      { name: 'executions.list first page', run: () => caller.executions.list({}) },
      ...(['RUNNING', 'WAITING', 'COMPLETED', 'EXITED', 'FAILED', 'CANCELLED'] as const).map((status) => ({
        name: `executions.list status=${status}`,
        run: () => caller.executions.list({ status: [status] }),
      })),
      ...STUCK_REASONS.map((reason) => ({ name: `executions.list stuck=${reason}`, run: () => caller.executions.list({ stuck: [reason] }) })),
      { name: 'executions.list workflow', run: (i: number) => caller.executions.list({ workflowId: workflowIds[i % 100]! }) },
      { name: 'executions.list step', run: () => caller.executions.list({ workflowId: workflowIds[7]!, stepId: waitStep.rows[0]!.id }) },
      { name: 'executions.list contact email prefix', run: (i: number) => caller.executions.list({ contact: `console-${1000 + i}` }) },
      { name: 'executions.list contact id', run: (i: number) => caller.executions.list({ contact: sample.rows[i % 50]!.contact }) },
      { name: 'executions.list time window', run: () => caller.executions.list({ since: new Date(Date.now() - 11 * day), until: new Date(Date.now() - 10 * day) }) },
      { name: 'executions.list 10,000 rows deep', run: () => caller.executions.list({ cursor: cursor as never }) },
      { name: 'executions.get', run: (i: number) => caller.executions.get({ id: sample.rows[i % 50]!.id }) },
      { name: 'executions.stats', run: () => caller.executions.stats({}) },
      { name: 'executions.stats workflow', run: (i: number) => caller.executions.stats({ workflowId: workflowIds[i % 100]! }) },
      { name: 'repair.stuck all', run: () => caller.repair.stuck({}) },
      ...STUCK_REASONS.map((reason) => ({ name: `repair.stuck ${reason}`, run: () => caller.repair.stuck({ reason }) })),
      { name: 'repair.stuckGroups', run: () => caller.repair.stuckGroups({}) },
      { name: 'contacts.get journey', run: (i: number) => caller.contacts.get({ id: sample.rows[i % 50]!.contact }) },
      { name: 'workflows.get live counts', run: (i: number) => caller.workflows.get({ id: workflowIds[i % 100]! }) },
      { name: 'workflows.list', run: () => caller.workflows.list() },
      { name: 'audit.list', run: () => caller.audit.list({}) },
      { name: 'health.invariants', targetMs: 200, run: () => caller.health.invariants() },
    ];
    const trips: number[] = [];
    for (let i = 0; i < reps * 4; i++) {
      const t = performance.now();
      await explainPool.query('SELECT 1');
      trips.push(performance.now() - t);
    }
    const roundTripMs = { p50: round(percentile(trips, 50), 1), p95: round(percentile(trips, 95), 1) };
    progress('console', `SELECT 1 round trip: p50 ${roundTripMs.p50} ms, p95 ${roundTripMs.p95} ms`);
    // The figures are computed twice first, as two console reads would: from then on the
    // reads below serve them stored (with asOf) and refresh them in the background.
    const figureRecomputes: ConsoleResult['figureRecomputes'] = [];
    for (let pass = 0; pass < 2; pass++) {
      let costs: { figure: string; costMs: number }[] = [];
      const statements = await capture(async () => {
        costs = await recomputeConsoleFigures(db, stuckScope(project.id));
      });
      for (const c of costs) {
        let entry = figureRecomputes.find((f) => f.figure === c.figure);
        if (!entry) figureRecomputes.push((entry = { figure: c.figure, costMs: [], seqScans: [] }));
        entry.costMs.push(round(c.costMs, 1));
      }
      if (pass === 0) {
        const scans = await seqScans(explainPool, statements);
        for (const f of figureRecomputes) f.seqScans = scans;
      }
    }
    for (const f of figureRecomputes) progress('console', `figure ${f.figure}: full recompute ${f.costMs.join(' ms, ')} ms`);
    progress('console', `figures' statements scan: ${figureRecomputes[0]?.seqScans.join(', ') || 'no big table'}`);
    const results: ConsoleQuery[] = [];
    for (const q of queries) {
      const statements = await capture(() => q.run(0));
      // `reps` samples, or fewer (at least 3) for a query so slow that they would take
      // more than 20 s: a query of seconds is over its target either way.
      const samples: number[] = [];
      const began = performance.now();
      for (let i = 1; i <= reps && (i <= 3 || performance.now() - began < 20_000); i++) {
        const t = performance.now();
        await q.run(i);
        samples.push(performance.now() - t);
      }
      const r: ConsoleQuery = {
        name: q.name,
        p50Ms: round(percentile(samples, 50), 1),
        p95Ms: round(percentile(samples, 95), 1),
        targetMs: q.targetMs ?? 50,
        samples: samples.length,
        statements: statements.length,
        seqScans: await seqScans(explainPool, statements),
      };
      progress('console', `${r.name}: p50 ${r.p50Ms} ms, p95 ${r.p95Ms} ms, ${r.statements} statements${r.seqScans.length ? `, SEQ SCAN of ${r.seqScans.join(', ')}` : ''}`);
      results.push(r);
    }
    return {
      ...counts,
      seedSeconds,
      roundTripMs,
      queries: results,
      figureRecomputes,
      overTarget: results.filter((r) => r.p95Ms > r.targetMs).map((r) => r.name),
      withSeqScans: results.filter((r) => r.seqScans.length > 0).map((r) => r.name),
    };
  } finally {
    await settleFigureRefreshes();
    await closeDb(db);
    await explainPool.end();
  }
}
