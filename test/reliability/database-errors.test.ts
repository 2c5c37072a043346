import { TRPCError } from '@trpc/server';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseBusy, databaseUnavailable } from '../../server/database-unavailable';
import { closeDb, createDb, type Db } from '../../server/db';
import { freePort } from '../../server/embedded-postgres';
import { backoffMs } from '../../server/engine/worker';
import { DATABASE_BUSY_MESSAGE, DATABASE_UNAVAILABLE_MESSAGE } from '../../server/trpc/errors';
import { actorFor, callerFor } from '../support/callers';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createProject } from '../support/fixtures';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy';

// Which errors are an outage (the database unreachable: 503 and a worker's back-off) and
// which are not (a bug, bad input: 500 or 4xx), told from the errors real PostgreSQL and
// the real driver stack (pg, pg-pool, @prisma/adapter-pg, Prisma) produce; and the
// router's SERVICE_UNAVAILABLE for every procedure that meets one.
//
// Shown to matter: with the middleware in server/trpc/trpc.ts that maps outages removed,
// 'a procedure that meets an unreachable database fails SERVICE_UNAVAILABLE' failed with
// INTERNAL_SERVER_ERROR.

let t: TestDatabase;
let proxy: TcpProxy;
let cut: Db;
let projectId = '';

async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a failure');
}

beforeAll(async () => {
  t = await freshDatabase();
  projectId = (await createProject(t.db)).id;
  const target = new URL(t.url);
  proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  cut = createDb(proxy.url(t.url), { poolSize: 2, connectTimeoutMs: 1000, queryTimeoutMs: 1000 });
});

afterAll(async () => {
  await closeDb(cut).catch(() => {});
  await proxy?.close();
  await t?.drop();
});

