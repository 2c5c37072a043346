import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STUCK_REASONS } from '../../server/common/stuck-reasons';
import { freePort } from '../../server/embedded-postgres';
import { newApiKey } from '../support/auth';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createProject, waitWorkflow, workflowFrom } from '../support/fixtures';
import { startWorkerProcess, waitFor, type WorkerProcess } from '../support/processes';
import { parsePrometheus, total, type Sample } from '../support/prometheus';
import { startWebServer, type WebServer } from '../support/web-server';

// /metrics of the real processes (docs/deploy.md, "Metrics and logs"): the web server
// (scripts/web.ts) and a worker (scripts/worker.ts) with its own listener, on one test
// database. Work goes in through the REST API as a client sends it; every counter is read
// before and after, summed over both processes as Prometheus would, and must move by
// exactly the work done. The exposition must parse strictly; the token is required; with
// no METRICS_TOKEN the web server answers 404.

const TOKEN = randomBytes(24).toString('hex');
const SHARED = { METRICS_TOKEN: TOKEN, STUCK_GRACE_SECONDS: '1' };

let t: TestDatabase;
let web: WebServer;
let bare: WebServer;
let worker: WorkerProcess;
let workerMetrics = '';
let projectId = '';
let key = '';
let mailDir = '';
let mailControl = '';

beforeAll(async () => {
  t = await freshDatabase();
  projectId = (await createProject(t.db)).id;
  key = (await newApiKey(t.db, projectId, 'MARKETER')).secret;
  mailDir = mkdtempSync(path.join(tmpdir(), 'waypost-metrics-'));
  mailControl = path.join(mailDir, 'control');
  writeFileSync(mailControl, 'ok');
  web = await startWebServer(t.url, SHARED);
  bare = await startWebServer(t.url, {});
  const port = await freePort();
  workerMetrics = `http://127.0.0.1:${port}/metrics`;
  worker = await startWorkerProcess(t.url, { concurrency: 4, env: { ...SHARED, WORKER_METRICS_PORT: String(port), WAYPOST_FAULT_MAIL_CONTROL: mailControl } });
}, 900_000);

afterAll(async () => {
  worker?.kill();
  await worker?.exited;
  await web?.stop();
  await bare?.stop();
  await t?.drop();
  if (mailDir) rmSync(mailDir, { recursive: true, force: true });
});

