import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaClient } from './generated/prisma/client';
import { databaseUrl } from './env';

export { Prisma } from './generated/prisma/client';
export type * from './generated/prisma/client';

export type Db = PrismaClient;
/** A client usable inside `db.$transaction(async (tx) => ...)` as well as outside. */
export type DbTx = Omit<PrismaClient, '$connect' | '$disconnect' | '$on' | '$transaction' | '$extends'>;

const pools = new WeakMap<Db, pg.Pool>();

/**
 * A Prisma client over a node-postgres pool this module owns. Each process sizes its
 * pool to its work. An idle connection dropped by the server (PostgreSQL restarting, an
 * administrator's pg_terminate_backend) must not crash the process: the pool reports it
 * and opens a new connection on next use.
 */
export function createDb(
  url: string,
  options: { poolSize?: number; applicationName?: string; onError?: (error: Error) => void } = {},
): Db {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolSize ?? 10,
    application_name: options.applicationName ?? 'waypost',
  });
  pool.on('error', options.onError ?? (() => {}));
  const client = new PrismaClient({ adapter: new PrismaPg(pool) });
  pools.set(client, pool);
  return client;
}

/** Disconnect a client made by createDb and close its pool. */
export async function closeDb(db: Db): Promise<void> {
  await db.$disconnect();
  await pools.get(db)?.end();
}

const globalForDb = globalThis as unknown as { waypostDb?: Db };

/** The process-wide client for DATABASE_URL (one per process, survives Next.js hot reload). */
export function db(): Db {
  globalForDb.waypostDb ??= createDb(databaseUrl(), { applicationName: 'waypost-web' });
  return globalForDb.waypostDb;
}
