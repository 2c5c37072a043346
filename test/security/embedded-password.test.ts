import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redactUrl, stopEmbeddedPostgres } from '../../scripts/database';
import {
  embeddedPasswordFile,
  freePort,
  ensureDatabase,
  startEmbeddedPostgres,
  type EmbeddedDatabase,
} from '../../server/embedded-postgres';
import { readOrCreateSecretFile } from '../../server/secret-file';

// The embedded PostgreSQL's superuser had the well-known
// password "postgres"; now each data directory gets a random one on first start, kept
// beside it with mode 0600, and the CLI finds that server (and password) by itself.

const ROOT = path.resolve(import.meta.dirname, '../..');
// Under the repository, as `npm start`'s own: as root, PostgreSQL runs as "postgres" and
// must reach the directory (a mkdtemp folder in /tmp is 0700).
const BASE = path.join(ROOT, '.data', `test-embedded-${randomBytes(4).toString('hex')}`);
const DATA_DIR = path.join(BASE, 'postgres');
const PASSWORD_FILE = path.join(BASE, 'postgres.password');


/** Connects with this password; resolves to the error's SQLSTATE, or 'ok'. */
async function connectWith(port: number, password: string): Promise<string> {
  const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password, database: 'postgres' });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return 'ok';
  } catch (error) {
    return (error as { code?: string }).code ?? String(error);
  } finally {
    await client.end().catch(() => {});
  }
}

function cli(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', path.join(ROOT, 'scripts', 'cli.ts'), ...args],
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: '', TEST_DATABASE_URL: '', ...env }, timeout: 120_000 },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

let server: EmbeddedDatabase | undefined;
let port = 0;
const logged: string[] = [];
const log = (line: string) => logged.push(line);

beforeAll(async () => {
  mkdirSync(BASE, { recursive: true });
  port = await freePort();
  server = await startEmbeddedPostgres({ dataDir: DATA_DIR, port, log });
}, 180_000);

afterAll(async () => {
  if (server) await stopEmbeddedPostgres(server);
  rmSync(BASE, { recursive: true, force: true });
}, 60_000);

describe('the embedded PostgreSQL password', () => {
  it('is generated on first start into <dir>.password, mode 0600, and the well-known "postgres" does not open the server', async () => {
    expect(embeddedPasswordFile(DATA_DIR)).toBe(PASSWORD_FILE);
    expect(statSync(PASSWORD_FILE).mode & 0o777).toBe(0o600);
    const password = readFileSync(PASSWORD_FILE, 'utf8').trim();
    expect(password).toMatch(/^[A-Za-z0-9_-]{43}$/); // 32 random bytes, base64url
    expect(new URL(server!.url).password).toBe(password);

    expect(await connectWith(port, password)).toBe('ok');
    expect(await connectWith(port, 'postgres')).toBe('28P01'); // invalid_password
    // Stored as a SCRAM verifier and checked with SCRAM, never sent in clear text.
    const client = new pg.Client({ connectionString: server!.url });
    await client.connect();
    try {
      const { rows } = await client.query(`SELECT rolpassword FROM pg_authid WHERE rolname = 'postgres'`);
      expect(rows[0].rolpassword).toMatch(/^SCRAM-SHA-256\$/);
    } finally {
      await client.end();
    }
    expect(readFileSync(path.join(DATA_DIR, 'pg_hba.conf'), 'utf8')).toMatch(/^host\s+all\s+all\s+127\.0\.0\.1\/32\s+scram-sha-256/m);
    // Nothing printed it.
    expect(logged.join('\n')).not.toContain(password);
    expect(redactUrl(server!.url)).not.toContain(password);
  });

  it('is random: each data directory gets its own; a second generation on one file keeps the first', () => {
    const a = path.join(BASE, 'a.password');
    const b = path.join(BASE, 'b.password');
    const first = readOrCreateSecretFile(a);
    expect(first.created).toBe(true);
    expect(readOrCreateSecretFile(b).secret).not.toBe(first.secret);
    expect(readOrCreateSecretFile(a)).toEqual({ secret: first.secret, created: false });
    expect(first.secret).not.toBe(readFileSync(PASSWORD_FILE, 'utf8').trim());
  });
});

