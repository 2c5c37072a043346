import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { ensureBuild } from '../../scripts/build';
import { freePort } from '../../server/embedded-postgres';
import { directDatabaseEnv } from './processes';

// The product's own web server (scripts/web.ts, as `npm start` runs it) on a test
// database, for tests that must meet the API where clients meet it: over HTTP, through the
// request proxy, the route handlers and Node's own HTTP parser. The production build is
// reused when it is newer than every source, and made otherwise.

const ROOT = path.resolve(import.meta.dirname, '../..');

export interface WebServer {
  /** http://127.0.0.1:<port> */
  base: string;
  port: number;
  child: ChildProcess;
  /** Everything it printed, for diagnosing a failure. */
  log(): string;
  /** What it wrote to stdout alone, from its start. */
  stdout(): string;
  stop(): Promise<void>;
}

/**
 * Builds if needed, then starts scripts/web.ts on `databaseUrl` (trusting no proxy) and
 * waits until it serves /api/v1/openapi.json. `env` adds to or overrides the server's
 * environment.
 */
export async function startWebServer(databaseUrl: string, env: Record<string, string> = {}): Promise<WebServer> {
  ensureBuild();
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'scripts', 'web.ts')], {
    cwd: ROOT,
    env: {
      ...process.env,
      NODE_ENV: 'production',
      DATABASE_URL: databaseUrl,
      ...directDatabaseEnv(databaseUrl),
      PORT: String(port),
      HOSTNAME: '127.0.0.1',
      TRUSTED_PROXIES: '',
      AUTH_SECRET: randomBytes(32).toString('base64url'),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
    if (output.length > 400_000) output = output.slice(-200_000);
  };
  let stdout = '';
  child.stdout!.on('data', collect);
  child.stdout!.on('data', (chunk: Buffer) => {
    if (stdout.length < 2_000_000) stdout += chunk.toString();
  });
  child.stderr!.on('data', collect);
  const server: WebServer = {
    base,
    port,
    child,
    log: () => output,
    stdout: () => stdout,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
  await untilServing(server, `${base}/api/v1/openapi.json`, 90_000);
  return server;
}

async function untilServing(server: WebServer, url: string, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (server.child.exitCode !== null) throw new Error(`the web server exited:\n${server.log()}`);
    try {
      if ((await fetch(url, { signal: AbortSignal.timeout(5_000) })).status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`the web server did not answer ${url} within ${ms} ms:\n${server.log()}`);
}
