import { writeFileSync } from 'node:fs';
import pg from 'pg';
import { alive, type Cluster, type OwnedPostgres } from './cluster';
import type { Fault, FaultKind } from './schedule';

// Carrying out the schedule. Each fault says what it did (an injected fault that could
// not be injected is reported as such, never silently skipped).

export interface FaultRecord extends Fault {
  startedAt: string;
  injected: boolean;
  note: string;
}

export interface FaultContext {
  cluster: Cluster;
  postgres: OwnedPostgres | null;
  /** The drill's database (for holding locks) and its server's admin URL (for filling connections). */
  databaseUrl: string;
  mailControl: string;
  log: (line: string) => void;
}

/** The step type the paused worker is slow at (run.ts gives it WAYPOST_FAULT_PAUSE_STEP_TYPE). */
export const SLOW_STEP_TYPE = 'DELAY';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Open connections until the server refuses them (max_connections), hold them, then let
 * go. A pool that already holds its connections would not notice, so while the server is
 * full the product's idle connections are dropped every 250 ms (as a server at its limit
 * reaps idle sessions with idle_session_timeout): the web server and the workers must
 * connect again into a full server, and are refused.
 */
async function exhaustConnections(url: string, seconds: number): Promise<string> {
  const held: pg.Client[] = [];
  let refused = '';
  /** Open `n` more connections at once; those the server refuses are not held. */
  const grab = (n: number) =>
    Promise.all(
      Array.from({ length: n }, () => {
        const c = new pg.Client({ connectionString: url, application_name: 'waypost-drill-hog', connectionTimeoutMillis: 10_000 });
        c.on('error', () => {});
        return c.connect().then(
          () => held.push(c),
          (error: Error) => {
            refused ||= error.message;
          },
        );
      }),
    );
  try {
    // In batches, so the server is full within a second or two, not one handshake at a time.
    while (!refused && held.length < 400) await grab(25);
    let dropped = 0;
    const until = Date.now() + seconds * 1000;
    while (Date.now() < until) {
      if (held[0]) {
        const { rows } = await held[0].query<{ n: number }>(
          `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND state = 'idle'
              AND application_name LIKE 'waypost-%' AND application_name NOT LIKE 'waypost-drill%'`,
        );
        const n = rows[0]?.n ?? 0;
        dropped += n;
        // Take the freed slots before the product's pools can reconnect into them.
        if (n > 0) {
          await sleep(20);
          await grab(n + 5);
        }
      }
      await sleep(Math.min(250, Math.max(0, until - Date.now())));
    }
    return `held ${held.length} connections (${refused ? `then refused: ${refused}` : 'never refused'}) and dropped ${dropped} idle ones of the product's, for ${seconds} s`;
  } finally {
    await Promise.all(held.map((c) => c.end().catch(() => {})));
  }
}

/**
 * On a server the drill does not own (others use it), fill no slots: hold the engine's
 * tables exclusively instead, so every pool connection of the web server and the
 * workers piles up behind the lock and new requests wait for a connection.
 */
async function holdTableLocks(url: string, seconds: number): Promise<string> {
  const c = new pg.Client({ connectionString: url, application_name: 'waypost-drill-locks' });
  await c.connect();
  try {
    await c.query('BEGIN');
    await c.query('LOCK TABLE "WorkflowExecution", "StepExecution", "Event", "Message" IN ACCESS EXCLUSIVE MODE');
    await sleep(seconds * 1000);
    await c.query('ROLLBACK');
    return `held ACCESS EXCLUSIVE on the engine's tables for ${seconds} s`;
  } finally {
    await c.end().catch(() => {});
  }
}

/**
 * Wait (up to `ms`) until the worker holds claimed steps of `stepType` (the type it is slow
 * at: RUNNING under its lease), so a stop lands between a claim and its completion. The
 * worker's lease owner names its pid.
 */
