import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { EnvError, sessionDatabaseUrl, type Env } from '../server/env';
import {
  embeddedPasswordFile,
  embeddedUrl,
  ensureDatabase,
  processAlive,
  readEmbeddedPassword,
  runningEmbeddedPort,
  startEmbeddedPostgres,
  withDatabase,
  type EmbeddedDatabase,
} from '../server/embedded-postgres';

// Which PostgreSQL the product's scripts use: DATABASE_URL when set, otherwise the
// embedded server under .data/postgres (docs/operations.md, "The embedded database"), with the product's data in
// its `waypost` database.

export const ROOT = path.resolve(import.meta.dirname, '..');
/** The database on the embedded server that holds the product's data. */
const PRODUCT_DATABASE = 'waypost';

/** The embedded server's data directory: EMBEDDED_PG_DIR, relative to the repository. */
export function embeddedDataDir(env: Pick<Env, 'EMBEDDED_PG_DIR'>): string {
  return path.resolve(ROOT, env.EMBEDDED_PG_DIR);
}

const shown = (p: string) => path.relative(ROOT, p) || p;

export interface ProductDatabase {
  url: string;
  /** Set when this process started the embedded server; stop it when done. */
  embedded?: EmbeddedDatabase;
}

export async function openProductDatabase(env: Env, log: (line: string) => void): Promise<ProductDatabase> {
  if (env.DATABASE_URL) return { url: env.DATABASE_URL };
  const dataDir = embeddedDataDir(env);
  log(`DATABASE_URL is not set: starting the embedded PostgreSQL (${shown(dataDir)}, port ${env.EMBEDDED_PG_PORT})`);
  const embedded = await startEmbeddedPostgres({ dataDir, port: env.EMBEDDED_PG_PORT, log });
  try {
    return { url: await ensureDatabase(embedded.url, PRODUCT_DATABASE), embedded };
  } catch (error) {
    await embedded.stop();
    throw error;
  }
}

/**
 * Where migrations run, for the product's database at `url`: the embedded one itself, or
 * DATABASE_URL's server, or DIRECT_DATABASE_URL's when set. Never through a
 * transaction-mode pooler: the migrator holds PostgreSQL's advisory lock across its
 * statements, a session's, which the pooler would leave on whichever server connection ran
 * the lock (server/migrator.ts).
 */
export function migrationUrl(env: Env, url: string): string {
  if (!env.DATABASE_URL) return url;
  const direct = sessionDatabaseUrl(env);
  if (!direct) {
    throw new EnvError(
      'DATABASE_POOL_MODE=transaction: migrations need a session of their own (they hold an advisory lock across statements), which a transaction-mode pooler does not give. Set DIRECT_DATABASE_URL to PostgreSQL itself, past the pooler.',
    );
  }
  return direct;
}

/**
 * The database a one-off command (the CLI) uses: DATABASE_URL when set, otherwise the
 * embedded server `npm start` runs, if it is running (its port from its postmaster.pid,
 * its generated password from beside its data). `via` says which, for the person to see.
 */
export function commandDatabase(env: Env): { url: string; via?: string } {
  if (env.DATABASE_URL) return { url: env.DATABASE_URL };
  const dataDir = embeddedDataDir(env);
  const setIt = 'or set DATABASE_URL=postgresql://user:pass@host:5432/db to use another database';
  if (!existsSync(dataDir)) {
    throw new EnvError(`DATABASE_URL is not set and there is no embedded database in ${shown(dataDir)}: run \`npm start\` once, ${setIt}.`);
  }
  const port = runningEmbeddedPort(dataDir);
  if (port === undefined) {
    throw new EnvError(
      `DATABASE_URL is not set and the embedded PostgreSQL in ${shown(dataDir)} is not running: start it with \`npm start\` (in another terminal) and run this again, ${setIt}.`,
    );
  }
  const password = readEmbeddedPassword(dataDir);
  if (password === undefined) {
    throw new EnvError(
      `DATABASE_URL is not set and ${shown(embeddedPasswordFile(dataDir))} does not exist: restart \`npm start\`, which generates it, ${setIt}.`,
    );
  }
  const url = embeddedUrl(port, password, PRODUCT_DATABASE);
  return { url, via: `DATABASE_URL is not set: using npm start's embedded PostgreSQL (${shown(dataDir)}), ${redactUrl(url)}` };
}

/** A URL fit for a log line: the password, if any, masked. */
export function redactUrl(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = '***';
  return u.toString();
}

function postmasterRunning(dataDir: string): boolean {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return false;
  return processAlive(Number(readFileSync(pidFile, 'utf8').split('\n')[0]));
}

/**
 * Stop an embedded server this process started. Ctrl-C reaches PostgreSQL too (it shares
 * the terminal's process group), so it may be gone already, and then the library's stop()
 * waits forever for an exit event that has passed: the postmaster's own pid file says
 * when it is really down.
 */
export async function stopEmbeddedPostgres(embedded: EmbeddedDatabase): Promise<void> {
  const down = (async () => {
    while (postmasterRunning(embedded.dataDir)) await new Promise((r) => setTimeout(r, 100));
  })();
  await Promise.race([embedded.stop(), down]);
}

/** How long a throw-away database may live before a later run takes it for a killed run's. */
const STALE_AFTER_MS = 3_600_000;

/**
 * Drop the throw-away databases (the test suite's, the browser suite's) of runs killed
 * before their teardown: those whose name matches `pattern`, whose first group is their
 * creation time in base 36, older than an hour. A name whose time is not plausible is
 * left alone, so a database named some other way is never taken for an old one.
 */
export async function dropStaleDatabases(client: pg.Client, pattern: RegExp): Promise<void> {
  const { rows } = await client.query<{ datname: string }>(`-- dropStaleDatabases
    SELECT datname FROM pg_database WHERE datname ~ '^wp_'`);
  for (const { datname } of rows) {
    const stamp = pattern.exec(datname)?.[1];
    const createdAt = stamp === undefined ? NaN : parseInt(stamp, 36);
    if (!(createdAt > Date.UTC(2024, 0, 1))) continue;
    if (Date.now() - createdAt > STALE_AFTER_MS) await client.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`).catch(() => {});
  }
}

/** One statement on the server's `postgres` database (CREATE / DROP DATABASE), on a connection of its own. */
export async function adminQuery(serverUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: withDatabase(serverUrl, 'postgres') });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
