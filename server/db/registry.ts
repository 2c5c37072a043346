import type pg from 'pg';
import type { PrismaClient } from '../generated/prisma/client';
import { processSingleton } from '../process-registry';

/**
 * The pools of the clients createDb made, those of them behind a transaction-mode pooler
 * (whose statements go unnamed: prepared.ts), and the names of prepared statements, once per
 * process (server/process-registry.ts): scripts/web.ts loads these modules itself (the
 * API, server/http/node-endpoints.ts) and Next.js's build has its own copy, and both share
 * one client (db()). With a map each, whichever copy had not made the client would run its
 * raw SQL through Prisma, and two maps could give one name to two statements on one connection.
 */
export const prepared = processSingleton(
  'db.prepared',
  (): { pools: WeakMap<PrismaClient, pg.Pool>; names: Map<string, string>; transactionPooled: WeakSet<pg.Pool> } => ({
    pools: new WeakMap(),
    names: new Map(),
    transactionPooled: new WeakSet(),
  }),
);
export const pools = prepared.pools;
export const transactionPooled = prepared.transactionPooled;


/** The pools createDb opened and closeDb has not closed yet, with their application_name: /metrics reports their use. */
export const openPools = processSingleton('db.openPools', () => new Map<pg.Pool, string>());
