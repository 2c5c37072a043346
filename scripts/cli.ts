import { spawn } from 'node:child_process';
import path from 'node:path';
import { z } from 'zod';
import { addMember, createApiKey, normalizeEmail, revokeApiKey, setMemberRole, setPassword } from '../server/auth/admin';
import { consoleBaseUrl, invitationLink, inviteMember } from '../server/auth/invitations';
import type { Db } from '../server/db';
import { parseEnv } from '../server/env';
import { migrate } from '../server/migrator';
import { ROLES } from '../server/common/roles';
import { CLI_ACTOR, databaseUrl, optionsOf, say, UsageError, withDb } from './cli/common';
import { enrollCsvCommand } from './cli/enroll-csv';
import { migrationUrl, ROOT } from './database';

// `npm run cli -- <command>`: set up and run a deployment without the console. Everything
// a person would do in Settings goes through the same functions (server/auth/admin.ts),
// audited with the actor "system". stdout carries only what a script may want to capture
// (create-api-key prints the key and nothing else); messages for people go to stderr.

const USAGE = `usage: npm run cli -- <command> [options]

commands:
  create-user     --email E --password P --project NAME --role ROLE [--name N] [--reset-password]
                  Create the person (and the project if missing) with ROLE in it. An existing
                  person gets the membership or the new role; their password changes only
                  with --reset-password (which also signs them out everywhere).
  invite          --project NAME --email E --role ROLE
                  Invite an email to the project, as Settings does: prints the invitation
                  link, once, on stdout (PUBLIC_URL's, else http://localhost:PORT's). The
                  person joins when they accept it, signed in as that email.
  create-api-key  --project NAME --role ROLE [--name N]
                  Print a new API key for the project, once, on stdout (nothing else).
  revoke-api-key  --id ID | --prefix PREFIX
                  Revoke a key; programs using it get 401 from then on.
  enroll-csv      WORKFLOW_ID FILE.csv
                  Enroll a CSV's rows into the workflow, as the console's CSV import does:
                  a header row with one "email" column, every other column into the
                  contact's data; at most 10,000 rows. Prints each row's outcome on stdout
                  (CSV: row,email,executionId,reason); exit code 1 if any row failed.
  migrate         Apply the database migrations.
  seed            [--force]  Seed the demo project if it is not there (again after it was
                  deleted). Its logins share a published password: refused when PUBLIC_URL
                  is https unless --force. A demo email that belongs to a person already
                  is left alone.
  invariants      Count each invariant's violations across the whole deployment (every
                  project; the console shows a project its own). Exit code 1 if any.
  worker          [--concurrency N]  Run a worker process until SIGTERM.
  help            Show this text.

ROLE is one of VIEWER, MARKETER, OPERATOR, OWNER. Every command except help uses
DATABASE_URL; when it is unset, the embedded PostgreSQL that \`npm start\` runs
(EMBEDDED_PG_DIR, default .data/postgres), which must be running.`;

const role = z.enum(ROLES, { error: `must be ${ROLES.join(', ').replace(/, (?=[^,]*$)/, ' or ')}` });
const projectName = z.string().trim().min(1, 'must not be empty').max(100, 'must be at most 100 characters');

const createUserArgs = z.object({
  email: z.email({ error: 'must be an email address' }).max(254),
  // better-auth's own bounds for a password it will accept at sign-in.
  password: z.string().min(8, 'must be at least 8 characters').max(128, 'must be at most 128 characters'),
  project: projectName,
  role,
  name: z.string().trim().min(1).max(100).optional(),
  'reset-password': z.boolean().optional(),
});

const inviteArgs = z.object({
  project: projectName,
  email: z.email({ error: 'must be an email address' }).max(254),
  role,
});

const createApiKeyArgs = z.object({
  project: projectName,
  role,
  name: z.string().trim().min(1, 'must not be empty').max(100).optional(),
});

const revokeApiKeyArgs = z
  .object({
    id: z.uuid({ error: 'must be a key id (a UUID)' }).optional(),
    prefix: z.string().regex(/^wp_[0-9A-Za-z]{1,40}$/, 'must be the start of a key, e.g. wp_AbC1234').optional(),
  })
  .refine((a) => (a.id === undefined) !== (a.prefix === undefined), { error: 'give exactly one of --id or --prefix' });

const seedArgs = z.object({ force: z.boolean().optional() });

const workerArgs = z.object({
  concurrency: z.coerce.number({ error: 'must be a number' }).int('must be an integer').min(1).max(256).optional(),
});