describe('what counts as the database unreachable', () => {
  it('connection refused, through Prisma (raw query, model query, transaction) and through pg', async () => {
    const port = await freePort();
    const nowhere = createDb(`postgresql://postgres@127.0.0.1:${port}/none`, { poolSize: 1 });
    try {
      expect(databaseUnavailable(await failure(nowhere.$queryRaw`SELECT 1`))).toBe(true);
      expect(databaseUnavailable(await failure(nowhere.project.findFirst()))).toBe(true);
      expect(databaseUnavailable(await failure(nowhere.$transaction(async (tx) => tx.$queryRaw`SELECT 1`)))).toBe(true);
    } finally {
      await closeDb(nowhere);
    }
    const client = new pg.Client({ connectionString: `postgresql://postgres@127.0.0.1:${port}/none` });
    expect(databaseUnavailable(await failure(client.connect()))).toBe(true);
  });

  it('a connection cut mid-statement, a connect that is never answered, a pool with every connection busy', async () => {
    const inFlight = failure(cut.$queryRaw`SELECT pg_sleep(5)`);
    await new Promise((r) => setTimeout(r, 300));
    await proxy.cut('refuse');
    expect(databaseUnavailable(await inFlight)).toBe(true);
    expect(databaseUnavailable(await failure(cut.$queryRaw`SELECT 1`))).toBe(true);
    await proxy.restore();
    await proxy.cut('blackhole');
    expect(databaseUnavailable(await failure(cut.$queryRaw`SELECT 1`))).toBe(true);
    expect(databaseUnavailable(await failure(cut.$transaction(async (tx) => tx.$queryRaw`SELECT 1`)))).toBe(true);
    await proxy.restore();
    await cut.$queryRaw`SELECT 1`;

    const busy = createDb(t.url, { poolSize: 1, connectTimeoutMs: 300 });
    try {
      const holding = busy.$transaction(async (tx) => tx.$queryRaw`SELECT pg_sleep(1.5)::text`, { timeout: 10_000 });
      await new Promise((r) => setTimeout(r, 100));
      expect(databaseUnavailable(await failure(busy.$queryRaw`SELECT 1`))).toBe(true);
      await holding;
    } finally {
      await closeDb(busy);
    }
  });

  it('an administrator terminating the session (57P01) is an outage', async () => {
    const victim = createDb(t.url, { poolSize: 1, applicationName: 'waypost-test-victim' });
    try {
      await victim.$queryRaw`SELECT 1`;
      const sleeping = failure(victim.$queryRaw`SELECT pg_sleep(30)`);
      await new Promise((r) => setTimeout(r, 300));
      await t.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'waypost-test-victim'`);
      expect(databaseUnavailable(await sleeping)).toBe(true);
    } finally {
      await closeDb(victim);
    }
  });

  it('bad SQL, a constraint violation, a missing row and plain bugs are not', async () => {
    expect(databaseUnavailable(await failure(t.db.$queryRawUnsafe('SELEC 1')))).toBe(false);
    expect(databaseUnavailable(await failure(t.db.project.create({ data: { id: projectId, name: 'dup' } })))).toBe(false);
    expect(databaseUnavailable(await failure(t.db.project.findUniqueOrThrow({ where: { id: '00000000-0000-0000-0000-000000000000' } })))).toBe(false);
    expect(databaseUnavailable(await failure(t.db.$queryRaw`SELECT 1/0`))).toBe(false);
    expect(databaseUnavailable(new TypeError("Cannot read properties of undefined (reading 'id')"))).toBe(false);
    expect(databaseUnavailable(null)).toBe(false);
  });
});

describe('what counts as the database busy (reachable, but the work ran past its bounds and was rolled back)', () => {
  it("the server's statement timeout, a lock timeout, an interactive transaction past its timeout: busy, not an outage", async () => {
    const statement = await failure(t.db.$transaction(async (tx) => {
      await tx.$executeRawUnsafe(`SET LOCAL statement_timeout = '100ms'`);
      await tx.$queryRaw`SELECT pg_sleep(1)`;
    }));
    const lock = await failure(t.db.$transaction(async (tx) => {
      await tx.$executeRawUnsafe(`SET LOCAL lock_timeout = '100ms'`);
      const holder = new pg.Client({ connectionString: t.url });
      await holder.connect();
      try {
        await holder.query('BEGIN');
        await holder.query(`SELECT id FROM "Project" WHERE id = $1 FOR UPDATE`, [projectId]);
        await tx.$queryRaw`SELECT id FROM "Project" WHERE id = ${projectId}::uuid FOR UPDATE`;
      } finally {
        await holder.end();
      }
    }));
    const expired = await failure(t.db.$transaction(async (tx) => {
      await new Promise((r) => setTimeout(r, 300));
      await tx.$queryRaw`SELECT 1`;
    }, { timeout: 100 }));
    for (const error of [statement, lock, expired]) {
      expect(databaseBusy(error), String(error)).toBe(true);
      expect(databaseUnavailable(error), String(error)).toBe(false);
    }
  });

  it('an outage, bad SQL and a constraint violation are not busy', async () => {
    const port = await freePort();
    const nowhere = createDb(`postgresql://postgres@127.0.0.1:${port}/none`, { poolSize: 1, connectTimeoutMs: 300 });
    try {
      expect(databaseBusy(await failure(nowhere.$transaction(async (tx) => tx.$queryRaw`SELECT 1`)))).toBe(false);
    } finally {
      await closeDb(nowhere);
    }
    expect(databaseBusy(await failure(t.db.$queryRawUnsafe('SELEC 1')))).toBe(false);
    expect(databaseBusy(await failure(t.db.project.create({ data: { id: projectId, name: 'dup' } })))).toBe(false);
  });

  it('a procedure whose statement the server cancels fails SERVICE_UNAVAILABLE with the busy sentence, not INTERNAL_SERVER_ERROR', async () => {
    const slow = createDb(t.url, { poolSize: 1, queryTimeoutMs: 1000, applicationName: 'waypost-test-busy' });
    const holder = new pg.Client({ connectionString: t.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`LOCK TABLE "Contact" IN ACCESS EXCLUSIVE MODE`);
      const error = await failure(callerFor(slow, actorFor(projectId, 'OWNER')).contacts.upsert({ email: 'busy@example.com' }));
      expect(error).toBeInstanceOf(TRPCError);
      expect((error as TRPCError).code).toBe('SERVICE_UNAVAILABLE');
      expect((error as TRPCError).message).toBe(DATABASE_BUSY_MESSAGE);
    } finally {
      await holder.end();
      await closeDb(slow);
    }
  });
});

describe('the router', () => {
  it('a procedure that meets an unreachable database fails SERVICE_UNAVAILABLE with its own sentence', async () => {
    const caller = callerFor(cut, actorFor(projectId, 'OWNER'));
    await proxy.cut('refuse');
    try {
      for (const call of [() => caller.workflows.list(), () => caller.executions.stats({}), () => caller.contacts.upsert({ email: 'x@example.com' })]) {
        const error = await failure(call());
        expect(error).toBeInstanceOf(TRPCError);
        expect((error as TRPCError).code).toBe('SERVICE_UNAVAILABLE');
        expect((error as TRPCError).message).toBe(DATABASE_UNAVAILABLE_MESSAGE);
      }
    } finally {
      await proxy.restore();
    }
    // Refusals stay what they are.
    const missing = await failure(caller.executions.get({ id: '00000000-0000-0000-0000-000000000000' }));
    expect((missing as TRPCError).code).toBe('NOT_FOUND');
  });
});

describe("the worker's back-off", () => {
  it('grows to its cap, each sleep drawn from the upper half of its step', () => {
    expect(backoffMs(1, 10_000, () => 0)).toBe(250);
    expect(backoffMs(1, 10_000, () => 1)).toBe(500);
    expect(backoffMs(3, 10_000, () => 0.5)).toBe(1500);
    expect(backoffMs(50, 10_000, () => 1)).toBe(10_000);
    expect(backoffMs(50, 10_000, () => 0)).toBe(5_000);
  });
});
