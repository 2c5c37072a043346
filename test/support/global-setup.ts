import type { TestProject } from 'vitest/node';
import path from 'node:path';
import pg from 'pg';
import { migrate } from '../../server/migrator';
import { startEmbeddedPostgres, withDatabase, type EmbeddedDatabase } from '../../server/embedded-postgres';
import { dropStaleDatabases } from '../../scripts/database';

// One PostgreSQL server for the whole run: TEST_DATABASE_URL or DATABASE_URL when set,
// otherwise an embedded one in .data/test-postgres (ephemeral). On it, one migrated
// template database per run; each test file clones it (CREATE DATABASE ... TEMPLATE).
//
// Through a transaction-mode pooler (DATABASE_POOL_MODE=transaction, as CI runs the race
// suite through PgBouncer: scripts/pgbouncer.ts), DATABASE_URL is the pooler and
// DIRECT_DATABASE_URL (or TEST_DATABASE_URL) the server: databases are made, cloned and
// dropped directly, and the code under test reaches each file's database through the
// pooler (support/database.ts).

declare module 'vitest' {
  export interface ProvidedContext {
    serverUrl: string;
    /** The pooler in front of serverUrl that the code under test goes through; '' for none. */
    poolerUrl: string;
    templateDatabase: string;
  }
}

/** This suite's databases: its template and each file's clone (support/database.ts), creation time last. */
const TEST_DATABASE = /^wp_(?:template_\d+|t_[0-9a-f]+)_([0-9a-z]+)$/;

let embedded: EmbeddedDatabase | undefined;
let serverUrl = '';
let template = '';

export async function setup(project: TestProject) {
  const pooled = process.env.DATABASE_POOL_MODE === 'transaction';
  const direct = process.env.TEST_DATABASE_URL || process.env.DIRECT_DATABASE_URL;
  if (pooled && (!process.env.DATABASE_URL || !direct)) {
    throw new Error('DATABASE_POOL_MODE=transaction: set DATABASE_URL to the pooler and DIRECT_DATABASE_URL (or TEST_DATABASE_URL) to the server behind it');
  }
  const configured = pooled ? direct : process.env.TEST_DATABASE_URL || process.env.DATABASE_URL;
  if (configured) {
    serverUrl = configured;
  } else {
    embedded = await startEmbeddedPostgres({
      dataDir: path.resolve(import.meta.dirname, '../../.data/test-postgres'),
      port: Number(process.env.TEST_EMBEDDED_PG_PORT ?? 54330),
      ephemeral: true,
      log: (line) => console.log(`[embedded-postgres] ${line}`),
    });
    serverUrl = embedded.url;
  }
  template = `wp_template_${process.pid}_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await dropStaleDatabases(admin, TEST_DATABASE);
    await admin.query(`CREATE DATABASE "${template}"`);
  } finally {
    await admin.end();
  }
  await migrate(withDatabase(serverUrl, template));
  project.provide('serverUrl', serverUrl);
  project.provide('poolerUrl', pooled ? process.env.DATABASE_URL! : '');
  project.provide('templateDatabase', template);
}

export async function teardown() {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect().catch(() => {});
  await admin.query(`DROP DATABASE IF EXISTS "${template}" WITH (FORCE)`).catch(() => {});
  await admin.end().catch(() => {});
  await embedded?.stop();
}
