import { expect } from 'vitest';
import { closeDb, createDb, type Db, type PoolMode } from '../../server/db';
import { checkInvariants } from '../../server/engine/invariants';

// Real concurrency for race tests: N Prisma clients, each with a pool of exactly one
// connection (so N distinct PostgreSQL sessions), warmed up, then released together.

export interface Racers {
  clients: Db[];
  /** Run fn on every client at the same moment; settle all (a loser may throw). */
  race<T>(fn: (db: Db, i: number) => Promise<T>): Promise<PromiseSettledResult<T>[]>;
  /** The first n clients only, for a scenario with fewer parties (warmed connections reused). */
  first(n: number): Pick<Racers, 'race'>;
  close(): Promise<void>;
}

/** Run fn on every client at the same moment, after all are ready; settle all. */
function raceOn<T>(clients: Db[], fn: (db: Db, i: number) => Promise<T>): Promise<PromiseSettledResult<T>[]> {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const runs = clients.map(async (db, i) => {
    await gate;
    return fn(db, i);
  });
  release();
  return Promise.allSettled(runs);
}

export async function racers(url: string, n: number, options: { poolMode?: PoolMode; queryTimeoutMs?: number } = {}): Promise<Racers> {
  const clients = Array.from({ length: n }, () => createDb(url, { poolSize: 1, applicationName: 'waypost-racer', ...options }));
  await Promise.all(clients.map((c) => c.$queryRaw`SELECT 1`));
  return {
    clients,
    race: (fn) => raceOn(clients, fn),
    first(n) {
      if (n > clients.length) throw new Error(`only ${clients.length} racers`);
      return { race: (fn) => raceOn(clients.slice(0, n), fn) };
    },
    async close() {
      await Promise.all(clients.map((c) => closeDb(c)));
    },
  };
}

export function fulfilled<T>(results: PromiseSettledResult<T>[]): T[] {
  const errors = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (errors.length > 0) throw errors[0]!.reason;
  return (results as PromiseFulfilledResult<T>[]).map((r) => r.value);
}

/** Rounds per race scenario (the issue asks for at least 50). */
export const ROUNDS = Number(process.env.RACE_ROUNDS ?? 50);

/** Every invariant holds (docs/architecture.md, I1–I8); the label says which round broke one. */
export async function expectNoViolations(db: Db, label: string): Promise<void> {
  const bad = (await checkInvariants(db)).filter((r) => r.violations > 0);
  expect(bad, `${label}: ${JSON.stringify(bad)}`).toEqual([]);
}