async function untilHoldingSteps(url: string, pid: number, stepType: string, ms: number): Promise<number> {
  const c = new pg.Client({ connectionString: url, application_name: 'waypost-drill-watch' });
  c.on('error', () => {});
  const deadline = Date.now() + ms;
  try {
    await c.connect();
    while (Date.now() < deadline) {
      const { rows } = await c.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM "StepExecution" s JOIN "WorkflowStep" ws ON ws.id = s."stepId"
          WHERE s.status = 'RUNNING' AND s."leaseOwner" LIKE $1 AND s."leaseExpiresAt" > now() AND ws.type::text = $2`,
        [`worker:%:${pid}`, stepType],
      );
      if (rows[0]!.n > 0) return rows[0]!.n;
      await sleep(20);
    }
  } catch {
    // the database is unreachable (another fault): stop the worker as it is
  } finally {
    await c.end().catch(() => {});
  }
  return 0;
}

export async function inject(f: Fault, ctx: FaultContext): Promise<FaultRecord> {
  const record = (injected: boolean, note: string): FaultRecord => ({ ...f, startedAt: new Date().toISOString(), injected, note });
  const { cluster } = ctx;
  switch (f.kind as FaultKind) {
    case 'worker-kill': {
      const w = cluster.workers[f.worker!];
      if (!w || !alive(w)) return record(false, 'worker not running');
      const pid = w.child.pid;
      await cluster.kill(w, () => cluster.startWorker(f.worker!));
      return record(true, `SIGKILL pid ${pid}, restarted`);
    }
    case 'worker-pause': {
      const w = cluster.workers[f.worker!];
      if (!w || !alive(w)) return record(false, 'worker not running');
      const held = await untilHoldingSteps(ctx.databaseUrl, w.child.pid!, SLOW_STEP_TYPE, 20_000);
      w.child.kill('SIGSTOP');
      await sleep(f.seconds * 1000);
      if (alive(w)) w.child.kill('SIGCONT');
      return record(true, `SIGSTOP pid ${w.child.pid} holding ${held} claimed ${SLOW_STEP_TYPE} steps, for ${f.seconds} s (past its lease), then SIGCONT`);
    }
    case 'postgres-restart': {
      if (!ctx.postgres) return record(false, 'the drill does not own the server');
      const ms = await ctx.postgres.crashAndRestart(f.seconds * 1000);
      return record(true, `immediate shutdown (SIGQUIT), back after ${(ms / 1000).toFixed(1)} s with crash recovery`);
    }
    case 'pool-exhaust': {
      if (ctx.postgres) return record(true, await exhaustConnections(ctx.databaseUrl, f.seconds));
      return record(true, await holdTableLocks(ctx.databaseUrl, f.seconds));
    }
    case 'web-kill': {
      const web = cluster.web;
      if (!web || !alive(web)) return record(false, 'web server not running');
      const pid = web.child.pid;
      const t0 = Date.now();
      await cluster.kill(web, () => cluster.startWeb());
      await cluster.untilServing();
      return record(true, `SIGKILL pid ${pid} under load, serving again after ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    }
    case 'mail-fail': {
      writeFileSync(ctx.mailControl, 'fail');
      await sleep(f.seconds * 1000);
      writeFileSync(ctx.mailControl, 'ok');
      return record(true, `mail transport refused every send for ${f.seconds} s`);
    }
    case 'mail-hang': {
      // Half the workers' sends hang (the others' go through, free to take what they may):
      // first held before the provider has them, then after.
      const hung = cluster.workers.map((_, i) => i).filter((i) => i % 2 === 0).join(',');
      writeFileSync(ctx.mailControl, `hang:${hung}`);
      await sleep((f.seconds * 1000) / 2);
      writeFileSync(ctx.mailControl, `hang-after:${hung}`);
      await sleep((f.seconds * 1000) / 2);
      writeFileSync(ctx.mailControl, 'ok');
      return record(true, `workers ${hung}: every send held ${f.seconds / 2} s before the provider had it, then ${f.seconds / 2} s after`);
    }
  }
}

/** Run the schedule from `t0`; each fault in its own task, so a long one does not delay the next. */
export async function runSchedule(faults: Fault[], ctx: FaultContext, t0: number): Promise<FaultRecord[]> {
  const done: Promise<FaultRecord>[] = [];
  for (const f of faults) {
    const wait = t0 + f.at * 1000 - Date.now();
    if (wait > 0) await sleep(wait);
    ctx.log(`fault ${f.kind}${f.worker !== undefined ? ` worker-${f.worker}` : ''}`);
    done.push(
      inject(f, ctx).then(
        (r) => {
          ctx.log(`fault ${f.kind}: ${r.note}`);
          return r;
        },
        (error) => ({ ...f, startedAt: new Date().toISOString(), injected: false, note: `failed: ${String(error)}` }),
      ),
    );
  }
  return Promise.all(done);
}