async function findOrCreateProject(db: Db, name: string): Promise<{ id: string; created: boolean }> {
  // ON CONFLICT: two set-up scripts creating the same project at once both end up in it.
  const inserted = await db.$queryRaw<{ id: string }[]>`
    -- findOrCreateProject
    INSERT INTO "Project" (name) VALUES (${name}) ON CONFLICT (name) DO NOTHING RETURNING id`;
  if (inserted[0]) return { id: inserted[0].id, created: true };
  const project = await db.project.findUniqueOrThrow({ where: { name }, select: { id: true } });
  return { id: project.id, created: false };
}

async function createUser(argv: string[]): Promise<void> {
  const args = optionsOf('create-user', argv, createUserArgs, ['email', 'password', 'project', 'role', 'name', 'reset-password']);
  await withDb(async (db) => {
    const project = await findOrCreateProject(db, args.project);
    if (project.created) say(`created project "${args.project}"`);
    const email = normalizeEmail(args.email);
    const where = `"${args.project}"`;
    const existing = await db.user.findUnique({
      where: { email },
      select: { id: true, memberships: { where: { projectId: project.id }, select: { role: true } } },
    });
    let accountCreated = false;
    const membership = existing?.memberships[0];
    if (existing && membership) {
      // Running the same set-up twice changes nothing and writes nothing.
      if (membership.role === args.role) {
        say(`${email} is already ${args.role} in ${where}`);
      } else {
        const changed = await setMemberRole(db, { projectId: project.id, userId: existing.id, role: args.role, actor: CLI_ACTOR });
        if (changed.outcome === 'LAST_OWNER') throw new Error(`${email} is the last OWNER of ${where}; make someone else OWNER first`);
        if (changed.outcome === 'NOT_FOUND') throw new Error(`${email} left ${where} while their role was being changed; run again`);
        say(`${email}: ${membership.role} -> ${args.role} in ${where}`);
      }
    } else {
      const added = await addMember(db, { projectId: project.id, email, password: args.password, name: args.name, role: args.role, actor: CLI_ACTOR });
      if (added.outcome !== 'ADDED') throw new Error(`${email} was added to ${where} by someone else meanwhile; run again`);
      accountCreated = added.accountCreated;
      say(`${accountCreated ? 'created' : 'existing user'} ${email}: ${args.role} in ${where}`);
    }
    if (accountCreated) return;
    if (args['reset-password']) {
      await setPassword(db, { userId: existing?.id ?? (await db.user.findUniqueOrThrow({ where: { email } })).id, password: args.password });
      say(`password of ${email} reset; their sessions ended`);
    } else {
      say(`the password of ${email} is unchanged (add --reset-password to set it)`);
    }
  });
}

async function inviteCommand(argv: string[]): Promise<void> {
  const args = optionsOf('invite', argv, inviteArgs, ['project', 'email', 'role']);
  await withDb(async (db) => {
    const project = await db.project.findUnique({ where: { name: args.project }, select: { id: true } });
    if (!project) throw new Error(`no project named "${args.project}" (create-user creates projects)`);
    const result = await inviteMember(db, { projectId: project.id, email: args.email, role: args.role, actor: CLI_ACTOR });
    if (result.outcome === 'ALREADY_MEMBER') throw new Error(`${normalizeEmail(args.email)} is already a member of "${args.project}" (${result.role})`);
    process.stdout.write(`${invitationLink(consoleBaseUrl(null), result.token)}\n`);
    say(
      `invitation of ${result.invitation.email} as ${args.role} in "${args.project}", until ${result.invitation.expiresAt.toISOString()}: the link is shown once`,
    );
  });
}

async function createApiKeyCommand(argv: string[]): Promise<void> {
  const args = optionsOf('create-api-key', argv, createApiKeyArgs, ['project', 'role', 'name']);
  await withDb(async (db) => {
    const project = await db.project.findUnique({ where: { name: args.project }, select: { id: true } });
    if (!project) throw new Error(`no project named "${args.project}" (create-user creates projects)`);
    const name = args.name ?? `cli ${new Date().toISOString().slice(0, 10)}`;
    const key = await createApiKey(db, { projectId: project.id, name, role: args.role, actor: CLI_ACTOR });
    process.stdout.write(`${key.secret}\n`);
    say(`API key "${name}" (${args.role}, id ${key.id}, prefix ${key.prefix}) for "${args.project}": shown once, store it now`);
  });
}

