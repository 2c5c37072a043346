import { execFile } from 'node:child_process';
import path from 'node:path';
import { verifyPassword } from 'better-auth/crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveActor } from '../server/auth/actor';
import { authFor } from '../server/auth/auth';
import { freshDatabase, type TestDatabase } from './support/database';
import { bearer } from './support/auth';

// `npm run cli -- <command>`, run as a process the way an operator runs it, against a
// fresh database: a deployment set up without the console.

const ROOT = path.resolve(import.meta.dirname, '..');
let t: TestDatabase;

beforeAll(async () => {
  t = await freshDatabase();
});
afterAll(() => t.drop());

function cli(args: string[], env: Record<string, string | undefined> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', path.join(ROOT, 'scripts', 'cli.ts'), ...args],
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: t.url, ...env }, timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

async function passwordHashOf(email: string): Promise<string> {
  const [row] = await t.query<{ password: string }>(
    `SELECT a.password FROM "Account" a JOIN "User" u ON u.id = a."userId" WHERE u.email = $1 AND a."providerId" = 'credential'`,
    [email],
  );
  return row!.password;
}

describe('create-user', () => {
  it('creates the project, the person and their membership; they can sign in', async () => {
    const run = await cli(['create-user', '--email', 'Olga@Example.com', '--password', 'first password', '--project', 'acme', '--role', 'OWNER']);
    expect(run, run.stderr).toMatchObject({ code: 0, stdout: '' });
    expect(run.stderr).not.toContain('first password');

    const member = await t.query(
      `SELECT u.email, m.role, p.name FROM "Membership" m JOIN "User" u ON u.id = m."userId" JOIN "Project" p ON p.id = m."projectId"`,
    );
    expect(member).toEqual([{ email: 'olga@example.com', role: 'OWNER', name: 'acme' }]);
    const signedIn = await authFor(t.db).api.signInEmail({ body: { email: 'olga@example.com', password: 'first password' }, asResponse: true });
    expect(signedIn.status).toBe(200);
  });

  it('is idempotent; an existing person gets the new role, and a new password only with --reset-password', async () => {
    const hash = await passwordHashOf('olga@example.com');
    const again = await cli(['create-user', '--email', 'olga@example.com', '--password', 'first password', '--project', 'acme', '--role', 'OWNER']);
    expect(again.code, again.stderr).toBe(0);
    expect(await t.db.auditEntry.count({ where: { action: { startsWith: 'members.' } } })).toBe(1);

    const otherProject = await cli(['create-user', '--email', 'olga@example.com', '--password', 'other password', '--project', 'globex', '--role', 'VIEWER']);
    expect(otherProject.code, otherProject.stderr).toBe(0);
    expect(otherProject.stderr).toContain('password of olga@example.com is unchanged');
    expect(await passwordHashOf('olga@example.com')).toBe(hash);

    const reset = await cli(['create-user', '--email', 'olga@example.com', '--password', 'second password', '--project', 'globex', '--role', 'MARKETER', '--reset-password']);
    expect(reset.code, reset.stderr).toBe(0);
    expect(await verifyPassword({ hash: await passwordHashOf('olga@example.com'), password: 'second password' })).toBe(true);
    const roles = await t.query(`SELECT p.name, m.role FROM "Membership" m JOIN "Project" p ON p.id = m."projectId" ORDER BY p.name`);
    expect(roles).toEqual([
      { name: 'acme', role: 'OWNER' },
      { name: 'globex', role: 'MARKETER' },
    ]);
  });

  it('refuses to demote the last OWNER of a project', async () => {
    const run = await cli(['create-user', '--email', 'olga@example.com', '--password', 'second password', '--project', 'acme', '--role', 'VIEWER']);
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toBe('error: olga@example.com is the last OWNER of "acme"; make someone else OWNER first');
  });
});

describe('API keys', () => {
  it('create-api-key prints the key and nothing else on stdout; the key works until revoke-api-key', async () => {
    const created = await cli(['create-api-key', '--project', 'acme', '--role', 'MARKETER', '--name', 'shop backend']);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toMatch(/^wp_[0-9A-Za-z]{40}\n$/);
    const key = created.stdout.trim();
    expect(created.stderr).not.toContain(key);
    expect(await resolveActor(t.db, bearer(key))).toMatchObject({ kind: 'apikey', label: 'shop backend', role: 'MARKETER' });

    const revoked = await cli(['revoke-api-key', '--prefix', key.slice(0, 10)]);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(await resolveActor(t.db, bearer(key))).toBeNull();
    const again = await cli(['revoke-api-key', '--prefix', key.slice(0, 10)]);
    expect(again.code).toBe(0);
    expect(again.stderr).toContain('already revoked');
  });

  it('a key for a project that does not exist is a sentence', async () => {
    const run = await cli(['create-api-key', '--project', 'nowhere', '--role', 'VIEWER']);
    expect(run).toMatchObject({ code: 1, stdout: '' });
    expect(run.stderr.trim()).toBe('error: no project named "nowhere" (create-user creates projects)');
  });
});

describe('bad arguments: one line, non-zero exit, nothing changed', () => {
  it.each([
    [['create-user', '--email', 'not-an-email', '--password', 'long enough', '--project', 'acme', '--role', 'OWNER'], /--email must be an email address/],
    [['create-user', '--email', 'a@example.com', '--password', 'short', '--project', 'acme', '--role', 'OWNER'], /--password must be at least 8 characters/],
    [['create-user', '--email', 'a@example.com', '--password', 'long enough', '--project', 'acme'], /--role is required/],
    [['create-api-key', '--project', 'acme', '--role', 'ADMIN'], /--role must be VIEWER, MARKETER, OPERATOR or OWNER/],
    [['create-api-key', '--project', 'acme', '--role', 'VIEWER', '--colour', 'red'], /Unknown option '--colour'/],
    [['revoke-api-key'], /give exactly one of --id or --prefix/],
    [['revoke-api-key', '--id', 'nope'], /--id must be a key id/],
    [['worker', '--concurrency', 'many'], /--concurrency must be a number/],
    [['frobnicate'], /unknown command "frobnicate"/],
  ])('%j', async (args, message) => {
    const before = await t.query(`SELECT (SELECT count(*) FROM "User") AS users, (SELECT count(*) FROM "ApiKey") AS keys`);
    const run = await cli(args);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(message);
    expect(await t.query(`SELECT (SELECT count(*) FROM "User") AS users, (SELECT count(*) FROM "ApiKey") AS keys`)).toEqual(before);
  });

  it('no command prints the usage and fails', async () => {
    const run = await cli([]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('usage: npm run cli -- <command>');
  });

  it('without DATABASE_URL, a sentence says what to set', async () => {
    const run = await cli(['create-api-key', '--project', 'acme', '--role', 'VIEWER'], { DATABASE_URL: '' });
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toMatch(/^error: DATABASE_URL is not set: point the CLI at the database/);
  });
});

describe('migrate and seed', () => {
  it('migrate has nothing to do on a migrated database; seed creates the demo once', async () => {
    const migrated = await cli(['migrate']);
    expect(migrated.code, migrated.stderr).toBe(0);
    expect(migrated.stderr).toMatch(/migrations: 0 applied, \d+ already applied/);

    const seeded = await cli(['seed']);
    expect(seeded.code, seeded.stderr).toBe(0);
    expect(seeded.stderr).toContain('demo project "demo" seeded');
    const again = await cli(['seed']);
    expect(again.stderr).toContain('already exists');
    expect(await t.db.project.count({ where: { name: 'demo' } })).toBe(1);
  });
});
