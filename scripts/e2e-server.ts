import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres, withDatabase, type EmbeddedDatabase } from '../server/embedded-postgres';
import { dropStaleDatabases, ROOT, stopEmbeddedPostgres } from './database';

// The web server of the Playwright suite: the real `npm start` path (migrations, demo seed,
// build if missing, web server, workers) on a fresh database of its own, so the browser
// tests see exactly what a newcomer sees and never share state with a developer's data.
// The database lives on TEST_DATABASE_URL's or DATABASE_URL's server, or on an embedded
// PostgreSQL started here; it is dropped when Playwright stops this process.

/** Beside the `npm start` (54329) and Vitest (54330) embedded servers, so all can run at once. */
const EMBEDDED_PORT = 54331;
/** This suite's databases: wp_e2e_<creation time, base 36>_<random hex>. */
const E2E_DATABASE = /^wp_e2e_([0-9a-z]+)_[0-9a-f]+$/;

function log(line: string): void {
  process.stdout.write(`${'e2e'.padEnd(9)}│ ${line}\n`);
}

async function withAdmin<T>(serverUrl: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: serverUrl, application_name: 'waypost-e2e' });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

async function main(): Promise<number> {
  let embedded: EmbeddedDatabase | undefined;
  let serverUrl = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL;
  if (!serverUrl) {
    embedded = await startEmbeddedPostgres({
      dataDir: path.join(ROOT, '.data', 'e2e-postgres'),
      port: EMBEDDED_PORT,
      ephemeral: true,
      log,
    });
    serverUrl = embedded.url;
  }

  const name = `wp_e2e_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  await withAdmin(serverUrl, async (client) => {
    await dropStaleDatabases(client, E2E_DATABASE);
    await client.query(`CREATE DATABASE "${name}"`);
  });
  log(`fresh database ${name}`);
  // Specs that must stage a state the running product would heal at once (e2e/repair.spec.ts,
  // e2e/stuck.spec.ts: overdue waits, while they pause the workers listed in the
  // supervisor's run file) read this run's database URL and that run file from here.
  // Removed when the run ends.
  const databaseUrl = withDatabase(serverUrl, name);
  const port = process.env.PORT ?? '3000';
  const runInfo = path.join(ROOT, '.data', `e2e-${port}.json`);
  mkdirSync(path.dirname(runInfo), { recursive: true });
  writeFileSync(
    runInfo,
    `${JSON.stringify({ databaseUrl, database: name, runFile: path.join(ROOT, '.data', `run-${port}.json`) }, null, 2)}\n`,
    { mode: 0o600 },
  );

  const product = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'scripts', 'start.ts')], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      // Asked for explicitly: the specs sign in with the demo logins, and `npm start` seeds
      // an external database only when asked (this one is fresh, so it is seeded once).
      SEED_DEMO: '1',
      // The console is served on http://localhost here, never https (which refuses the seed).
      PUBLIC_URL: '',
      // A session secret of its own, so the run neither reads nor creates a developer's .data/auth-secret.
      AUTH_SECRET: randomBytes(32).toString('base64url'),
      // The seeded poison step's expired lease counts as LEASE_EXPIRED seconds after the
      // seed, not two minutes later, whichever spec file runs first. Fixed, not taken from
      // the caller's environment, so the suite sees the same thing everywhere; specs stage
      // overdue states minutes in the past.
      STUCK_GRACE_SECONDS: '5',
      // Each browser test stands for a person at a machine of their own, as a reverse proxy
      // on this host would pass on (e2e/sign-in.ts asDistinctClient): trust loopback's X-Forwarded-For.
      TRUSTED_PROXIES: 'loopback',
      // e2e/webhooks.spec.ts runs its webhook receiver on this machine: the owner's
      // configuration allows that host (over http), and retries come after 1 and 2
      // seconds instead of minutes, so a failing receiver's message is dead within seconds.
      WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
      WEBHOOK_RETRY_SCHEDULE: '1,2',
    },
    stdio: 'inherit',
  });
  const exited = new Promise<number>((resolve) => product.once('exit', (code) => resolve(code ?? 1)));
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => product.kill('SIGTERM'));
  }

  const code = await exited;
  rmSync(runInfo, { force: true });
  if (embedded) {
    // The whole throwaway server goes, its database with it.
    await stopEmbeddedPostgres(embedded);
    rmSync(embedded.dataDir, { recursive: true, force: true });
  } else {
    await withAdmin(serverUrl, (client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).catch((error: unknown) =>
      log(`could not drop ${name}: ${error instanceof Error ? error.message : String(error)}`),
    );
  }
  return code;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    log(`cannot start: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
