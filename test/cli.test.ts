import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { verifyPassword } from 'better-auth/crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveActor } from '../server/auth/actor';
import { authFor } from '../server/auth/auth';
import { freshDatabase, type TestDatabase } from './support/database';
import { bearer } from './support/auth';
import { createProject, waitWorkflow, workflowFrom } from './support/fixtures';

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

  it('invite prints the invitation link and nothing else on stdout; nobody joins until it is accepted', async () => {
    const made = await cli(['invite', '--project', 'acme', '--email', 'Invited@Example.com', '--role', 'OPERATOR'], { PUBLIC_URL: 'https://waypost.example.com' });
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toMatch(/^https:\/\/waypost\.example\.com\/invitations\/[A-Za-z0-9_-]{43}\n$/);
    expect(made.stderr).not.toContain(made.stdout.trim());
    const [row] = await t.query(`SELECT i.email, i.role, i."invitedBy", i."acceptedAt" FROM "Invitation" i JOIN "Project" p ON p.id = i."projectId" WHERE p.name = 'acme'`);
    expect(row).toEqual({ email: 'invited@example.com', role: 'OPERATOR', invitedBy: 'system', acceptedAt: null });
    expect(await t.query(`SELECT id FROM "User" WHERE email = 'invited@example.com'`)).toEqual([]);
    const nowhere = await cli(['invite', '--project', 'nowhere', '--email', 'x@example.com', '--role', 'VIEWER']);
    expect(nowhere.code).toBe(1);
    expect(nowhere.stderr).toContain('no project named "nowhere"');
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

  it('without DATABASE_URL and with no embedded database, a sentence says what to set', async () => {
    const run = await cli(['create-api-key', '--project', 'acme', '--role', 'VIEWER'], { DATABASE_URL: '', EMBEDDED_PG_DIR: '.data/no-such-postgres' });
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toMatch(/^error: DATABASE_URL is not set and there is no embedded database in .data\/no-such-postgres: run `npm start` once, or set DATABASE_URL/);
  });
});

describe('enroll-csv', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'waypost-cli-'));
  const file = (name: string, text: string | Buffer) => {
    writeFileSync(path.join(dir, name), text);
    return path.join(dir, name);
  };

  it('enrolls a CSV as the console import does: each row answered on stdout, one audit entry by "system", exit 1 when a row failed', async () => {
    const project = await createProject(t.db, 'csv-import');
    const workflow = await workflowFrom(t.db, project.id, waitWorkflow());
    const csv = file('contacts.csv', 'Email,plan\nada@example.com,pro\nnot-an-email,free\nbob@example.com,\n');
    const run = await cli(['enroll-csv', workflow.id, csv]);
    expect(run.code, run.stderr).toBe(1);
    const [header, ...lines] = run.stdout.trim().split('\n');
    expect(header).toBe('row,email,executionId,reason');
    expect(lines.map((l) => l.split(','))).toEqual([
      ['1', 'ada@example.com', expect.stringMatching(/^[0-9a-f-]{36}$/), ''],
      ['2', 'not-an-email', '', 'INVALID'],
      ['3', 'bob@example.com', expect.stringMatching(/^[0-9a-f-]{36}$/), ''],
    ]);
    expect(run.stderr).toContain(`enrolled 2 of 3 rows into "${(await t.db.workflow.findUniqueOrThrow({ where: { id: workflow.id } })).name}"; 1 failed (1 INVALID)`);
    const contacts = await t.query(`SELECT email, data FROM "Contact" WHERE "projectId" = $1 ORDER BY email`, [project.id]);
    expect(contacts).toEqual([
      { email: 'ada@example.com', data: { plan: 'pro' } },
      { email: 'bob@example.com', data: {} },
    ]);
    const audit = await t.query(`SELECT actor, action, outcome, after FROM "AuditEntry" WHERE "projectId" = $1`, [project.id]);
    expect(audit).toEqual([
      {
        actor: 'system',
        action: 'enrollments.importCsv',
        outcome: 'APPLIED',
        after: { rows: 3, enrolled: 2, failed: 1, reasons: { INVALID: 1 }, source: 'csv', complete: true },
      },
    ]);

    const again = await cli(['enroll-csv', workflow.id, file('one.csv', 'email\nada@example.com\n')]);
    expect(again.code).toBe(1);
    expect(again.stdout).toContain('1,ada@example.com,,ACTIVE_EXECUTION');
  });

  it('refuses a CSV, a file or a workflow it cannot use with one sentence, enrolling nobody', async () => {
    const project = await createProject(t.db, 'csv-refusals');
    const workflow = await workflowFrom(t.db, project.id, waitWorkflow({ enabled: false }));
    const cases: [string[], number, string][] = [
      [['enroll-csv', workflow.id, file('no-email.csv', 'name\nAda\n')], 1, 'the header row needs exactly one "email" column'],
      [['enroll-csv', workflow.id, file('empty.csv', 'email\n')], 1, 'the CSV has a header but no rows'],
      [['enroll-csv', workflow.id, file('latin1.csv', Buffer.from('email\n\xe9\n', 'latin1'))], 1, 'is not UTF-8 text'],
      [['enroll-csv', workflow.id, path.join(dir, 'missing.csv')], 1, 'missing.csv does not exist'],
      [['enroll-csv', workflow.id, file('ok.csv', 'email\nada@example.com\n')], 1, 'is disabled; enable it to enroll contacts'],
      [['enroll-csv', '00000000-0000-0000-0000-000000000000', file('ok2.csv', 'email\nada@example.com\n')], 1, 'no workflow with id'],
      [['enroll-csv', 'not-an-id', 'x.csv'], 2, 'enroll-csv: workflow must be a workflow id'],
      [['enroll-csv', workflow.id], 2, 'enroll-csv: give a workflow id and a CSV file'],
    ];
    for (const [args, code, sentence] of cases) {
      const run = await cli(args);
      expect({ code: run.code, stdout: run.stdout }, run.stderr).toEqual({ code, stdout: '' });
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stderr).toContain(sentence);
    }
    expect(await t.db.workflowExecution.count({ where: { projectId: project.id } })).toBe(0);
  });
});

