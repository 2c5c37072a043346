import { createRequire } from 'node:module';
import path from 'node:path';
import { seedDemoOnce, type DemoLogin } from '../prisma/seed';
import { createDb } from '../server/db';
import { EnvError, parseEnv, type Env } from '../server/env';
import { migrate } from '../server/migrator';
import { readOrCreateSecretFile } from '../server/secret-file';
import { staleBuild } from './build';
import { migrationUrl, openProductDatabase, redactUrl, ROOT, stopEmbeddedPostgres, type ProductDatabase } from './database';
import { portInUse } from '../server/embedded-postgres';
import { Supervisor } from './supervisor';

// `npm start`: the whole product from one command. Database (DATABASE_URL, or an embedded
// PostgreSQL under .data/), migrations, the demo seed (first start of an embedded database
// only), a build when none exists or the sources are newer, then the web server and the
// workers as child processes, all stopped in order on Ctrl-C.

/**
 * How long a child may take to finish what it holds after SIGTERM: the web server and the
 * workers drain for at most SHUTDOWN_SECONDS (scripts/web.ts, scripts/worker.ts), then exit.
 */
const stopGraceMs = () => (env.SHUTDOWN_SECONDS + 5) * 1000;
const NEXT_CLI = createRequire(import.meta.url).resolve('next/dist/bin/next');
const WORKER_ENTRY = path.join(ROOT, 'scripts', 'worker.ts');
const AUTH_SECRET_FILE = path.join(ROOT, '.data', 'auth-secret');

function log(line: string): void {
  process.stdout.write(`${'waypost'.padEnd(9)}│ ${line}\n`);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let env: Env;
try {
  env = parseEnv();
} catch (error) {
  if (!(error instanceof EnvError)) throw error;
  console.error(error.message);
  process.exit(1);
}

const supervisor = new Supervisor(path.join(ROOT, '.data', `run-${env.PORT}.json`), ROOT, log);
let database: ProductDatabase | undefined;
let stopping: Promise<void> | undefined;
/** When an operator (or a supervisor) asked this run to stop. */
let stopRequestedAt: number | undefined;

/** Stop children, then the database they use, then exit: 0 when an operator asked for it. */
function shutDown(exitCode: number, reason: string): Promise<void> {
  stopping ??= (async () => {
    log(reason);
    await supervisor.stopAll(stopGraceMs());
    if (database?.embedded) {
      log('stopping the embedded PostgreSQL');
      await stopEmbeddedPostgres(database.embedded);
    }
    process.exit(stopRequestedAt === undefined ? exitCode : 0);
  })();
  return stopping;
}

// One Ctrl-C arrives twice: the terminal signals the whole process group and npm forwards
// its own copy (as the Playwright server forwards SIGTERM). So only a Ctrl-C pressed again
// a moment later means "kill now".
const SAME_STOP_MS = 1_000;
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => {
    if (stopRequestedAt === undefined) {
      stopRequestedAt = Date.now();
      void shutDown(0, `${signal} received: stopping (press Ctrl-C again to kill)`);
    } else if (signal === 'SIGINT' && Date.now() - stopRequestedAt > SAME_STOP_MS) {
      log('Ctrl-C again: killing what is still running');
      supervisor.killAll();
    }
  });
}

/** Start-up failures are written as sentences for the operator; the stack only helps when debugging. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  return env.LOG_LEVEL === 'debug' ? (error.stack ?? error.message) : error.message;
}

async function seedDemo(url: string, embedded: boolean): Promise<DemoLogin[]> {
  const db = createDb(url, { poolSize: 4, applicationName: 'waypost-seed' });
  try {
    const seeded = await seedDemoOnce(db, { by: 'npm start', embedded, seedDemo: env.SEED_DEMO, publicUrl: env.PUBLIC_URL });
    log(seeded.message);
    return seeded.logins;
  } finally {
    await db.$disconnect();
  }
}

/**
 * The secret that signs session cookies: AUTH_SECRET when set, otherwise one generated on
 * the first start and kept in .data/auth-secret (readable by this user only), so sessions
 * survive a restart and nobody has to invent a secret to try the product.
 */
function authSecret(): string {
  if (env.AUTH_SECRET) return env.AUTH_SECRET;
  try {
    const { secret, created } = readOrCreateSecretFile(AUTH_SECRET_FILE);
    if (created) log(`generated a session secret in ${path.relative(ROOT, AUTH_SECRET_FILE)} (set AUTH_SECRET to choose your own)`);
    return secret;
  } catch (error) {
    throw new Error(`${error instanceof Error ? error.message : String(error)}, or set AUTH_SECRET`);
  }
}

