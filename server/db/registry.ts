import type pg from 'pg';
import type { PrismaClient } from '../generated/prisma/client';

/**
 * The pools of the clients createDb made, and the names of prepared statements, kept on
 * globalThis: scripts/web.ts loads these modules itself (the API, server/http/node-endpoints.ts)
 * and Next.js's build has its own copy, and both share one client (db() below). With a map
 * each, whichever copy had not made the client would run its raw SQL through Prisma, and
 * two maps could give one name to two statements on one connection.
 */
export const prepared = ((globalThis as unknown as { waypostPrepared?: { pools: WeakMap<PrismaClient, pg.Pool>; names: Map<string, string> } }).waypostPrepared ??= {
  pools: new WeakMap(),
  names: new Map(),
});
export const pools = prepared.pools;

