import { inject } from 'vitest';
import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { closeDb, createDb, type Db } from '../../server/db';
import { withDatabase } from '../../server/embedded-postgres';

export interface TestDatabase {
  name: string;
  /** Where the code under test reaches this database: the pooler's URL when the run goes through one (global-setup.ts), else the server's. */
  url: string;
  /** The database on the server itself, past any pooler (what needs a session: LISTEN, migrations, pg_terminate_backend). */
  directUrl: string;
  /** A Prisma client on this database (pool of 10). */
  db: Db;
  /** A plain pg client for assertions that must not go through the code under test (nor the pooler). */
  query<T extends pg.QueryResultRow = any>(sql: string, params?: unknown[]): Promise<T[]>;
  drop(): Promise<void>;
}

function uniqueName(kind: 't'): string {
  return `wp_${kind}_${randomBytes(4).toString('hex')}_${Date.now().toString(36)}`;
}

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: inject('serverUrl') });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

async function open(name: string): Promise<TestDatabase> {
  const directUrl = withDatabase(inject('serverUrl'), name);
  const url = inject('poolerUrl') ? withDatabase(inject('poolerUrl'), name) : directUrl;
  const db = createDb(url, { applicationName: 'waypost-test' });
  const pool = new pg.Pool({ connectionString: directUrl, max: 4 });
  // DROP DATABASE ... WITH (FORCE) may reach a connection the pool is still closing; the
  // pool re-emits that as an 'error' event, which must not be an uncaught exception.
  pool.on('error', () => {});
  return {
    name,
    url,
    directUrl,
    db,
    query: async (sql, params) => (await pool.query(sql, params as unknown[])).rows,
    drop: async () => {
      await closeDb(db);
      await pool.end();
      await admin((c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
    },
  };
}

/** A fresh database with every migration applied (a clone of the run's template). */
export async function freshDatabase(): Promise<TestDatabase> {
  const name = uniqueName('t');
  // Cloning needs the template to have no other session; retry briefly if one lingers.
  for (let attempt = 0; ; attempt++) {
    try {
      await admin((c) => c.query(`CREATE DATABASE "${name}" TEMPLATE "${inject('templateDatabase')}"`));
      break;
    } catch (error) {
      if (attempt >= 20 || !/being accessed by other users/.test(String(error))) throw error;
      await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
    }
  }
  return open(name);
}

/** A fresh database with no tables at all (migration tests). */
export async function emptyDatabase(): Promise<TestDatabase> {
  const name = uniqueName('t');
  await admin((c) => c.query(`CREATE DATABASE "${name}"`));
  return open(name);
}

/**
 * Per table of the database: its row count and a digest of every row's content, so that
 * an UPDATE shows as well as an INSERT or a DELETE. `lastUsedAt` is left out of every row:
 * it is an API key's "still in use?" hint, which a refused call may refresh (at most once a
 * minute) and which is not data anyone wrote. RateLimitBucket is left out too: every
 * request, refused or not, is counted there (server/db/rate-counter.ts), by design.
 * `exclude` names tables that are allowed to change (say SignInFailure, which counts wrong
 * passwords by design).
 */
export async function tableDigests(t: TestDatabase, exclude: string[] = []): Promise<Record<string, string>> {
  const tables = await t.query<{ name: string }>(
    `SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' AND tablename <> ALL($1::text[]) ORDER BY tablename`,
    [[...exclude, '_prisma_migrations', 'waypost_migrations', 'RateLimitBucket']],
  );
  const digests: Record<string, string> = {};
  for (const { name } of tables) {
    const [row] = await t.query<{ n: string; digest: string | null }>(
      `SELECT count(*) AS n, md5(string_agg((to_jsonb(x) - 'lastUsedAt')::text, ',' ORDER BY (to_jsonb(x) - 'lastUsedAt')::text)) AS digest FROM "${name}" x`,
    );
    digests[name] = `${row!.n} rows ${row!.digest ?? '-'}`;
  }
  return digests;
}