async function scrape(url: string): Promise<Sample[]> {
  const response = await fetch(url, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(response.status, await response.clone().text()).toBe(200);
  expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
  return parsePrometheus(await response.text());
}

/** Both processes' samples, as Prometheus would add them up. */
async function scrapeBoth(): Promise<{ web: Sample[]; worker: Sample[]; all: Sample[] }> {
  const [w, k] = await Promise.all([scrape(`${web.base}/metrics`), scrape(workerMetrics)]);
  return { web: w, worker: k, all: [...w, ...k] };
}

async function rest(method: string, route: string, body?: unknown): Promise<Response> {
  const response = await fetch(`${web.base}/api/v1${route}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  expect(response.status, await response.clone().text()).toBeLessThan(300);
  return response;
}

async function enroll(workflowId: string, emails: string[]): Promise<string[]> {
  const ids: string[] = [];
  for (const email of emails) ids.push(((await (await rest('POST', '/enrollments', { workflowId, email })).json()) as { executionId: string }).executionId);
  return ids;
}

async function statuses(ids: string[]): Promise<string[]> {
  const rows = await t.query<{ status: string }>(`SELECT status::text FROM "WorkflowExecution" WHERE id = ANY($1::uuid[])`, [ids]);
  return rows.map((r) => r.status);
}

const untilAll = (ids: string[], status: string) =>
  waitFor(`${ids.length} executions ${status}`, async () => (await statuses(ids)).filter((s) => s === status).length === ids.length);

const untilMessages = (ids: string[], status: string, n: number) =>
  waitFor(`${n} messages ${status}`, async () => {
    const [row] = await t.query<{ n: number }>(`SELECT count(*)::int AS n FROM "Message" WHERE "executionId" = ANY($1::uuid[]) AND status = $2::"MessageStatus"`, [ids, status]);
    return row!.n === n;
  });

const emails = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${i}-${randomBytes(3).toString('hex')}@example.com`);

describe('/metrics', () => {
  it('N enrollments through a one-step workflow (its trigger, then an exit): steps claimed and completed by type move by N, the REST route by N', async () => {
    const wf = await workflowFrom(t.db, projectId, {
      name: `one-step-${randomBytes(3).toString('hex')}`,
      trigger: 'MANUAL',
      allowReentry: false,
      steps: [
        { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
        { key: 'done', type: 'EXIT', name: 'Done', config: {} },
      ],
      transitions: [{ from: 'start', to: 'done', branch: null }],
    });
    const N = 6;
    const before = await scrapeBoth();
    const ids = await enroll(wf.id, emails('one', N));
    await untilAll(ids, 'EXITED');
    const after = await scrapeBoth();
    const delta = (name: string, labels: Record<string, string>, of: 'all' | 'web' | 'worker' = 'all') => total(after[of], name, labels) - total(before[of], name, labels);
    expect(delta('waypost_steps_claimed_total', { type: 'TRIGGER' })).toBe(N);
    expect(delta('waypost_steps_completed_total', { type: 'TRIGGER', outcome: 'advanced' })).toBe(N);
    expect(delta('waypost_steps_claimed_total', { type: 'EXIT' })).toBe(N);
    expect(delta('waypost_steps_completed_total', { type: 'EXIT', outcome: 'exited' })).toBe(N);
    expect(delta('waypost_steps_completed_total', {})).toBe(2 * N);
    // The web process only enrolls; the worker ran every step.
    expect(delta('waypost_steps_claimed_total', { type: 'TRIGGER' }, 'worker')).toBe(N);
    expect(delta('waypost_http_request_duration_seconds_count', { route: '/api/v1/enrollments', method: 'POST', status_class: '2xx' }, 'web')).toBe(N);
  });

  it('waits by outcome, events accepted, emails queued and sent, each by exactly the work done', async () => {
    const K = 3;
    const M = 2;
    const byEvent = await workflowFrom(t.db, projectId, waitWorkflow({}, 3600));
    const byTimeout = await workflowFrom(t.db, projectId, waitWorkflow({}, 0));
    const eventContacts = emails('event', K);
    const before = await scrapeBoth();
    const waiting = await enroll(byEvent.id, eventContacts);
    const timedOut = await enroll(byTimeout.id, emails('timeout', M));
    await untilAll(waiting, 'WAITING');
    await untilAll(timedOut, 'COMPLETED');
    for (const email of eventContacts) await rest('POST', '/events', { name: 'purchase', email });
    await untilAll(waiting, 'COMPLETED');
    const all = [...waiting, ...timedOut];
    await untilMessages(all, 'SENT', 2 * (K + M));
    // The sender records its batch a moment after the transport answered: read until it has.
    const after = await waitFor('the sender to count every email', async () => {
      const now = await scrapeBoth();
      return total(now.all, 'waypost_messages_total', { outcome: 'sent' }) - total(before.all, 'waypost_messages_total', { outcome: 'sent' }) >= 2 * (K + M) ? now : null;
    });
    const delta = (name: string, labels: Record<string, string> = {}) => total(after.all, name, labels) - total(before.all, name, labels);
    expect(delta('waypost_waits_resolved_total', { outcome: 'event' })).toBe(K);
    expect(delta('waypost_waits_resolved_total', { outcome: 'timeout' })).toBe(M);
    expect(delta('waypost_waits_resolved_total', { outcome: 'operator' })).toBe(0);
    expect(delta('waypost_events_accepted_total')).toBe(K);
    expect(delta('waypost_events_processed_total')).toBe(K);
    expect(delta('waypost_events_dead_total')).toBe(0);
    expect(delta('waypost_messages_total', { outcome: 'queued' })).toBe(2 * (K + M));
    expect(delta('waypost_messages_total', { outcome: 'sent' })).toBe(2 * (K + M));
    expect(delta('waypost_messages_total', { outcome: 'failed' })).toBe(0);
    expect(delta('waypost_steps_claimed_total', { type: 'WAIT_FOR_EVENT' })).toBe(K + M);
    expect(delta('waypost_steps_completed_total', { type: 'WAIT_FOR_EVENT', outcome: 'parked' })).toBe(K + M);
    expect(delta('waypost_steps_completed_total', { type: 'SEND_EMAIL', outcome: 'advanced' })).toBe(2 * (K + M));
  });

  it('failed sends: counted as failed, and the web process reports them as MESSAGE_FAILED stuck items from the console figures', async () => {
    const wf = await workflowFrom(t.db, projectId, waitWorkflow({}, 0));
    const F = 2;
    const before = await scrapeBoth();
    writeFileSync(mailControl, 'fail');
    try {
      const ids = await enroll(wf.id, emails('failing', F));
      await untilMessages(ids, 'FAILED', 2 * F);
    } finally {
      writeFileSync(mailControl, 'ok');
    }
    const failed = await t.query<{ n: number }>(`SELECT count(*)::int AS n FROM "Message" WHERE status = 'FAILED'`);
    // Figures are summed at most every 15 s: wait for a sum made after the failures.
    const after = await waitFor('the stuck figures to show the failed emails', async () => {
      const now = await scrapeBoth();
      return total(now.web, 'waypost_stuck_items', { reason: 'MESSAGE_FAILED' }) === failed[0]!.n ? now : null;
    }, 60_000, 500);
    expect(total(after.all, 'waypost_messages_total', { outcome: 'failed' }) - total(before.all, 'waypost_messages_total', { outcome: 'failed' })).toBe(2 * F);
    // Every reason is reported (zero included) by the web process, none by the worker.
    expect(after.web.filter((s) => s.name === 'waypost_stuck_items').map((s) => s.labels.reason).sort()).toEqual([...STUCK_REASONS].sort());
    expect(after.worker.some((s) => s.name.startsWith('waypost_stuck_'))).toBe(false);
    expect(total(after.web, 'waypost_stuck_figures_age_seconds')).toBeLessThan(60);
  });

  it("reports each process's pools, prom-client's process metrics, and the histogram by route template, never a raw path", async () => {
    const execution = (await t.query<{ id: string }>(`SELECT id FROM "WorkflowExecution" LIMIT 1`))[0]!.id;
    await rest('GET', `/executions/${execution}`);
    // Each answer read to its end: a request is measured once its answer is complete.
    for (const url of ['/api/trpc/workflows.list', '/api/trpc/no.such.procedure', `/api/v1/no/such/path/${execution}`, '/sign-in']) {
      await (await fetch(`${web.base}${url}`, { headers: { authorization: `Bearer ${key}` } })).text();
    }
    const { web: w, worker: k } = await scrapeBoth();
    const routes = new Set(w.filter((s) => s.name === 'waypost_http_request_duration_seconds_count').map((s) => s.labels.route));
    for (const route of ['/api/v1/executions/{id}', 'trpc:workflows.list', 'trpc:unknown', '/api/v1/*', 'next', '/metrics']) expect(routes).toContain(route);
    expect([...routes].filter((r) => r!.includes(execution) || r!.includes('no.such'))).toEqual([]);
    expect(w.find((s) => s.name === 'waypost_http_request_duration_seconds_bucket')?.labels).toMatchObject({ le: expect.any(String), method: expect.any(String), status_class: expect.stringMatching(/^\dxx$/) });

    expect(total(w, 'waypost_db_pool_max_connections', { pool: 'waypost-web' })).toBe(10);
    expect(total(w, 'waypost_db_pool_connections', { pool: 'waypost-web' })).toBeGreaterThan(0);
    expect(total(k, 'waypost_db_pool_max_connections', { pool: 'waypost-worker' })).toBe(4 + 2);
    expect(total(k, 'waypost_db_pool_max_connections', { pool: 'waypost-webhooks' })).toBe(2);
    for (const samples of [w, k]) {
      for (const name of ['waypost_db_pool_idle_connections', 'waypost_db_pool_waiting_clients', 'process_cpu_user_seconds_total', 'nodejs_eventloop_lag_seconds', 'process_resident_memory_bytes']) {
        expect(samples.some((s) => s.name === name), name).toBe(true);
      }
    }
    // Labels are fixed sets: no email, no id anywhere in either exposition.
    for (const s of [...w, ...k]) for (const value of Object.values(s.labels)) expect(value).not.toMatch(/@|[0-9a-f]{8}-[0-9a-f]{4}-/);
  });

  it('asks for the token: 401 problem details without it or with another, on both listeners', async () => {
    for (const url of [`${web.base}/metrics`, workerMetrics]) {
      for (const headers of [{}, { authorization: `Bearer ${TOKEN}x` }, { authorization: `Bearer ${TOKEN.slice(1)}` }, { authorization: TOKEN }, { authorization: `Basic ${TOKEN}` }] as Record<string, string>[]) {
        const response = await fetch(url, { headers });
        expect(response.status, `${url} ${JSON.stringify(headers)}`).toBe(401);
        expect(response.headers.get('content-type')).toBe('application/problem+json');
        expect(response.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
        expect(await response.json()).toMatchObject({ status: 401, code: 'UNAUTHORIZED', type: '/problems/unauthorized' });
      }
      const post = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } });
      expect(post.status).toBe(405);
      expect(post.headers.get('allow')).toBe('GET, HEAD');
    }
    const elsewhere = await fetch(workerMetrics.replace('/metrics', '/'), { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(elsewhere.status).toBe(404);
  });

  it('is not there without METRICS_TOKEN: 404, whatever the token sent', async () => {
    for (const headers of [{}, { authorization: `Bearer ${TOKEN}` }] as Record<string, string>[]) {
      const response = await fetch(`${bare.base}/metrics`, { headers });
      expect(response.status).toBe(404);
      expect(await response.text()).not.toContain('waypost_');
    }
  });
});