/** Build when there is no build, or when a source changed since it was made (a pull, an edit). */
async function buildIfStale(): Promise<void> {
  const stale = staleBuild(ROOT);
  if (!stale) return;
  log(`${stale}: running next build`);
  const exit = await supervisor.start('build', process.execPath, [NEXT_CLI, 'build'], process.env).exited;
  if (exit.code !== 0) throw new Error(`next build failed (exit code ${exit.code ?? exit.signal}); its output is above`);
}

/**
 * Polls / until the web server answers 200 (a signed-out request is sent on to the
 * sign-in page, which is what answers). Migrations have just reached the same database.
 */
async function waitUntilServing(port: number): Promise<void> {
  const started = Date.now();
  let lastAnswer = 'no answer';
  let reported = false;
  while (!stopping) {
    try {
      const response = await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(10_000) });
      if (response.status === 200) return;
      lastAnswer = `HTTP ${response.status}`;
    } catch {
      lastAnswer = 'no answer';
    }
    if (!reported && Date.now() - started > 60_000) {
      log(`still waiting for http://localhost:${port}/ to answer 200 (so far: ${lastAnswer}); the web server's log is above`);
      reported = true;
    }
    await sleep(250);
  }
}

function printReady(url: string, workers: number, logins: DemoLogin[]): void {
  const lines = [
    '',
    `Waypost is running: http://localhost:${env.PORT}`,
    `  database  ${database?.embedded ? 'embedded PostgreSQL, ' : ''}${redactUrl(url)}`,
    `  workers   ${workers}`,
  ];
  if (env.METRICS_TOKEN) {
    const ports = env.WORKER_METRICS_PORT && workers > 0 ? `; workers' on ${env.METRICS_HOST}:${env.WORKER_METRICS_PORT}-${env.WORKER_METRICS_PORT + workers - 1}` : '';
    lines.push(`  metrics   http://localhost:${env.PORT}/metrics${ports} (Bearer METRICS_TOKEN)`);
  }
  if (logins.length > 0) {
    lines.push('  demo sign-ins (project "demo"):');
    const width = Math.max(...logins.map((l) => l.email.length));
    for (const login of logins) lines.push(`    ${login.role.padEnd(9)} ${login.email.padEnd(width)}  ${login.password}`);
  }
  lines.push('Press Ctrl-C to stop.', '');
  for (const line of lines) log(line);
}

async function main(): Promise<void> {
  await supervisor.stopOrphans(stopGraceMs());
  if (await portInUse(env.PORT)) {
    throw new Error(
      `Port ${env.PORT} is already in use, so the web server cannot start. Stop what holds it (e.g. \`fuser -k ${env.PORT}/tcp\`) or set PORT to a free port.`,
    );
  }

  // The embedded PostgreSQL shares the terminal's process group, so Ctrl-C reaches it
  // before this process reacts: its lines about that shutdown, and about the connections
  // it closes then, are expected rather than news.
  const postgresLog = (line: string) => stopping || /shutdown request|administrator command/.test(line) || log(line);
  database = await openProductDatabase(env, postgresLog);
  const url = database.url;
  const migrations = await migrate(migrationUrl(env, url), { log });
  log(`migrations: ${migrations.applied.length} applied, ${migrations.skipped.length} already applied`);
  const logins = await seedDemo(url, database.embedded !== undefined);
  const secret = authSecret();
  await buildIfStale();

  const childEnv = { ...process.env, DATABASE_URL: url, PORT: String(env.PORT), AUTH_SECRET: secret };
  // scripts/web.ts, not `next start`: the client's address comes from the socket.
  supervisor.start('web', process.execPath, ['--import', 'tsx', path.join(ROOT, 'scripts', 'web.ts')], childEnv);
  let workers = 0;
  for (; workers < env.WORKERS; workers++) {
    // Each worker's metrics listener on a port of its own: WORKER_METRICS_PORT, +1, +2, ...
    const metrics = env.WORKER_METRICS_PORT ? { WORKER_METRICS_PORT: String(env.WORKER_METRICS_PORT + workers) } : {};
    supervisor.start(`worker-${workers + 1}`, process.execPath, ['--import', 'tsx', WORKER_ENTRY], { ...childEnv, ...metrics });
  }

  const died = supervisor.firstUnexpectedExit();
  const serving = await Promise.race([waitUntilServing(env.PORT).then(() => true), died.then(() => false)]);
  if (serving && !stopping) printReady(url, workers, logins);

  const exit = await died;
  // Ctrl-C reaches the whole process group at once: a child may exit from it a moment
  // before this process handles its own copy. Give the signal that moment, so an
  // operator's stop is not reported as a crash.
  await sleep(250);
  if (stopping) return;
  await shutDown(1, `${exit.name} exited unexpectedly (${exit.signal ?? `code ${exit.code}`}): stopping everything`);
}

main().catch((error: unknown) => {
  if (stopping) return;
  void shutDown(1, `cannot start: ${describe(error)}`);
});
