import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import { createTRPCClient, httpBatchLink, TRPCClientError } from '@trpc/client';
import superjson from 'superjson';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedDemo } from '../../prisma/seed';
import { generateApiKey } from '../../server/auth/api-keys';
import type { AppRouter } from '../../server/trpc/root';
import { freshDatabase, type TestDatabase } from '../support/database';

// The API as integrations meet it: a real `next start` server (the production build) on a
// fresh database with the demo seed, called over HTTP with an API key, both through tRPC
// (superjson, batching) and through the plain JSON endpoints of /api/v1.

const ROOT = path.resolve(import.meta.dirname, '../..');
const NEXT_CLI = createRequire(import.meta.url).resolve('next/dist/bin/next');
/** What a build depends on: if any is newer than .next/BUILD_ID, the build is stale. */
const BUILD_INPUTS = ['app', 'server', 'proxy.ts', 'next.config.js', 'package-lock.json', 'tsconfig.json', 'postcss.config.mjs'];

function newestMtime(entry: string): number {
  if (!existsSync(entry)) return 0;
  const stat = statSync(entry);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const child of readdirSync(entry)) newest = Math.max(newest, newestMtime(path.join(entry, child)));
  return newest;
}

/** Reuse the existing production build when it is newer than every source; build otherwise. */
function ensureBuild(): void {
  const buildId = path.join(ROOT, '.next', 'BUILD_ID');
  const sources = Math.max(...BUILD_INPUTS.map((p) => newestMtime(path.join(ROOT, p))));
  if (existsSync(buildId) && statSync(buildId).mtimeMs > sources) return;
  console.log('http.test: .next is missing or older than the sources; running next build');
  const build = spawnSync(process.execPath, [NEXT_CLI, 'build'], { cwd: ROOT, stdio: 'inherit', env: { ...process.env, NODE_ENV: 'production' } });
  if (build.status !== 0) throw new Error(`next build failed (exit ${build.status ?? build.signal})`);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

let t: TestDatabase;
let server: ChildProcess | undefined;
let serverLog = '';
let base = '';
let apiKey = '';
let welcomeId = '';

async function untilServing(url: string, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (server?.exitCode !== null && server?.exitCode !== undefined) throw new Error(`next start exited:\n${serverLog}`);
    try {
      if ((await fetch(url, { signal: AbortSignal.timeout(5_000) })).status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`next start did not answer ${url} within ${ms} ms:\n${serverLog}`);
}

beforeAll(async () => {
  ensureBuild();
  t = await freshDatabase();
  await seedDemo(t.db);
  const demo = await t.db.project.findUniqueOrThrow({ where: { name: 'demo' } });
  welcomeId = (await t.db.workflow.findFirstOrThrow({ where: { projectId: demo.id, name: 'Welcome series' } })).id;
  // A key as `npm run cli -- create-api-key` makes one: only the prefix and hash are stored.
  const key = generateApiKey();
  await t.db.apiKey.create({ data: { projectId: demo.id, name: 'http test backend', role: 'MARKETER', prefix: key.prefix, hashedSecret: key.hashedSecret } });
  apiKey = key.secret;

  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  server = spawn(process.execPath, [NEXT_CLI, 'start', '-p', String(port), '-H', '127.0.0.1'], {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'production', DATABASE_URL: t.url, PORT: String(port), AUTH_SECRET: randomBytes(32).toString('base64url') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  server.stdout!.on('data', (chunk: Buffer) => (serverLog += chunk.toString()));
  server.stderr!.on('data', (chunk: Buffer) => (serverLog += chunk.toString()));
  await untilServing(`${base}/api/v1/openapi.json`, 90_000);
}, 900_000);

afterAll(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((r) => server!.once('exit', r));
    server.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
    if (server.exitCode === null) server.kill('SIGKILL');
  }
  await t?.drop();
});

function trpcClient(key: string | null, onFetch?: () => void) {
  return createTRPCClient<AppRouter>({
    links: [
      httpBatchLink({
        url: `${base}/api/trpc`,
        transformer: superjson,
        headers: () => (key ? { authorization: `Bearer ${key}` } : {}),
        fetch: (url, init) => {
          onFetch?.();
          return fetch(url, init);
        },
      }),
    ],
  });
}

async function clientError(promise: Promise<unknown>): Promise<TRPCClientError<AppRouter>> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(TRPCClientError);
    return error as TRPCClientError<AppRouter>;
  }
  throw new Error('expected the call to fail');
}

