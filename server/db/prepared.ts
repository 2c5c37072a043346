import pg from 'pg';
import { Prisma, type PrismaClient } from '../generated/prisma/client';
import type { RawDb } from './types';
import { prepared, pools, transactionPooled } from './registry';
import { BeginThenQuery, QueryThenCommit, submitted, type TransactionState } from './wire';

// ---------------------------------------------------------------------------
// The engine's hot path: raw SQL as named prepared statements over the client's own pool.
//
// Prisma's $queryRaw costs far more per call than the statement does (its query engine
// and driver adapter, and a fresh plan each time): a worker's claims spend most of their
// time there. A client made by createDb can be viewed through preparedRaw(), whose
// $queryRaw/$executeRaw send the very same Prisma.sql text and values over node-postgres
// as a named prepared statement (parsed and planned once per connection); every other
// member (models, $transaction) is the Prisma client's own. Results are read as Prisma
// reads them (int8 as bigint, json parsed, timestamptz as Date), so a claim's code does
// not know which path ran it.
//
// Behind a transaction-mode pooler (DATABASE_POOL_MODE=transaction: PgBouncer 1.18 keeps
// no prepared statement from one transaction to the next, nor tells the client which server
// connection it got), the statements go unnamed: parsed and planned each time, still over
// node-postgres, still pipelined (wire.ts).

const POOL = Symbol('waypost.preparedPool');
/** Distinct statement texts get a name each; past this many (SQL built from lists), unnamed. */
const MAX_NAMED_STATEMENTS = 1000;
const statementNames = prepared.names;

function statementName(text: string): string | undefined {
  let name = statementNames.get(text);
  if (!name && statementNames.size < MAX_NAMED_STATEMENTS) {
    name = `wp_${statementNames.size}`;
    statementNames.set(text, name);
  }
  return name;
}

const parseInt8 = (value: string) => BigInt(value);
/** Prisma's reading of a raw result: int8 as bigint (node-postgres reads it as a string). */
const prismaTypes = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === pg.types.builtins.INT8 ? parseInt8 : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

type RawArgs = [TemplateStringsArray | Prisma.Sql, ...unknown[]];

function toSql([strings, ...values]: RawArgs): Prisma.Sql {
  return strings instanceof Prisma.Sql ? strings : Prisma.sql(strings, ...values);
}

async function runPrepared(on: pg.Pool | pg.PoolClient, named: boolean, args: RawArgs, state?: TransactionState): Promise<pg.QueryResult> {
  const sql = toSql(args);
  const config = { name: named ? statementName(sql.text) : undefined, text: sql.text, values: sql.values as unknown[], types: prismaTypes };
  if (state?.closing === 'sent') {
    throw new Error('this raw transaction has committed with its closing statement: a statement after it would run outside it');
  }
  if (state?.closing === 'armed') {
    state.closing = 'sent';
    // The transaction's only statement needs no transaction: on its own it is atomic.
    if (!state.begun) return on.query(config);
    return submitted(on, new QueryThenCommit(config));
  }
  if (!state || state.begun) return on.query(config);
  state.begun = true;
  return submitted(on, new BeginThenQuery(config));
}

function rawOver(pool: pg.Pool, on: pg.Pool | pg.PoolClient, state?: TransactionState) {
  const named = !transactionPooled.has(pool);
  return {
    $queryRaw: async (...args: RawArgs) => (await runPrepared(on, named, args, state)).rows,
    $executeRaw: async (...args: RawArgs) => (await runPrepared(on, named, args, state)).rowCount ?? 0,
  };
}

/**
 * The client's raw SQL as named prepared statements over its own pool (see above;
 * unnamed behind a transaction-mode pooler);
 * anything else (a transaction's client, a client not made by createDb) is returned as is.
 */
export function preparedRaw<T extends RawDb>(db: T): T {
  const pool = pools.get(db as unknown as PrismaClient);
  if (!pool) return db;
  const raw = rawOver(pool, pool);
  return new Proxy(db, {
    get(target, prop) {
      if (prop === POOL) return pool;
      if (prop === '$queryRaw' || prop === '$executeRaw') return raw[prop];
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/**
 * A transaction of raw statements only, on one pooled connection, for a preparedRaw()
 * client: BEGIN, `fn`, COMMIT (ROLLBACK if it throws). BEGIN travels with the first
 * statement (BeginThenQuery). With `closing`, its one statement, run after `fn` with fn's
 * value, carries the COMMIT (QueryThenCommit): a transaction that ends with a write (an
 * audit entry) saves the round trip of its COMMIT. `closing` must run exactly one
 * statement and nothing that can fail after it; a second statement is refused. Null for
 * any other client, whose caller uses Prisma's $transaction. Inside, only $queryRaw and
 * $executeRaw exist (the RawDb type): a model call there would run outside the transaction,
 * so it is refused at run time as well. Callers go through rawTransaction (transaction.ts).
 */
export async function preparedTransaction<T>(
  db: RawDb,
  fn: (tx: RawDb) => Promise<T>,
  closing?: (tx: RawDb, value: T) => Promise<unknown>,
): Promise<{ value: T } | null> {
  const pool = (db as unknown as { [POOL]?: pg.Pool })[POOL];
  if (!pool) return null;
  const client = await pool.connect();
  // BEGIN goes out with the first statement (BeginThenQuery); a transaction that ran none has nothing to end.
  const state: TransactionState = { begun: false };
  const raw = rawOver(pool, client, state);
  const tx = new Proxy({} as RawDb, {
    get(_, prop) {
      if (prop === '$queryRaw' || prop === '$executeRaw') return raw[prop];
      if (typeof prop === 'symbol' || prop === 'then') return undefined;
      throw new Error(`${prop} is not available inside a raw engine transaction: use $queryRaw`);
    },
  });
  let broken = false;
  try {
    const value = await fn(tx);
    if (closing) {
      state.closing = 'armed';
      await closing(tx, value);
    }
    // COMMIT on its own unless the closing statement carried it.
    if (state.begun && state.closing !== 'sent') await client.query('COMMIT');
    return { value };
  } catch (error) {
    // After a closing statement that failed, the transaction is aborted (its statement
    // failed) or over (its COMMIT failed): ROLLBACK ends the first, and is a no-op for the second.
    if (state.begun) await client.query('ROLLBACK').catch(() => (broken = true));
    throw error;
  } finally {
    client.release(broken);
  }
}
