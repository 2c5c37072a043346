import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import { ensureBuild } from '../scripts/build';
import { createApiKey } from '../server/auth/admin';
import type { EnrollFigure } from './enroll';
import { progress, ratio, ROOT, round, sleep, type BenchContext } from './support';
import { holdBackAll, newWorkflow, stepsWorkflow } from './workload';
import { freePort } from '../server/embedded-postgres';

// Enrollments through the real web server (scripts/web.ts on the production build) with
// an API key, POST /api/v1/enrollments with a new email each, under autocannon with 16
// connections; the ratio is to the engine's enroll() with 8 callers in the same run.

export interface HttpResult {
  connections: number;
  seconds: number;
  requests: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
  engineDirect: number | null;
  ratioToEngine: number | null;
}


export async function httpPhase(ctx: BenchContext, projectId: string, enroll: unknown): Promise<HttpResult> {
  ensureBuild((line) => progress('http', line));
  const workflowId = await newWorkflow(ctx.db, projectId, stepsWorkflow('http'));
  const key = await createApiKey(ctx.db, { projectId, name: 'bench', role: 'MARKETER', actor: 'system' });
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  let log = '';
  const server = spawn(process.execPath, ['--import', 'tsx', 'scripts/web.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      NODE_ENV: 'production',
      DATABASE_URL: ctx.url,
      PORT: String(port),
      HOSTNAME: '127.0.0.1',
      TRUSTED_PROXIES: '',
      AUTH_SECRET: randomBytes(32).toString('base64url'),
      // Rate limits off: this measures the server, not its limiter.
      RATE_LIMIT_PER_KEY: '0',
      RATE_LIMIT_PER_SESSION: '0',
      RATE_LIMIT_PER_ADDRESS: '0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  server.stdout.on('data', (c: Buffer) => (log = (log + c.toString()).slice(-20_000)));
  server.stderr.on('data', (c: Buffer) => (log = (log + c.toString()).slice(-20_000)));
  const exited = new Promise((r) => server.once('exit', r));
  try {
    const headers = { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' };
    const deadline = Date.now() + 120_000;
    for (let n = 0; ; n++) {
      if (server.exitCode !== null) throw new Error(`the web server exited:\n${log}`);
      try {
        const r = await fetch(`${base}/api/v1/enrollments`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ workflowId, email: `warm-${n}@http.bench` }),
          signal: AbortSignal.timeout(10_000),
        });
        if (r.status !== 200) throw new Error(`warm-up enrollment answered ${r.status}: ${await r.text()}`);
        if (n >= 20) break;
      } catch (error) {
        if (error instanceof Error && error.message.startsWith('warm-up')) throw error;
        if (Date.now() > deadline) throw new Error(`the web server did not answer in 120 s:\n${log}`);
        await sleep(250);
      }
    }
    const seconds = ctx.options.quick ? 10 : 20;
    const result = await autocannon({
      url: `${base}/api/v1/enrollments`,
      method: 'POST',
      connections: 16,
      duration: seconds,
      headers,
      body: JSON.stringify({ workflowId, email: 'load-[<id>]@http.bench' }),
      idReplacement: true,
      // A starved server answers slowly; a request cut off at the end of the run is not counted.
      timeout: 60,
    });
    if (result.requests.total === 0) throw new Error(`no HTTP enrollment completed in ${seconds} s (${result.timeouts} timed out)\n${log.slice(-3000)}`);
    const engineDirect = (enroll as EnrollFigure[] | undefined)?.find((e) => e.callers === 8)?.engine ?? null;
    const perSecond = round(result.requests.average);
    const figure: HttpResult = {
      connections: 16,
      seconds,
      requests: result.requests.total,
      perSecond,
      p50Ms: result.latency.p50,
      p99Ms: result.latency.p99,
      non2xx: result.non2xx,
      errors: result.errors,
      engineDirect,
      ratioToEngine: engineDirect ? ratio(perSecond, engineDirect) : null,
    };
    progress('http', `${perSecond} enrollments/s over HTTP, p50 ${figure.p50Ms} ms, p99 ${figure.p99Ms} ms, ${figure.non2xx} non-2xx, ${figure.errors} errors (x${figure.ratioToEngine} of engine-direct)`);
    if (figure.non2xx > 0 || figure.errors > 0) throw new Error(`HTTP enrollments failed: ${figure.non2xx} non-2xx, ${figure.errors} errors\n${log.slice(-3000)}`);
    return figure;
  } finally {
    server.kill('SIGTERM');
    await Promise.race([exited, sleep(10_000)]);
    if (server.exitCode === null) server.kill('SIGKILL');
    await holdBackAll(ctx.db);
  }
}
