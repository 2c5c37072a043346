import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newApiKey } from '../support/auth';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createProject } from '../support/fixtures';
import { startWorkerProcess, waitFor, type WorkerProcess } from '../support/processes';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy';
import { startWebServer, type WebServer } from '../support/web-server';

// LOG_FORMAT=json (server/log.ts): every line the real web server (scripts/web.ts, with
// Next.js inside) and a real worker (scripts/worker.ts) write to stdout, from start to
// exit, is one JSON object with level, time, msg, the process's role and pid. Every
// request has an id: the caller's X-Request-Id when it is sane, else a new one, echoed in
// the answer and carried by each line logged while the request is handled, however deep
// (here: the API meeting a database it cannot reach, through a proxy the test cuts).

let t: TestDatabase;
let proxy: TcpProxy;
let web: WebServer;
let worker: WorkerProcess;
let key = '';

beforeAll(async () => {
  t = await freshDatabase();
  const projectId = (await createProject(t.db)).id;
  key = (await newApiKey(t.db, projectId, 'VIEWER')).secret;
  const target = new URL(t.url);
  proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  web = await startWebServer(proxy.url(t.url), { LOG_FORMAT: 'json', LOG_LEVEL: 'debug', DATABASE_CONNECT_TIMEOUT_SECONDS: '1' });
  worker = await startWorkerProcess(t.url, { env: { LOG_FORMAT: 'json' } });
}, 900_000);

afterAll(async () => {
  worker?.kill();
  await worker?.exited;
  await web?.stop();
  await proxy?.close();
  await t?.drop();
});

interface Line {
  level: string;
  time: string;
  msg: string;
  role: string;
  pid: number;
  requestId?: string;
  [field: string]: unknown;
}

/** Every stdout line as JSON, failing on the first that is not one object with the five fields. */
function lines(stdout: string, role: string): Line[] {
  expect(stdout.endsWith('\n'), 'output ends with a whole line').toBe(true);
  return stdout.slice(0, -1).split('\n').map((text) => {
    let line: Line;
    try {
      line = JSON.parse(text) as Line;
    } catch {
      throw new Error(`not a JSON line: ${JSON.stringify(text)}`);
    }
    expect(line, text).toMatchObject({ level: expect.stringMatching(/^(debug|info|warn|error)$/), time: expect.any(String), msg: expect.any(String), role, pid: expect.any(Number) });
    expect(Number.isNaN(Date.parse(line.time)), text).toBe(false);
    return line;
  });
}

const get = (path: string, requestId?: string) =>
  fetch(`${web.base}${path}`, { headers: { authorization: `Bearer ${key}`, ...(requestId === undefined ? {} : { 'x-request-id': requestId }) } });

describe('LOG_FORMAT=json and request ids', () => {
  it("echoes a sane X-Request-Id, on the API and on Next.js's pages, and logs the request under it", async () => {
    for (const [path, id] of [['/api/v1/workflows', 'req-api.1'], ['/sign-in', 'lb:7f3a/2+x=y'], ['/api/trpc/workflows.list', 'trpc_call-42']] as const) {
      const response = await get(path, id);
      expect(response.status, path).toBeLessThan(500);
      expect(response.headers.get('x-request-id'), path).toBe(id);
      await waitFor(`the line of ${id}`, async () => lines(web.stdout(), 'web').some((l) => l.requestId === id && l.msg === 'request answered'));
    }
  });

  it('gives a request without a sane id a new one', async () => {
    for (const given of [undefined, 'two words', 'x'.repeat(129), 'quote"d', 'semi;colon', '']) {
      const response = await get('/api/v1/workflows', given);
      const id = response.headers.get('x-request-id');
      expect(id, String(given)).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      expect(id).not.toBe(given);
    }
  });

  it('carries the id on a line logged deep inside the request: the database unreachable', async () => {
    await proxy.cut('refuse');
    try {
      const response = await get('/api/v1/workflows', 'req-outage-1');
      expect(response.status).toBe(503);
      expect(response.headers.get('x-request-id')).toBe('req-outage-1');
      const outage = await waitFor('the outage line', async () => lines(web.stdout(), 'web').find((l) => l.msg.includes('database unreachable, answering 503')));
      expect(outage).toMatchObject({ level: 'warn', requestId: 'req-outage-1', role: 'web' });
    } finally {
      await proxy.restore();
    }
  });

  it('writes nothing but JSON lines on stdout, web server and worker alike, from start to exit', async () => {
    await web.stop();
    worker.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
    const webLines = lines(web.stdout(), 'web');
    expect(webLines.map((l) => l.msg)).toEqual(expect.arrayContaining([expect.stringMatching(/^web server listening on \d+/), expect.stringMatching(/^SIGTERM: draining/)]));
    expect(new Set(webLines.map((l) => l.pid)).size).toBe(1);
    const workerLines = lines(worker.stdout(), 'worker');
    expect(workerLines.map((l) => l.msg)).toEqual(expect.arrayContaining(['worker started', 'SIGTERM: draining', 'stopped']));
    expect(workerLines.every((l) => typeof l.worker === 'string' && l.worker.endsWith(`:${l.pid}`))).toBe(true);
  });
});