describe('the CLI without DATABASE_URL', () => {
  it('uses the running embedded server with its stored password, and says which database it used', async () => {
    await ensureDatabase(server!.url, 'waypost');
    const env = { EMBEDDED_PG_DIR: DATA_DIR };
    const migrated = await cli(['migrate'], env);
    expect(migrated.code, migrated.stderr).toBe(0);
    expect(migrated.stderr).toContain(`DATABASE_URL is not set: using npm start's embedded PostgreSQL`);
    expect(migrated.stderr).toContain(`postgresql://postgres:***@127.0.0.1:${port}/waypost`);
    expect(migrated.stderr).toMatch(/migrations: \d+ applied/);

    const user = await cli(['create-user', '--email', 'ed@example.com', '--password', 'long enough', '--project', 'acme', '--role', 'OWNER'], env);
    expect(user.code, user.stderr).toBe(0);
    const key = await cli(['create-api-key', '--project', 'acme', '--role', 'VIEWER'], env);
    expect(key.code, key.stderr).toBe(0);
    expect(key.stdout).toMatch(/^wp_[0-9A-Za-z]{40}\n$/); // still only the key on stdout

    const password = readFileSync(PASSWORD_FILE, 'utf8').trim();
    for (const run of [migrated, user, key]) expect(run.stderr + run.stdout).not.toContain(password);
    const client = new pg.Client({ connectionString: server!.url.replace(/\/postgres$/, '/waypost') });
    await client.connect();
    try {
      const { rows } = await client.query(`SELECT u.email, p.name FROM "User" u JOIN "Membership" m ON m."userId" = u.id JOIN "Project" p ON p.id = m."projectId"`);
      expect(rows).toEqual([{ email: 'ed@example.com', name: 'acme' }]);
    } finally {
      await client.end();
    }
  }, 180_000);

  it('with no embedded database there, a sentence says to run npm start or set DATABASE_URL', async () => {
    const run = await cli(['create-api-key', '--project', 'acme', '--role', 'VIEWER'], { EMBEDDED_PG_DIR: path.join(BASE, 'nowhere') });
    expect(run).toMatchObject({ code: 1, stdout: '' });
    expect(run.stderr.trim()).toMatch(/^error: DATABASE_URL is not set and there is no embedded database in .*nowhere: run `npm start` once, or set DATABASE_URL=/);
  });
});

describe('a data directory from before it had a password of its own', () => {
  it('still opens, and is moved to a generated password on its next start; "postgres" no longer works', async () => {
    // The state an older `npm start` left: the superuser's password "postgres", checked
    // in clear text (pg_hba "password", the library's default), and no password file.
    const client = new pg.Client({ connectionString: server!.url });
    await client.connect();
    await client.query(`ALTER ROLE postgres PASSWORD 'postgres'`);
    await client.end();
    await stopEmbeddedPostgres(server!);
    server = undefined;
    rmSync(PASSWORD_FILE);
    const hba = path.join(DATA_DIR, 'pg_hba.conf');
    writeFileSync(hba, readFileSync(hba, 'utf8').replace(/scram-sha-256$/gm, 'password'));

    logged.length = 0;
    server = await startEmbeddedPostgres({ dataDir: DATA_DIR, port, log });
    const startLog = logged.join('\n');
    const password = readFileSync(PASSWORD_FILE, 'utf8').trim();
    expect(statSync(PASSWORD_FILE).mode & 0o777).toBe(0o600);
    expect(await connectWith(port, password)).toBe('ok');
    expect(await connectWith(port, 'postgres')).toBe('28P01');
    expect(startLog).toMatch(/password was the well-known default: changed it to the generated one/);
    expect(startLog).not.toContain(password);
    expect(startLog).not.toMatch(/FATAL/); // the old password tried first: no failed attempt logged
    expect(readFileSync(path.join(DATA_DIR, 'pg_hba.conf'), 'utf8')).toMatch(/^host\s+all\s+all\s+127\.0\.0\.1\/32\s+scram-sha-256\s*$/m);
    expect(readFileSync(path.join(DATA_DIR, 'pg_hba.conf'), 'utf8')).not.toMatch(/^host.*\spassword\s*$/m);
  }, 180_000);

  it('a password file that does not open the server is a sentence, and the server is stopped again', async () => {
    await stopEmbeddedPostgres(server!);
    server = undefined;
    const right = readFileSync(PASSWORD_FILE, 'utf8');
    writeFileSync(PASSWORD_FILE, `${'x'.repeat(43)}\n`, { mode: 0o600 });
    await expect(startEmbeddedPostgres({ dataDir: DATA_DIR, port, log })).rejects.toThrow(/does not open the embedded PostgreSQL/);
    expect(existsSync(path.join(DATA_DIR, 'postmaster.pid'))).toBe(false);
    writeFileSync(PASSWORD_FILE, right, { mode: 0o600 });
  }, 180_000);

  it('the CLI, while that server is down, says to start it', async () => {
    const run = await cli(['create-api-key', '--project', 'acme', '--role', 'VIEWER'], { EMBEDDED_PG_DIR: DATA_DIR });
    expect(run).toMatchObject({ code: 1, stdout: '' });
    expect(run.stderr.trim()).toMatch(/^error: DATABASE_URL is not set and the embedded PostgreSQL in .* is not running: start it with `npm start`/);
  });
});
