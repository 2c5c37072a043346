import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from './generated/prisma/client';
import { databaseUrl } from './env';

export { Prisma } from './generated/prisma/client';
export type * from './generated/prisma/client';

export type Db = PrismaClient;
/** A client usable inside `db.$transaction(async (tx) => ...)` as well as outside. */
export type DbTx = Omit<PrismaClient, '$connect' | '$disconnect' | '$on' | '$transaction' | '$extends'>;

/** A Prisma client over node-postgres. Each process owns its pool; size it to its work. */
export function createDb(url: string, options: { poolSize?: number; applicationName?: string } = {}): Db {
  const adapter = new PrismaPg({
    connectionString: url,
    max: options.poolSize ?? 10,
    application_name: options.applicationName ?? 'waypost',
  });
  return new PrismaClient({ adapter });
}

const globalForDb = globalThis as unknown as { waypostDb?: Db };

/** The process-wide client for DATABASE_URL (one per process, survives Next.js hot reload). */
export function db(): Db {
  globalForDb.waypostDb ??= createDb(databaseUrl(), { applicationName: 'waypost-web' });
  return globalForDb.waypostDb;
}
