import { existsSync } from 'node:fs';
import { PGBOUNCER_BINARY, startPgBouncer } from '../scripts/pgbouncer';
import { engineRound, CONCURRENCY, type Throughput } from './steps';
import { cpuSeconds, progress, ratio, round, type BenchContext } from './support';
import { seedContacts } from './workload';

// What PgBouncer in transaction mode costs (docs/deploy.md, "PgBouncer"): steps/s of the
// engine's worker processes through it (DATABASE_POOL_MODE=transaction, DIRECT_DATABASE_URL
// for their LISTEN) beside the same workers straight to PostgreSQL, in the same run, on
// the same backlog; and the same mode without the pooler (unnamed statements, the bounds
// with each transaction), to tell the hop from the statements. Rounds run in the order
// A B C C B A for each process count, so a machine that slows down or speeds up meanwhile
// weighs on all three alike.

export const POOLED_PROCESS_COUNTS = [1, 4] as const;
const SERVER_CONNECTIONS = 20;

type Variant = 'direct' | 'pooled' | 'unnamedDirect';

export interface PgBouncerRound {
  processes: number;
  concurrency: number;
  /** Mean steps/s of the two rounds of each. */
  direct: number;
  pooled: number;
  unnamedDirect: number;
  /** pooled / direct, and unnamedDirect / direct. */
  pooledToDirect: number | null;
  unnamedToDirect: number | null;
  /** pgbouncer's own CPU per step in the pooled rounds. */
  pgbouncerCpuMsPerStep: number | null;
  rounds: Record<Variant, Throughput[]>;
}

export type PgBouncerResult =
  | { measured: true; version: string; serverConnections: number; executionsPerRound: number; rounds: PgBouncerRound[] }
  | { measured: false; reason: string };

export async function pgbouncerPhase(ctx: BenchContext, projectId: string): Promise<PgBouncerResult> {
  if (!existsSync(PGBOUNCER_BINARY)) {
    const reason = `pgbouncer is not installed at ${PGBOUNCER_BINARY} (apt-get install -y pgbouncer, or set PGBOUNCER_PATH)`;
    progress('pgbouncer', `not measured: ${reason}`);
    return { measured: false, reason };
  }
  const executions = ctx.options.quick ? 120 : 1000;
  const contacts = await seedContacts(ctx.db, projectId, 'pgbouncer', executions);
  const bouncer = await startPgBouncer({ upstream: ctx.url, defaultPoolSize: SERVER_CONNECTIONS });
  try {
    const database = decodeURIComponent(new URL(ctx.url).pathname.slice(1));
    const envs: Record<Variant, Record<string, string>> = {
      direct: {},
      pooled: { DATABASE_URL: bouncer.url(database), DATABASE_POOL_MODE: 'transaction', DIRECT_DATABASE_URL: ctx.url },
      // PostgreSQL itself, but as if behind the pooler: what the unnamed statements and the per-transaction bounds cost alone.
      unnamedDirect: { DATABASE_POOL_MODE: 'transaction', DIRECT_DATABASE_URL: ctx.url },
    };
    const rounds: PgBouncerRound[] = [];
    for (const n of POOLED_PROCESS_COUNTS) {
      const seen: Record<Variant, Throughput[]> = { direct: [], pooled: [], unnamedDirect: [] };
      let bouncerCpu = 0;
      const order = ['direct', 'pooled', 'unnamedDirect', 'unnamedDirect', 'pooled', 'direct'] as const;
      for (const [i, variant] of order.entries()) {
        const before = await cpuSeconds(bouncer.pid);
        const t = await engineRound(ctx, projectId, contacts, n, { label: `${variant}-${i}`, env: envs[variant] });
        const after = await cpuSeconds(bouncer.pid);
        if (variant === 'pooled' && before !== null && after !== null) bouncerCpu += after - before;
        seen[variant].push(t);
        progress('pgbouncer', `${variant.padEnd(13)} ${n} proc x ${CONCURRENCY}: ${t.perSecond} steps/s (${t.items} in ${t.seconds} s, CPU ms/step: worker ${t.cpuMsPerItem?.worker ?? '?'}, postgres ${t.cpuMsPerItem?.postgres ?? '?'})`);
      }
      const mean = (v: Variant) => round(seen[v].reduce((s, t) => s + t.perSecond, 0) / seen[v].length);
      const pooledSteps = seen.pooled.reduce((s, t) => s + t.items, 0);
      const figure: PgBouncerRound = {
        processes: n,
        concurrency: CONCURRENCY,
        direct: mean('direct'),
        pooled: mean('pooled'),
        unnamedDirect: mean('unnamedDirect'),
        pooledToDirect: ratio(mean('pooled'), mean('direct')),
        unnamedToDirect: ratio(mean('unnamedDirect'), mean('direct')),
        pgbouncerCpuMsPerStep: pooledSteps > 0 ? round((bouncerCpu * 1000) / pooledSteps, 3) : null,
        rounds: seen,
      };
      progress('pgbouncer', `${n} proc: through PgBouncer ${figure.pooled} steps/s against ${figure.direct} direct (${figure.pooledToDirect}×); unnamed and bounded per transaction, direct: ${figure.unnamedDirect} (${figure.unnamedToDirect}×); pgbouncer CPU ${figure.pgbouncerCpuMsPerStep} ms/step`);
      rounds.push(figure);
    }
    const version = /PgBouncer \S+/.exec(bouncer.output())?.[0] ?? 'PgBouncer';
    return { measured: true, version, serverConnections: SERVER_CONNECTIONS, executionsPerRound: executions, rounds };
  } finally {
    await bouncer.stop();
  }
}