describe('migrate and seed', () => {
  it('migrate has nothing to do on a migrated database; seed creates the demo once', async () => {
    const migrated = await cli(['migrate']);
    expect(migrated.code, migrated.stderr).toBe(0);
    expect(migrated.stderr).toMatch(/migrations: 0 applied, \d+ already applied/);

    // The demo logins' password is published: not on a console with a public (https) address.
    const refused = await cli(['seed'], { PUBLIC_URL: 'https://waypost.example.com' });
    expect(refused).toMatchObject({ code: 1, stdout: '' });
    expect(refused.stderr.trim()).toMatch(/^error: refusing to seed the demo project: PUBLIC_URL is https/);
    expect(await t.db.project.count({ where: { name: 'demo' } })).toBe(0);

    const seeded = await cli(['seed']);
    expect(seeded.code, seeded.stderr).toBe(0);
    expect(seeded.stderr).toContain('demo project "demo" seeded');
    expect(seeded.stderr).toContain('OWNER     owner@demo.waypost.dev  waypost-demo');
    const again = await cli(['seed']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr.trim()).toBe('demo project "demo" already exists; nothing changed');
    expect(await t.db.project.count({ where: { name: 'demo' } })).toBe(1);
  }, 300_000);

  it('seed --force seeds over https; a person asking recreates a deleted demo project, leaving people with demo emails alone', async () => {
    await t.query(`DELETE FROM "Project" WHERE name = 'demo'`);
    const accounts = await t.query(`SELECT id, password FROM "Account" ORDER BY id`);
    const forced = await cli(['seed', '--force'], { PUBLIC_URL: 'https://waypost.example.com' });
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.stderr).toContain('demo project "demo" seeded');
    // The demo users of the first seed are people now: no account added, no membership.
    expect(forced.stderr).toContain('owner@demo.waypost.dev already belongs to a person: left as it was');
    expect(forced.stderr).not.toContain('waypost-demo');
    expect(await t.query(`SELECT id, password FROM "Account" ORDER BY id`)).toEqual(accounts);
    expect(await t.query(`SELECT count(*)::int AS n FROM "Membership" m JOIN "Project" p ON p.id = m."projectId" WHERE p.name = 'demo'`)).toEqual([{ n: 0 }]);
  }, 300_000);

  it('seed takes no other option', async () => {
    const run = await cli(['seed', '--forse']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/Unknown option '--forse'/);
  });
});
