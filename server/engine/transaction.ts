import type { Db, DbTx } from '../db';

// A unit of work that must be one transaction (a lock taken in one statement that the
// next one relies on). Inside a caller's transaction (an operator's repair, a router's
// audited change) it joins that one; otherwise it opens its own.

const OPTIONS = { maxWait: 10_000, timeout: 60_000 } as const;

function isClient(db: DbTx): db is Db {
  return typeof (db as Partial<Db>).$transaction === 'function';
}

export function inEngineTransaction<T>(db: DbTx, fn: (tx: DbTx) => Promise<T>): Promise<T> {
  return isClient(db) ? db.$transaction((tx) => fn(tx), OPTIONS) : fn(db);
}
