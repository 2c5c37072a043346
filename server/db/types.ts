import type { PrismaClient } from '../generated/prisma/client';

// The database's two modes, as two types.
//
// - Db / DbTx: the Prisma client (or one of its interactive transactions): models and raw
//   SQL. What routers, auth, workflows and the operator's repairs use.
// - RawDb: raw SQL only ($queryRaw / $executeRaw). What the engine's query modules take, so
//   that the engine's prepared path (server/db/prepared.ts: named prepared statements over
//   the client's own pool, a raw transaction on one pooled connection) can run them: a
//   model call inside a raw transaction would run outside it, and is a type error here.
//
// A Db or DbTx is a RawDb, so a function written against RawDb runs in either mode.

export type Db = PrismaClient;
/** A client usable inside `db.$transaction(async (tx) => ...)` as well as outside. */
export type DbTx = Omit<PrismaClient, '$connect' | '$disconnect' | '$on' | '$transaction' | '$extends'>;
/** Raw SQL only: the engine's prepared client, a raw transaction, or any Prisma client viewed as raw. */
export type RawDb = Pick<DbTx, '$queryRaw' | '$executeRaw'>;