async function revokeApiKeyCommand(argv: string[]): Promise<void> {
  const args = optionsOf('revoke-api-key', argv, revokeApiKeyArgs, ['id', 'prefix']);
  await withDb(async (db) => {
    const keys = await db.apiKey.findMany({
      where: args.id ? { id: args.id } : { prefix: { startsWith: args.prefix! } },
      select: { id: true, projectId: true, name: true },
      take: 2,
    });
    if (keys.length === 0) throw new Error(`no API key with ${args.id ? `id ${args.id}` : `prefix ${args.prefix}`}`);
    if (keys.length > 1) throw new Error(`more than one API key starts with ${args.prefix}; use --id`);
    const key = keys[0]!;
    const result = await revokeApiKey(db, { projectId: key.projectId, id: key.id, actor: CLI_ACTOR });
    if (result.outcome === 'NOT_FOUND') throw new Error(`API key ${key.id} disappeared while revoking it`);
    if (result.outcome === 'ALREADY_REVOKED') {
      say(`API key "${key.name}" (${key.id}) was already revoked at ${result.key.revokedAt?.toISOString()}`);
    } else {
      say(`revoked API key "${key.name}" (${key.id})`);
    }
  });
}

async function migrateCommand(argv: string[]): Promise<void> {
  optionsOf('migrate', argv, z.object({}), []);
  const { applied, skipped } = await migrate(migrationUrl(parseEnv(), databaseUrl()), { log: say });
  say(`migrations: ${applied.length} applied, ${skipped.length} already applied`);
}

async function seedCommand(argv: string[]): Promise<number> {
  const args = optionsOf('seed', argv, seedArgs, ['force']);
  const { seedDemoOnce } = await import('../prisma/seed');
  const publicUrl = parseEnv().PUBLIC_URL;
  return withDb(async (db) => {
    const seeded = await seedDemoOnce(db, { by: 'cli seed', force: args.force === true, publicUrl });
    if (seeded.outcome === 'REFUSED_HTTPS') throw new Error(seeded.message);
    say(seeded.message);
    if (seeded.logins.length > 0) say('sign in as:');
    for (const login of seeded.logins) say(`  ${login.role.padEnd(9)} ${login.email}  ${login.password}`);
    return 0;
  });
}

/** The deployment-wide health check: one line per invariant on stdout; exit 1 on any violation. */
async function invariantsCommand(argv: string[]): Promise<number> {
  optionsOf('invariants', argv, z.object({}), []);
  const { checkInvariants } = await import('../server/engine/invariants');
  return withDb(async (db) => {
    const results = await checkInvariants(db);
    for (const r of results) process.stdout.write(`${r.id}  ${String(r.violations).padStart(6)}  ${r.title}\n`);
    const total = results.reduce((n, r) => n + r.violations, 0);
    say(total === 0 ? 'every invariant holds in every project' : `${total} violation(s): see docs/architecture.md (Invariants)`);
    return total === 0 ? 0 : 1;
  });
}

/**
 * The worker runs as its own process (scripts/worker.ts is the entry point that
 * `npm start` uses too); this command forwards signals to it so SIGTERM still drains.
 */
async function workerCommand(argv: string[]): Promise<number> {
  const args = optionsOf('worker', argv, workerArgs, ['concurrency']);
  const env = { ...process.env, DATABASE_URL: databaseUrl() };
  const extra = args.concurrency === undefined ? [] : ['--concurrency', String(args.concurrency)];
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'scripts', 'worker.ts'), ...extra], {
    cwd: ROOT,
    env,
    stdio: 'inherit',
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => child.kill(signal));
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))));
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'create-user':
      await createUser(rest);
      return 0;
    case 'invite':
      await inviteCommand(rest);
      return 0;
    case 'create-api-key':
      await createApiKeyCommand(rest);
      return 0;
    case 'revoke-api-key':
      await revokeApiKeyCommand(rest);
      return 0;
    case 'enroll-csv':
      return enrollCsvCommand(rest);
    case 'migrate':
      await migrateCommand(rest);
      return 0;
    case 'seed':
      return seedCommand(rest);
    case 'invariants':
      return invariantsCommand(rest);
    case 'worker':
      return workerCommand(rest);
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(`${USAGE}\n`);
      return 0;
    case undefined:
      process.stderr.write(`${USAGE}\n`);
      return 2;
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof UsageError) {
      process.stderr.write(`error: ${error.message} (npm run cli -- help shows usage)\n`);
      process.exit(2);
    }
    // Sentences for people (EnvError, refusals); a stack only helps when debugging.
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`error: ${message.split('\n')[0]}\n`);
    process.exit(1);
  },
);
