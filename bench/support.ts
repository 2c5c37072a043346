import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import pg from 'pg';
import { Prisma, type Db, type DbTx } from '../server/db';
import { withDatabase } from '../server/embedded-postgres';
import { checkInvariants } from '../server/engine/invariants';

// What every phase of the benchmark shares: progress lines, timing and percentiles,
// the bench database's commit counter, child processes with a ready/go handshake, and a
// way to run the engine's own SQL over plain pg.

export const ROOT = path.resolve(import.meta.dirname, '..');

export interface BenchOptions {
  quick: boolean;
}

export interface BenchContext {
  options: BenchOptions;
  /** The bench's own database (created for this run, dropped after). */
  url: string;
  db: Db;
  /** A plain pg pool on the bench database, for the harness's own reads. */
  pool: pg.Pool;
  results: Record<string, unknown>;
}

const started = Date.now();

/** One progress line: elapsed time, phase, what happened. */
export function progress(phase: string, line: string): void {
  const t = ((Date.now() - started) / 1000).toFixed(1).padStart(6);
  process.stderr.write(`[${t}s] ${phase.padEnd(9)} ${line}\n`);
}

export function round(n: number, digits = 0): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

export function ratio(a: number, b: number): number | null {
  return b > 0 ? round(a / b, 2) : null;
}

export function percentile(samples: number[], p: number): number {
  if (samples.length === 0) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export function uniqueName(prefix: string): string {
  return `${prefix}_${randomBytes(3).toString('hex')}_${Date.now().toString(36)}`;
}


/** Transactions committed in the bench database so far (pg_stat_database, after a flush of our own). */
export async function commits(pool: pg.Pool): Promise<number> {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_stat_clear_snapshot()');
    const { rows } = await client.query<{ n: string }>(
      'SELECT xact_commit AS n FROM pg_stat_database WHERE datname = current_database()',
    );
    return Number(rows[0]!.n);
  } finally {
    client.release();
  }
}

/** Fail loudly: any invariant violation stops the bench with a non-zero exit. */
export async function assertInvariants(db: DbTx, phase: string): Promise<void> {
  const results = await checkInvariants(db);
  const bad = results.filter((r) => r.violations > 0);
  if (bad.length > 0) {
    throw new Error(
      `invariant violations after ${phase}: ${bad.map((r) => `${r.id} ${r.title}: ${r.violations}`).join('; ')}`,
    );
  }
  progress(phase, `invariants I1-I9: 0 violations`);
}

export interface Child {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
  /** The child's last `result {...}` line, parsed. */
  result(): Record<string, number> | null;
}

/**
 * Spawn a TypeScript entry (or a node script) and wait until it prints `marker`, so
 * start-up (tsx compiling, connecting) is not part of any measurement.
 */