function postJson(pathname: string, body: unknown, key: string | null = apiKey) {
  return fetch(`${base}${pathname}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

describe('tRPC over HTTP with an API key', () => {
  it('enrolls, and a duplicate enrollment is CONFLICT with data.conflict.reason ACTIVE_EXECUTION', async () => {
    const client = trpcClient(apiKey);
    const email = `http-${randomUUID().slice(0, 8)}@example.com`;
    const { executionId } = await client.enrollments.enroll.mutate({ workflowId: welcomeId, email, context: { source: 'http test' } });
    const execution = await t.db.workflowExecution.findUniqueOrThrow({ where: { id: executionId }, include: { contact: true } });
    expect(execution.contact.email).toBe(email);
    const audit = await t.db.auditEntry.findFirstOrThrow({ where: { targetId: executionId } });
    expect(audit.actor).toMatch(/^apikey:/);

    const duplicate = await clientError(client.enrollments.enroll.mutate({ workflowId: welcomeId, email }));
    expect(duplicate.data?.code).toBe('CONFLICT');
    expect(duplicate.data?.httpStatus).toBe(409);
    expect((duplicate.data as unknown as { conflict: unknown }).conflict).toEqual({ reason: 'ACTIVE_EXECUTION', executionId });
  });

  it('tracks an event with an idempotency key twice: one event stored, the same eventId both times', async () => {
    let requests = 0;
    const client = trpcClient(apiKey, () => requests++);
    const idempotencyKey = `order-${randomUUID()}`;
    const input = { name: 'purchase', email: 'http-buyer@example.com', data: { total: 42 }, idempotencyKey };
    // Sent together: one batched HTTP request carrying both calls.
    const [first, second] = await Promise.all([client.events.track.mutate(input), client.events.track.mutate(input)]);
    expect(requests).toBe(1);
    expect(second.eventId).toBe(first.eventId);
    expect([first.duplicate, second.duplicate].sort()).toEqual([false, true]);
    const again = await client.events.track.mutate(input);
    expect(again).toEqual({ eventId: first.eventId, duplicate: true });
    expect(await t.db.event.count({ where: { idempotencyKey } })).toBe(1);
  });

  it('no key is UNAUTHORIZED; a MARKETER key may not repair (FORBIDDEN); bad input is BAD_REQUEST, never a 500', async () => {
    expect((await clientError(trpcClient(null).workflows.list.query())).data?.code).toBe('UNAUTHORIZED');
    expect((await clientError(trpcClient(`wp_${'x'.repeat(40)}`).workflows.list.query())).data?.code).toBe('UNAUTHORIZED');
    expect((await clientError(trpcClient(apiKey).repair.stuck.query())).data?.code).toBe('FORBIDDEN');
    const bad = await clientError(trpcClient(apiKey).enrollments.enroll.mutate({ workflowId: 'not-an-id', email: 'nope' }));
    expect(bad.data?.httpStatus).toBe(400);
    expect((bad.data as unknown as { zodError: { issues: { path: string }[] } }).zodError.issues.map((i) => i.path).sort()).toEqual(['email', 'workflowId']);
  });

  it('repair.apply keeps its documented name over HTTP (served by repair.applyOne)', async () => {
    // The path resolves to the procedure: a MARKETER key is FORBIDDEN there, where an
    // unknown procedure would be NOT_FOUND.
    const body = JSON.stringify({ json: { executionId: randomUUID(), action: 'CANCEL', expectedVersion: 1, reason: 'documented name' } });
    const res = await fetch(`${base}/api/trpc/repair.apply`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
      body,
    });
    expect(res.status).toBe(403);
    const unknown = await fetch(`${base}/api/trpc/repair.nonsense`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
      body,
    });
    expect(unknown.status).toBe(404);
  });

  it('a body over the size limit is 413 before the server reads it all', async () => {
    const response = await fetch(`${base}/api/trpc/enrollments.importCsv`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
      body: JSON.stringify({ json: { workflowId: welcomeId, csv: 'x'.repeat(13 * 1024 * 1024) } }),
    });
    expect(response.status).toBe(413);
  });
});

describe('REST endpoints for integrations (/api/v1)', () => {
  it('POST /api/v1/enrollments enrolls with plain JSON; a duplicate is 409 with conflict.reason', async () => {
    const email = `rest-${randomUUID().slice(0, 8)}@example.com`;
    const response = await postJson('/api/v1/enrollments', { workflowId: welcomeId, email });
    expect(response.status).toBe(200);
    const { executionId } = (await response.json()) as { executionId: string };
    expect(await t.db.workflowExecution.count({ where: { id: executionId } })).toBe(1);

    const duplicate = await postJson('/api/v1/enrollments', { workflowId: welcomeId, email });
    expect(duplicate.status).toBe(409);
    const body = (await duplicate.json()) as { code: string; data: { conflict: unknown } };
    expect(body.code).toBe('CONFLICT');
    expect(body.data.conflict).toEqual({ reason: 'ACTIVE_EXECUTION', executionId });
  });

  it('POST /api/v1/events is idempotent per key', async () => {
    const idempotencyKey = `rest-${randomUUID()}`;
    const input = { name: 'cart_abandoned', email: 'rest-cart@example.com', data: { items: 3 }, idempotencyKey };
    const first = (await (await postJson('/api/v1/events', input)).json()) as { eventId: string; duplicate: boolean };
    const second = (await (await postJson('/api/v1/events', input)).json()) as { eventId: string; duplicate: boolean };
    expect(first.duplicate).toBe(false);
    expect(second).toEqual({ eventId: first.eventId, duplicate: true });
    expect(await t.db.event.count({ where: { idempotencyKey } })).toBe(1);
  });

  it('answers 401 without a key, 400 for bad JSON or bad input, 404 for another project\'s workflow', async () => {
    expect((await postJson('/api/v1/enrollments', { workflowId: welcomeId, email: 'a@example.com' }, null)).status).toBe(401);
    expect((await postJson('/api/v1/enrollments', '{"workflowId": ')).status).toBe(400);
    const invalid = await postJson('/api/v1/events', '{"name": "has spaces", "email": "x", "data": {"__proto__": {"admin": true}}}');
    expect(invalid.status).toBe(400);
    expect(((await invalid.json()) as { code: string }).code).toBe('BAD_REQUEST');
    expect((await postJson('/api/v1/enrollments', { workflowId: randomUUID(), email: 'a@example.com' })).status).toBe(404);
  });

  it('GET /api/v1/openapi.json describes both endpoints with bearer authentication', async () => {
    const response = await fetch(`${base}/api/v1/openapi.json`);
    expect(response.status).toBe(200);
    const doc = (await response.json()) as {
      openapi: string;
      servers: { url: string }[];
      paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: { properties: Record<string, unknown>; required?: string[] } }> }; security?: unknown[] }>>;
      components: { securitySchemes: Record<string, { type: string; scheme?: string }> };
    };
    expect(doc.openapi).toMatch(/^3\./);
    expect(doc.servers[0]!.url).toBe('/api/v1');
    const enroll = doc.paths['/enrollments']!.post!;
    expect(Object.keys(enroll.requestBody!.content['application/json']!.schema.properties).sort()).toEqual(['contactId', 'context', 'email', 'workflowId']);
    expect(enroll.requestBody!.content['application/json']!.schema.required).toEqual(['workflowId']);
    expect(enroll.security).toBeDefined();
    expect(doc.paths['/events']!.post!.requestBody!.content['application/json']!.schema.properties).toHaveProperty('idempotencyKey');
    expect(Object.values(doc.components.securitySchemes)).toContainEqual(expect.objectContaining({ type: 'http', scheme: 'bearer' }));
  });
});
