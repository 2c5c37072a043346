import type { Db, DbTx, RawDb } from './types';
import { preparedTransaction } from './prepared';

// The one way to open a transaction. Each takes a named timeout policy: how long it may
// wait for a connection (maxWait) and how long it may run (timeout). Inside a caller's
// transaction (an operator's repair, a router's audited change) it joins that one, whose
// policy already holds; otherwise it opens its own. A transaction that runs out answers as
// the database being busy (server/database-unavailable.ts, databaseBusy), never a 500.

export const TRANSACTION_POLICY = {
  /**
   * Engine work (a claim, an enrollment, an event, an operator's repair): a repair waiting
   * on a row a worker holds, or a claim behind a batch, must not hit Prisma's 5 s default.
   */
  ENGINE: { maxWait: 10_000, timeout: 60_000 },
  /** One chunk of a bulk import (500 enrollments and the entry that counts them). */
  IMPORT_CHUNK: { maxWait: 10_000, timeout: 120_000 },
  /** A person's short change (sign-in, a member, an invitation, a key): Prisma's own bounds. */
  SHORT: { maxWait: 2_000, timeout: 5_000 },
} as const;

export type TransactionPolicy = keyof typeof TRANSACTION_POLICY;

/**
 * A client of its own, not a transaction's: only a client has $connect. (A Prisma
 * transaction's client has a $transaction, which opens a savepoint; a raw transaction's
 * has neither, and asking it for anything else throws.)
 */
function isClient(db: RawDb): db is Db {
  return '$connect' in db && typeof (db as Partial<Db>).$transaction === 'function';
}

/**
 * `fn` in one Prisma interactive transaction under `policy` (models and raw SQL). Given a
 * transaction's client, `fn` runs in it.
 */
export function transaction<T>(db: Db | DbTx, policy: TransactionPolicy, fn: (tx: DbTx) => Promise<T>): Promise<T> {
  if (!isClient(db)) return fn(db);
  return db.$transaction(fn, TRANSACTION_POLICY[policy]);
}

/**
 * `fn` in one transaction of raw statements; then `closing`, the transaction's last
 * statement, with fn's value (an audit entry that records what fn did). On the engine's
 * prepared client (server/db/prepared.ts, preparedRaw) this is a raw transaction on one
 * pooled connection, whose closing statement carries the COMMIT: it must run exactly one
 * statement and nothing that can fail after it. On any other client, a Prisma
 * transaction under `policy`; inside a caller's transaction, that one.
 */
export async function rawTransaction<T>(
  db: RawDb,
  policy: TransactionPolicy,
  fn: (tx: RawDb) => Promise<T>,
  closing?: (tx: RawDb, value: T) => Promise<unknown>,
): Promise<T> {
  const both = async (tx: RawDb) => {
    const value = await fn(tx);
    if (closing) await closing(tx, value);
    return value;
  };
  const raw = await preparedTransaction(db, fn, closing);
  if (raw) return raw.value;
  if (!isClient(db)) return both(db);
  return db.$transaction((tx) => both(tx), TRANSACTION_POLICY[policy]);
}

/**
 * `fn` in a savepoint of the caller's Prisma transaction (a transaction of its own outside
 * one): when it throws, only what it did is rolled back, and the caller's transaction goes
 * on (a claim refused by a unique index, recorded as a loss in the same transaction).
 */
export function savepoint<T>(tx: DbTx, fn: (tx: DbTx) => Promise<T>): Promise<T> {
  // Prisma runs a $transaction opened on a transaction's client as a SAVEPOINT; the
  // transaction client's type omits $transaction, which it has at run time.
  const nested = tx as unknown as { $transaction<R>(inner: (tx: DbTx) => Promise<R>): Promise<R> };
  if (typeof nested.$transaction !== 'function') {
    throw new Error('a savepoint needs a Prisma transaction: it is not available inside a raw engine transaction');
  }
  return nested.$transaction(fn);
}
