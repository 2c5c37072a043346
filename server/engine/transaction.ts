import { preparedTransaction, type Db, type DbTx } from '../db';

// A unit of work that must be one transaction (a lock taken in one statement that the
// next one relies on). Inside a caller's transaction (an operator's repair, a router's
// audited change) it joins that one; otherwise it opens its own: over the client's pg
// pool when the engine's client sends prepared statements (raw SQL only inside), else
// Prisma's interactive transaction.

/**
 * The engine's transaction policy, for every interactive transaction of engine work (a
 * claim, an enrollment chunk, an operator's repair): waiting up to 10 s for a connection
 * and running up to 60 s. A bulk chunk of 500 enrollments, or a repair waiting on a row a
 * worker holds, must not hit Prisma's 5 s default; one that still runs out answers as the
 * database being busy (server/database-unavailable.ts databaseBusy), never a 500.
 */
export const ENGINE_TRANSACTION = { maxWait: 10_000, timeout: 60_000 } as const;

function isClient(db: DbTx): db is Db {
  return typeof (db as Partial<Db>).$transaction === 'function';
}

/**
 * `fn` in one transaction; then `closing`, the transaction's last statement, with fn's
 * value (an audit entry that records what fn did). Over the client's pg pool the closing
 * statement carries the COMMIT (server/db/prepared.ts, preparedTransaction): it must run exactly
 * one statement and nothing that can fail after it.
 */
export async function inEngineTransaction<T>(
  db: DbTx,
  fn: (tx: DbTx) => Promise<T>,
  closing?: (tx: DbTx, value: T) => Promise<unknown>,
): Promise<T> {
  const both = async (tx: DbTx) => {
    const value = await fn(tx);
    if (closing) await closing(tx, value);
    return value;
  };
  if (!isClient(db)) return both(db);
  const raw = await preparedTransaction(db, fn, closing);
  return raw ? raw.value : db.$transaction((tx) => both(tx), ENGINE_TRANSACTION);
}
