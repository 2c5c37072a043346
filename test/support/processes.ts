import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { withDatabase } from '../../server/embedded-postgres';

// Worker processes for the race suite and drills: the real `scripts/worker.ts`
// entry point, as `npm run worker` starts it, in its own OS process.

const ROOT = path.resolve(import.meta.dirname, '../..');

export interface WorkerProcess {
  child: ChildProcess;
  pid: number;
  /** Everything it printed, for diagnosing a failure. */
  output(): string;
  /** What it wrote to stdout alone, from its start. */
  stdout(): string;
  exited: Promise<number | null>;
  kill(signal?: NodeJS.Signals): void;
}

/**
 * DIRECT_DATABASE_URL for a process on `databaseUrl`, when the run goes through a pooler
 * (global-setup.ts): the same database on the server itself, where the worker LISTENs.
 */
export function directDatabaseEnv(databaseUrl: string): Record<string, string> {
  const direct = process.env.DIRECT_DATABASE_URL;
  if (!direct) return {};
  return { DIRECT_DATABASE_URL: withDatabase(direct, decodeURIComponent(new URL(databaseUrl).pathname.slice(1))) };
}

export async function startWorkerProcess(
  databaseUrl: string,
  opts: { concurrency?: number; env?: Record<string, string> } = {},
): Promise<WorkerProcess> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'scripts/worker.ts', '--concurrency', String(opts.concurrency ?? 8)],
    {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: databaseUrl, ...directDatabaseEnv(databaseUrl), LOG_LEVEL: 'info', ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  let ready!: () => void;
  const started = new Promise<void>((resolve) => (ready = resolve));
  const onData = (chunk: Buffer) => {
    out += chunk.toString();
    if (out.length > 200_000) out = out.slice(-100_000);
    if (out.includes('worker started')) ready();
  };
  let stdout = '';
  child.stdout!.on('data', onData);
  child.stdout!.on('data', (chunk: Buffer) => {
    if (stdout.length < 2_000_000) stdout += chunk.toString();
  });
  child.stderr!.on('data', onData);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await Promise.race([
    started,
    exited.then((code) => {
      throw new Error(`worker exited with ${code} before starting:\n${out}`);
    }),
    new Promise((_, reject) => setTimeout(() => reject(new Error(`worker did not start in 30 s:\n${out}`)), 30_000)),
  ]);
  return {
    child,
    pid: child.pid!,
    output: () => out,
    stdout: () => stdout,
    exited,
    kill: (signal = 'SIGTERM') => child.kill(signal),
  };
}

export async function waitFor<T>(
  what: string,
  check: () => Promise<T | null | undefined | false>,
  timeoutMs = 60_000,
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Whether a new TCP connection to the port on 127.0.0.1 is refused (a server that stopped listening). */
export function connectionRefused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
  });
}