export async function spawnChild(
  args: string[],
  opts: { env?: Record<string, string>; marker: string; timeoutMs?: number; cwd?: string },
): Promise<Child> {
  const child = spawn(process.execPath, args, {
    cwd: opts.cwd ?? ROOT,
    env: { ...process.env, ...opts.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let last: Record<string, number> | null = null;
  let ready!: () => void;
  const up = new Promise<void>((resolve) => (ready = resolve));
  let seen = '';
  const onData = (chunk: Buffer) => {
    const text = chunk.toString();
    seen = (seen + text).slice(-4096);
    out = (out + text).slice(-50_000);
    if (seen.includes(opts.marker)) ready();
    for (const m of text.matchAll(/^result (\{.*\})$/gm)) last = JSON.parse(m[1]!);
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await Promise.race([
    up,
    exited.then((code) => {
      throw new Error(`${args.join(' ')} exited with ${code} before it was ready:\n${out}`);
    }),
    sleep(opts.timeoutMs ?? 60_000).then(() => {
      throw new Error(`${args.join(' ')} was not ready in time:\n${out}`);
    }),
  ]);
  return { child, output: () => out, exited, result: () => last };
}

export async function stopChild(c: Child, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  if (c.child.exitCode !== null) return c.child.exitCode;
  c.child.kill(signal);
  return c.exited;
}

/** The resident set size of a process, in MB (from /proc), or null once it is gone. */
export async function rssMb(pid: number): Promise<number | null> {
  try {
    const { readFile } = await import('node:fs/promises');
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
    return Number.isFinite(kb) ? round(kb / 1024) : null;
  } catch {
    return null;
  }
}

/** CPU seconds (user + system) a process has used so far, from /proc; null where it cannot be read (gone, another host). */
export async function cpuSeconds(pid: number): Promise<number | null> {
  try {
    const { readFile } = await import('node:fs/promises');
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces), from field 3 on: utime is the 14th field, stime the 15th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return null;
  }
}
/** Linux's USER_HZ, the unit of /proc's CPU times (100 on every mainstream kernel). */
const CLOCK_TICKS = 100;

/**
 * The CPU the PostgreSQL backends serving one kind of client spend during a round: the
 * backends are found by application_name and their /proc read every 100 ms, so a
 * connection opened during the round counts too. Null when the server is on another host.
 */
export function backendCpu(pool: pg.Pool, applicationNames: string[]): { stop(): Promise<number | null> } {
  const first = new Map<number, number>();
  const last = new Map<number, number>();
  const sample = async () => {
    const { rows } = await pool.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = ANY($1)', [applicationNames]);
    for (const { pid } of rows) {
      const cpu = await cpuSeconds(pid);
      if (cpu === null) continue;
      if (!first.has(pid)) first.set(pid, cpu);
      last.set(pid, cpu);
    }
  };
  let running = sample().catch(() => {});
  const timer = setInterval(() => {
    running = running.then(sample).catch(() => {});
  }, 100);
  return {
    async stop() {
      clearInterval(timer);
      await running;
      await sample().catch(() => {});
      if (last.size === 0) return null;
      let total = 0;
      for (const [pid, cpu] of last) total += cpu - (first.get(pid) ?? cpu);
      return total;
    },
  };
}

// ---------------------------------------------------------------------------
// The engine's SQL over plain pg

export interface Statement {
  text: string;
  values: unknown[];
}

/**
 * Capture the statement an engine claim would send, without sending it: the claim
 * builds its Prisma.Sql as usual and hands it to this stand-in, which records it and
 * answers no rows. So the raw baseline runs the engine's very SQL (server/engine/claims/ stays its
 * one home) with none of Prisma's per-query work.
 */
export function recordStatement(claim: (db: DbTx) => Promise<unknown>): Statement {
  const seen: Statement[] = [];
  const take = (strings: TemplateStringsArray | Prisma.Sql, ...values: unknown[]) => {
    const sql = strings instanceof Prisma.Sql ? strings : Prisma.sql(strings, ...values);
    seen.push({ text: sql.text, values: sql.values });
    return Promise.resolve([]);
  };
  const recorder = { $queryRaw: take, $executeRaw: take, $queryRawUnsafe: take } as unknown as DbTx;
  void claim(recorder).catch(() => {});
  if (!seen[0]) throw new Error('the claim sent no statement');
  return seen[0];
}

/** Named prepared statements, one name per distinct SQL text. */
const names = new Map<string, string>();
export function prepared(s: Statement): pg.QueryConfig {
  let name = names.get(s.text);
  if (!name) {
    name = `wp_bench_${names.size}`;
    names.set(s.text, name);
  }
  return { name, text: s.text, values: s.values as unknown[] };
}

/**
 * A DbTx whose $queryRaw runs the statement over a plain pg pool as a named prepared
 * statement: the engine's code (enrollment, say) with its SQL, without Prisma.
 */
export function rawDb(pool: pg.Pool | pg.PoolClient): DbTx {
  const run = async (strings: TemplateStringsArray | Prisma.Sql, ...values: unknown[]) => {
    const sql = strings instanceof Prisma.Sql ? strings : Prisma.sql(strings, ...values);
    const { rows } = await pool.query(prepared({ text: sql.text, values: sql.values }));
    return rows;
  };
  return { $queryRaw: run, $executeRaw: run } as unknown as DbTx;
}

export function benchDatabaseUrl(serverUrl: string, name: string): string {
  return withDatabase(serverUrl, name);
}

/** The application_name a pg client connected with (pg keeps it, untyped, on connectionParameters). */
export function appOf(client: pg.Client): string | undefined {
  return (client as unknown as { connectionParameters?: { application_name?: string } }).connectionParameters?.application_name;
}
