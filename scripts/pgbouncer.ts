import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { freePort, withDatabase } from '../server/embedded-postgres';

// Debian's PgBouncer (1.18, /usr/sbin/pgbouncer) in front of a PostgreSQL server, for the
// tests (test/db/pgbouncer.test.ts, and CI's race suite and quick drill through it), the
// drill and the bench: startPgBouncer() writes an ini and an auth file in a temporary
// directory, runs pgbouncer in the foreground as this process's child (as the postgres
// user when we are root: pgbouncer refuses to run as root), waits until a query goes
// through it, and stop() ends it and removes the directory. One `* =` line sends every
// database name to the upstream server, so each test file's cloned database is reachable
// through it by name. Clients authenticate to pgbouncer with the upstream URL's user
// (auth_type trust: no password asked); pgbouncer logs into PostgreSQL with the URL's user
// and password. docs/deploy.md, "PgBouncer", says how to run it for real.
//
// As a command, for people and for .ci/run:
//   node --import tsx scripts/pgbouncer.ts [--upstream URL] [--port N] [--pool-size N] [--max-client-conn N] [-- COMMAND ARGS...]
// Without a command it runs until SIGINT or SIGTERM. With one, it runs the command with
// DATABASE_URL set to the pooled URL, DIRECT_DATABASE_URL to the upstream one and
// DATABASE_POOL_MODE=transaction, stops pgbouncer after, and exits with the command's code.

export const PGBOUNCER_BINARY = process.env.PGBOUNCER_PATH || '/usr/sbin/pgbouncer';

export interface PgBouncerOptions {
  /** A postgres:// URL of the real server (its user, password, host and port are used; its database is where readiness is checked). */
  upstream: string;
  /** Where pgbouncer listens on 127.0.0.1; unset: a free port. */
  port?: number;
  /** pool_mode; only transaction mode is what the product must survive. */
  poolMode?: 'transaction' | 'session';
  /** Server connections per database and user (default_pool_size). */
  defaultPoolSize?: number;
  /** Client connections pgbouncer accepts in all (max_client_conn). */
  maxClientConn?: number;
  /** pgbouncer's own log lines (connections, errors); unset: kept for the error on a failed start only. */
  log?: (line: string) => void;
}

export interface PgBouncer {
  port: number;
  /** The pgbouncer process (its CPU time: the bench). */
  pid: number;
  /** The URL of `database` through pgbouncer (the upstream's user and password). */
  url(database: string): string;
  /** pgbouncer's log so far (the last 50,000 characters). */
  output(): string;
  stop(): Promise<void>;
}

const READY_TIMEOUT_MS = 15_000;

/** An ini value: pgbouncer reads `key = value` to the end of the line; a connect string's values are quoted with ''. */
function connValue(value: string): string {
  return /^[\w.\-/]+$/.test(value) ? value : `'${value.replace(/'/g, "''")}'`;
}

/** The postgres user's uid and gid from /etc/passwd, when there is such a user. */
function postgresUser(): { uid: number; gid: number } | undefined {
  if (!existsSync('/etc/passwd')) return undefined;
  for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
    const [name, , uid, gid] = line.split(':');
    if (name === 'postgres') return { uid: Number(uid), gid: Number(gid) };
  }
  return undefined;
}

