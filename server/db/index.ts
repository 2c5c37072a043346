import { PrismaPg } from '@prisma/adapter-pg';
import type pg from 'pg';
import { PrismaClient } from '../generated/prisma/client';
import { databaseUrl, env } from '../env';
import { processSingleton } from '../process-registry';
import { boundedClient, CheckedPool, ReadTimeoutClient, serverTimeoutMs } from './pool';
import { openPools, pools, transactionPooled } from './registry';
import type { Db } from './types';

// The database client: a Prisma client over a node-postgres pool of this module's own
// (pool.ts), and the engine's raw path over the same pool as named prepared statements
// (prepared.ts, with the wire-protocol pipelining of wire.ts).

export { Prisma } from '../generated/prisma/client';
export type * from '../generated/prisma/client';
export { preparedRaw, preparedTransaction } from './prepared';
export { serverTimeoutMs } from './pool';
export type { Db, DbTx, RawDb } from './types';

/** What stands between a process and PostgreSQL: sessions of its own, or a transaction-mode pooler (DATABASE_POOL_MODE). */
export type PoolMode = 'session' | 'transaction';
export { transaction, rawTransaction, savepoint, TRANSACTION_POLICY, type TransactionPolicy } from './transaction';

/**
 * A Prisma client over a node-postgres pool this module owns. Each process sizes its
 * pool to its work. An idle connection dropped by the server (PostgreSQL restarting, an
 * administrator's pg_terminate_backend) must not crash the process: the pool reports it
 * and opens a new connection on next use.
 *
 * With a query timeout, a connection is never trusted once a statement on it went
 * unanswered (see CheckedPool and ReadTimeoutClient below), and the server is told to give
 * up first: `statement_timeout` and `idle_in_transaction_session_timeout` are set below the
 * client's bound, so a statement stuck on a lock is cancelled by PostgreSQL (its
 * transaction aborted, its locks released) before the client stops waiting for it.
 *
 * Behind a pooler in transaction mode (`poolMode`, DATABASE_POOL_MODE by default: PgBouncer
 * with pool_mode = transaction), a connection is no session of its own: each transaction
 * may run on another server connection. Then no statement is named (prepared.ts), and the
 * two bounds are not startup parameters (PgBouncer 1.18 refuses them) but go with each
 * transaction, in the same round trip (pool.ts, boundedClient; wire.ts, ServerBounds).
 */
export function createDb(
  url: string,
  options: {
    poolSize?: number;
    applicationName?: string;
    onError?: (error: Error) => void;
    /** How long a query may wait for a connection (a free one, or a new one to connect); unset: forever. */
    connectTimeoutMs?: number;
    /** How long a statement may wait for its answer, client side (a partition answers nothing); unset: forever. */
    queryTimeoutMs?: number;
    /** `transaction`: `url` is a transaction-mode pooler (see above). Default: DATABASE_POOL_MODE. */
    poolMode?: PoolMode;
  } = {},
): Db {
  const serverBoundMs = options.queryTimeoutMs ? serverTimeoutMs(options.queryTimeoutMs) : undefined;
  const pooled = (options.poolMode ?? env().DATABASE_POOL_MODE) === 'transaction';
  const pool = new CheckedPool({
    connectionString: url,
    max: options.poolSize ?? 10,
    application_name: options.applicationName ?? 'waypost',
    connectionTimeoutMillis: options.connectTimeoutMs,
    query_timeout: options.queryTimeoutMs,
    ...(serverBoundMs && !pooled ? { statement_timeout: serverBoundMs, idle_in_transaction_session_timeout: serverBoundMs } : {}),
    keepAlive: true,
    Client: serverBoundMs && pooled ? boundedClient(serverBoundMs) : ReadTimeoutClient,
  });
  if (pooled) transactionPooled.add(pool);
  const onError = options.onError ?? (() => {});
  // The pool listens for errors only on its idle clients. A client checked out between two
  // queries (a transaction waiting on JavaScript, say) whose connection is terminated emits
  // 'error' with nobody listening, which would crash the process: every client gets a
  // listener for its whole life, and the next query on it fails as a query.
  pool.on('connect', (client) => client.on('error', onError));
  pool.on('error', onError);
  const client = new PrismaClient({ adapter: new PrismaPg(pool) });
  pools.set(client, pool);
  openPools.set(pool, options.applicationName ?? 'waypost');
  return client;
}

/** The node-postgres pool under a client made by createDb; undefined for any other client. */
export function poolOf(db: Db): pg.Pool | undefined {
  return pools.get(db);
}

/** Disconnect a client made by createDb and close its pool. */
export async function closeDb(db: Db): Promise<void> {
  await db.$disconnect();
  const pool = pools.get(db);
  if (pool) openPools.delete(pool);
  await pool?.end();
}

/**
 * The bounds on waiting for the database (DATABASE_CONNECT_TIMEOUT_SECONDS,
 * DATABASE_QUERY_TIMEOUT_SECONDS) for the web server's and workers' clients, so that an
 * unreachable database is an error within seconds, never a hang.
 */
export function databaseWaitBounds(): { connectTimeoutMs: number; queryTimeoutMs?: number } {
  const config = env();
  return {
    connectTimeoutMs: config.DATABASE_CONNECT_TIMEOUT_SECONDS * 1000,
    queryTimeoutMs: config.DATABASE_QUERY_TIMEOUT_SECONDS > 0 ? config.DATABASE_QUERY_TIMEOUT_SECONDS * 1000 : undefined,
  };
}

/** The process-wide client for DATABASE_URL (one per process, whichever copy of this module asks, and across Next.js hot reloads: server/process-registry.ts). */
export function db(): Db {
  return processSingleton('db', () => createDb(databaseUrl(), { applicationName: 'waypost-web', ...databaseWaitBounds() }));
}