function iniFor(o: { dir: string; port: number; upstream: URL; poolMode: string; defaultPoolSize: number; maxClientConn: number }): string {
  const u = o.upstream;
  const user = decodeURIComponent(u.username || 'postgres');
  const password = decodeURIComponent(u.password);
  const host = u.hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1';
  const target = [`host=${connValue(host)}`, `port=${u.port || '5432'}`, `user=${connValue(user)}`, ...(password ? [`password=${connValue(password)}`] : [])];
  return [
    '[databases]',
    // Every database name goes to the same server, under its own name: one pool each.
    `* = ${target.join(' ')}`,
    '',
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${o.port}`,
    'unix_socket_dir =',
    `auth_type = trust`,
    `auth_file = ${path.join(o.dir, 'userlist.txt')}`,
    `pool_mode = ${o.poolMode}`,
    `default_pool_size = ${o.defaultPoolSize}`,
    `max_client_conn = ${o.maxClientConn}`,
    // A test file's database is dropped when it ends: its pool goes soon after.
    'autodb_idle_timeout = 60',
    // After a failed server login (PostgreSQL restarting: the drill's crash), try again within
    // a second, not pgbouncer's default 15 s, which would stretch every outage by that much.
    'server_login_retry = 1',
    'server_reset_query_always = 0',
    `pidfile = ${path.join(o.dir, 'pgbouncer.pid')}`,
    'logfile =',
    'log_connections = 0',
    'log_disconnections = 0',
    'log_pooler_errors = 1',
    'stats_period = 3600',
    '',
  ].join('\n');
}

/** Start pgbouncer in front of `upstream`; resolves once a query goes through it. */
export async function startPgBouncer(options: PgBouncerOptions): Promise<PgBouncer> {
  if (!existsSync(PGBOUNCER_BINARY)) {
    throw new Error(`pgbouncer is not installed at ${PGBOUNCER_BINARY}: apt-get install -y pgbouncer (or set PGBOUNCER_PATH)`);
  }
  const upstream = new URL(options.upstream);
  if (!/^postgres(ql)?:$/.test(upstream.protocol)) throw new Error('the upstream must be a postgres:// or postgresql:// URL');
  const port = options.port ?? (await freePort());
  const dir = mkdtempSync(path.join(os.tmpdir(), 'waypost-pgbouncer-'));
  const asUser = process.getuid?.() === 0 ? postgresUser() : undefined;
  if (process.getuid?.() === 0 && !asUser) throw new Error('pgbouncer refuses to run as root and there is no postgres user to run it as');
  const user = decodeURIComponent(upstream.username || 'postgres');
  const ini = path.join(dir, 'pgbouncer.ini');
  writeFileSync(ini, iniFor({ dir, port, upstream, poolMode: options.poolMode ?? 'transaction', defaultPoolSize: options.defaultPoolSize ?? 20, maxClientConn: options.maxClientConn ?? 1000 }), { mode: 0o600 });
  // trust: pgbouncer asks clients for no password, but a user must be listed to be let in.
  writeFileSync(path.join(dir, 'userlist.txt'), `"${user.replace(/"/g, '""')}" ""\n`, { mode: 0o600 });
  if (asUser) {
    for (const f of [dir, ini, path.join(dir, 'userlist.txt')]) chownSync(f, asUser.uid, asUser.gid);
  }
  chmodSync(dir, 0o700);

  let out = '';
  const child: ChildProcess = spawn(PGBOUNCER_BINARY, [ini], {
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(asUser ? { uid: asUser.uid, gid: asUser.gid } : {}),
  });
  const collect = (chunk: Buffer) => {
    const text = chunk.toString();
    out = (out + text).slice(-50_000);
    if (options.log) for (const line of text.split('\n')) if (line.trim()) options.log(line);
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let gone = false;
  void exited.then(() => (gone = true));

  // A process that exits without stop() (process.exit in a signal handler) takes it along.
  const atExit = () => {
    if (!gone) child.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  };
  process.on('exit', atExit);
  const stop = async () => {
    process.removeListener('exit', atExit);
    if (!gone) {
      // SIGTERM: pgbouncer's immediate shutdown (SIGINT would wait for every client to leave).
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(killer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const url = (database: string) => {
    const u = new URL(withDatabase(options.upstream, database));
    u.hostname = '127.0.0.1';
    u.port = String(port);
    u.search = '';
    return u.toString();
  };

  // Ready when a query reaches the upstream's own database through it.
  const database = decodeURIComponent(upstream.pathname.replace(/^\//, '')) || 'postgres';
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let lastError: unknown;
  for (;;) {
    if (gone) {
      await stop();
      throw new Error(`pgbouncer exited at start:\n${out}`);
    }
    const client = new pg.Client({ connectionString: url(database), connectionTimeoutMillis: 2_000 });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.query('-- pgbouncer.ready\nSELECT 1');
      await client.end();
      break;
    } catch (error) {
      lastError = error;
      await client.end().catch(() => {});
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`pgbouncer on port ${port} did not pass a query to ${upstream.host} within ${READY_TIMEOUT_MS} ms (${String(lastError)}):\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { port, pid: child.pid!, url, output: () => out, stop };
}

function parseArgs(argv: string[]): { options: Omit<PgBouncerOptions, 'upstream'> & { upstream?: string }; command: string[] } {
  const options: Omit<PgBouncerOptions, 'upstream'> & { upstream?: string } = {};
  const dash = argv.indexOf('--');
  const own = dash === -1 ? argv : argv.slice(0, dash);
  const command = dash === -1 ? [] : argv.slice(dash + 1);
  for (let i = 0; i < own.length; i++) {
    const a = own[i]!;
    const whole = (min: number) => {
      const v = Number(own[++i]);
      if (!Number.isInteger(v) || v < min) throw new Error(`${a} takes a whole number of at least ${min}`);
      return v;
    };
    if (a === '--upstream' && own[i + 1]) options.upstream = own[++i]!;
    else if (a === '--port') options.port = whole(1);
    else if (a === '--pool-size') options.defaultPoolSize = whole(1);
    else if (a === '--max-client-conn') options.maxClientConn = whole(1);
    else throw new Error(`unknown option ${a} (use --upstream URL, --port N, --pool-size N, --max-client-conn N, then -- COMMAND ARGS...)`);
  }
  return { options, command };
}

async function main(): Promise<number> {
  const { options, command } = parseArgs(process.argv.slice(2));
  // The upstream: --upstream, or the direct URL a pooled setup already names, or DATABASE_URL.
  const upstream = options.upstream ?? process.env.DIRECT_DATABASE_URL ?? process.env.DATABASE_URL;
  if (!upstream) throw new Error('no upstream: pass --upstream postgresql://user@host:5432/db, or set DATABASE_URL');
  // Its warnings and errors; not the LOG lines of every pool it opens.
  const log = (line: string) => {
    if (!/ LOG /.test(line)) process.stderr.write(`[pgbouncer] ${line}\n`);
  };
  const bouncer = await startPgBouncer({ ...options, upstream, log });
  const database = decodeURIComponent(new URL(upstream).pathname.replace(/^\//, '')) || 'postgres';
  const pooled = bouncer.url(database);
  process.stderr.write(`pgbouncer (transaction mode) on 127.0.0.1:${bouncer.port} in front of ${new URL(upstream).host}: ${pooled.replace(/:[^:@/]*@/, ':***@')}\n`);
  let stopping: Promise<void> | null = null;
  const stop = () => (stopping ??= bouncer.stop());
  if (command.length === 0) {
    await new Promise<void>((resolve) => {
      for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => resolve());
    });
    await stop();
    return 0;
  }
  const child = spawn(command[0]!, command.slice(1), {
    stdio: 'inherit',
    env: { ...process.env, DATABASE_URL: pooled, DIRECT_DATABASE_URL: upstream, DATABASE_POOL_MODE: 'transaction' },
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
  const code = await new Promise<number>((resolve) => {
    child.once('error', (error) => {
      process.stderr.write(`could not run ${command[0]}: ${error.message}\n`);
      resolve(127);
    });
    child.once('exit', (c, signal) => resolve(c ?? (signal ? 128 + (os.constants.signals[signal] ?? 0) : 1)));
  });
  await stop();
  return code;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(1);
    },
  );
}
