import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPgBouncer, type PgBouncer } from '../../scripts/pgbouncer';
import { closeDb, createDb, preparedRaw, preparedTransaction, type Db } from '../../server/db';
import { freshDatabase, type TestDatabase } from '../support/database';

// The database client through a real PgBouncer 1.18 in transaction mode
// (scripts/pgbouncer.ts), 4 server connections shared by many clients, in front of the real
// PostgreSQL. What DATABASE_POOL_MODE=transaction exists for: without it, the engine's
// named prepared statements and the server-side bounds sent as startup parameters break
// through such a pooler. With it, the engine's pipelines (BEGIN with the first statement,
// COMMIT with the last: server/db/wire.ts) keep each transaction on one server connection,
// and the bounds still hold, per transaction, without leaking to the pooler's other clients.

const SERVER_CONNECTIONS = 4;
let t: TestDatabase;
let bouncer: PgBouncer;
let pooledUrl: string;
const opened: Db[] = [];

/** A client through the pooler (closed after the file). */
function through(options: Parameters<typeof createDb>[1]): Db {
  const db = createDb(pooledUrl, { applicationName: 'waypost-test-pgbouncer', onError: () => {}, ...options });
  opened.push(db);
  return db;
}

beforeAll(async () => {
  t = await freshDatabase();
  bouncer = await startPgBouncer({ upstream: t.directUrl, defaultPoolSize: SERVER_CONNECTIONS, maxClientConn: 400 });
  pooledUrl = bouncer.url(t.name);
  await t.query('CREATE TABLE probe (id int PRIMARY KEY, n int NOT NULL DEFAULT 0)');
  await t.query('INSERT INTO probe (id) SELECT generate_series(1, 100)');
});

afterAll(async () => {
  await Promise.all(opened.map((db) => closeDb(db).catch(() => {})));
  await bouncer?.stop();
  await t?.drop();
});

const errorText = (r: PromiseSettledResult<unknown>) => (r.status === 'rejected' ? String((r.reason as Error).message ?? r.reason) : null);

describe('through PgBouncer in transaction mode, with DATABASE_POOL_MODE unset (session)', () => {
  it("the engine's named prepared statements fail once many clients share the server connections", async () => {
    const clients = Array.from({ length: 12 }, () => through({ poolMode: 'session', poolSize: 2 }));
    const failures: string[] = [];
    for (let round = 0; round < 10 && failures.length === 0; round++) {
      const results = await Promise.allSettled(
        clients.flatMap((db) =>
          Array.from({ length: 4 }, (_, k) => {
            const raw = preparedRaw(db);
            return k % 2 === 0 ? raw.$queryRaw`SELECT n FROM probe WHERE id = ${k + 1}::int` : raw.$queryRaw`SELECT id FROM probe WHERE n = ${k}::int LIMIT 1`;
          }),
        ),
      );
      failures.push(...results.map(errorText).filter((e): e is string => e !== null));
    }
    // A statement one server connection parsed is missing on the next, or already there under its name from another client.
    expect(failures.length).toBeGreaterThan(0);
    for (const f of failures) expect(f).toMatch(/prepared statement "wp_\d+" (does not exist|already exists)/);
  });

  it('the server-side bounds as startup parameters are refused by PgBouncer 1.18: no connection at all', async () => {
    const db = through({ poolMode: 'session', poolSize: 1, queryTimeoutMs: 5_000 });
    await expect(preparedRaw(db).$queryRaw`SELECT 1 AS one`).rejects.toThrow(/unsupported startup parameter: statement_timeout/);
  });
});

describe('through PgBouncer in transaction mode, with DATABASE_POOL_MODE=transaction', () => {
  it('the same statements from as many clients all succeed, named nothing', async () => {
    const clients = Array.from({ length: 12 }, () => through({ poolMode: 'transaction', poolSize: 2, queryTimeoutMs: 10_000 }));
    for (let round = 0; round < 10; round++) {
      const results = await Promise.allSettled(
        clients.flatMap((db) =>
          Array.from({ length: 4 }, (_, k) => {
            const raw = preparedRaw(db);
            return k % 2 === 0 ? raw.$queryRaw`SELECT n FROM probe WHERE id = ${k + 1}::int` : raw.$queryRaw`SELECT id FROM probe WHERE n = ${k}::int LIMIT 1`;
          }),
        ),
      );
      expect(results.map(errorText).filter(Boolean), `round ${round}`).toEqual([]);
    }
  });

  it('a raw transaction (BEGIN with its first statement, COMMIT with its last) runs on one server connection, in one transaction, under contention', async () => {
    const clients = Array.from({ length: 16 }, () => through({ poolMode: 'transaction', poolSize: 2, queryTimeoutMs: 10_000 }));
    type Seen = { pid: number; xid: string };
    const seen = (tx: { $queryRaw: Db['$queryRaw'] }, id: number) =>
      tx.$queryRaw<Seen[]>`UPDATE probe SET n = n + 1 WHERE id = ${id}::int RETURNING pg_backend_pid() AS pid, txid_current()::text AS xid`;
    const runs = await Promise.all(
      clients.flatMap((db, c) =>
        Array.from({ length: 6 }, async (_, k) => {
          const id = ((c * 6 + k) % 10) + 1;
          const out = await preparedTransaction(
            preparedRaw(db),
            async (tx) => [...(await seen(tx, id)), ...(await seen(tx, id + 10))],
            async (tx, firsts) => [...firsts, ...(await seen(tx, id + 20))],
          );
          return out!.value;
        }),
      ),
    );
    for (const run of runs) {
      // Three statements, one server connection, one transaction id.
      expect(new Set(run.map((r) => r.pid)).size).toBe(1);
      expect(new Set(run.map((r) => r.xid)).size).toBe(1);
    }
    const [sum] = await t.query<{ total: number }>(`SELECT sum(n)::int AS total FROM probe WHERE id <= 30`);
    expect(sum!.total).toBe(runs.length * 3);
    expect(new Set(runs.map((run) => run[0]!.pid)).size).toBeLessThanOrEqual(SERVER_CONNECTIONS);
    await t.query('UPDATE probe SET n = 0');
  });

  it('a raw transaction whose statement fails leaves nothing, and its client is clean for the next (no transaction left open on a server connection)', async () => {
    const db = through({ poolMode: 'transaction', poolSize: 1, queryTimeoutMs: 10_000 });
    for (let round = 0; round < 5; round++) {
      await expect(
        preparedTransaction(preparedRaw(db), async (tx) => {
          await tx.$executeRaw`UPDATE probe SET n = n + 1 WHERE id = 1`;
          await tx.$executeRaw`UPDATE probe SET n = 10 / ${0}::int WHERE id = 2`;
        }),
      ).rejects.toThrow(/division by zero/);
      await expect(
        preparedTransaction(
          preparedRaw(db),
          async (tx) => tx.$executeRaw`UPDATE probe SET n = n + 1 WHERE id = 3`,
          async (tx) => tx.$executeRaw`UPDATE probe SET n = 10 / ${0}::int WHERE id = 4`,
        ),
      ).rejects.toThrow(/division by zero/);
    }
    expect(await t.query(`SELECT id, n FROM probe WHERE n <> 0`)).toEqual([]);
    // The server connections are all idle, none left inside a transaction.
    const states = await t.query<{ state: string }>(`SELECT state FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'waypost-test-pgbouncer' AND state <> 'idle'`);
    expect(states).toEqual([]);
  });

  it("Prisma's interactive transactions and models work through it", async () => {
    const clients = Array.from({ length: 8 }, () => through({ poolMode: 'transaction', poolSize: 2, queryTimeoutMs: 10_000 }));
    await Promise.all(
      clients.map((db, i) =>
        db.$transaction(async (tx) => {
          const project = await tx.project.create({ data: { name: `pooled-${i}` } });
          await tx.$executeRaw`UPDATE probe SET n = n + 1 WHERE id = 50`;
          return project;
        }),
      ),
    );
    expect(await clients[0]!.project.count({ where: { name: { startsWith: 'pooled-' } } })).toBe(8);
    expect((await t.query(`SELECT n FROM probe WHERE id = 50`))[0].n).toBe(8);
  });
});

describe('the server-side bounds behind the pooler (DATABASE_QUERY_TIMEOUT_SECONDS: 90% of it, server side)', () => {
  const QUERY_TIMEOUT_MS = 1_500;
  const bounded = () => through({ poolMode: 'transaction', poolSize: 1, queryTimeoutMs: QUERY_TIMEOUT_MS });

  it('a statement on its own that runs past the bound is cancelled by PostgreSQL, before the client gives up', async () => {
    const started = Date.now();
    const error = await preparedRaw(bounded()).$queryRaw`SELECT pg_sleep(5)`.then(() => null, (e: { code?: string }) => e);
    expect(error?.code).toBe('57014');
    expect(Date.now() - started).toBeLessThan(QUERY_TIMEOUT_MS);
  });

  it('a statement of a raw transaction waiting on a lock past the bound is cancelled, and the transaction rolled back', async () => {
    const holder = new pg.Client({ connectionString: t.directUrl });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT id FROM probe WHERE id = 60 FOR UPDATE');
      const error = await preparedTransaction(preparedRaw(bounded()), async (tx) => {
        await tx.$executeRaw`UPDATE probe SET n = n + 1 WHERE id = 61`;
        await tx.$executeRaw`UPDATE probe SET n = n + 1 WHERE id = 60`;
      }).then(() => null, (e: { code?: string }) => e);
      expect(error?.code).toBe('57014');
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
    expect((await t.query(`SELECT n FROM probe WHERE id = 61`))[0].n).toBe(0);
  });

  it('a Prisma transaction left idle past the bound is ended by PostgreSQL, and its row lock released', async () => {
    const db = bounded();
    const outcome = db
      .$transaction(
        async (tx) => {
          await tx.$executeRaw`UPDATE probe SET n = n + 1 WHERE id = 70`;
          await new Promise((r) => setTimeout(r, QUERY_TIMEOUT_MS * 2));
          await tx.$executeRaw`UPDATE probe SET n = n + 1 WHERE id = 71`;
        },
        { timeout: 30_000 },
      )
      .then(() => 'committed', () => 'failed');
    await new Promise((r) => setTimeout(r, 300));
    // The row is locked by the open transaction now; PostgreSQL ends it at the bound.
    const direct = new pg.Client({ connectionString: t.directUrl });
    await direct.connect();
    try {
      await direct.query(`SET lock_timeout = ${QUERY_TIMEOUT_MS * 3}`);
      const started = Date.now();
      await direct.query('UPDATE probe SET n = n WHERE id = 70');
      expect(Date.now() - started).toBeLessThan(QUERY_TIMEOUT_MS * 2);
    } finally {
      await direct.end();
    }
    expect(await outcome).toBe('failed');
    expect((await t.query(`SELECT n FROM probe WHERE id IN (70, 71) ORDER BY id`)).map((r) => r.n)).toEqual([0, 0]);
  });

  it("the bounds stay with their transaction: the pooler's other clients find every server connection unbounded", async () => {
    const db = bounded();
    const many = Array.from({ length: 8 }, () => through({ poolMode: 'transaction', poolSize: 2, queryTimeoutMs: QUERY_TIMEOUT_MS }));
    await Promise.all(many.map((c) => preparedTransaction(preparedRaw(c), async (tx) => tx.$queryRaw`SELECT pg_sleep(0.05)`)));
    const inside = await preparedTransaction(preparedRaw(db), async (tx) =>
      tx.$queryRaw<{ st: string; it: string }[]>`SELECT current_setting('statement_timeout') AS st, current_setting('idle_in_transaction_session_timeout') AS it`,
    );
    expect(inside!.value).toEqual([{ st: '1350ms', it: '1350ms' }]);
    // One plain client per server connection, each inside a transaction at once, so each holds a different one.
    const plain = await Promise.all(
      Array.from({ length: SERVER_CONNECTIONS }, async () => {
        const c = new pg.Client({ connectionString: pooledUrl });
        await c.connect();
        return c;
      }),
    );
    try {
      const settings = await Promise.all(
        plain.map(async (c) => {
          await c.query('BEGIN');
          const { rows } = await c.query(`SELECT pg_backend_pid() AS pid, current_setting('statement_timeout') AS st, current_setting('idle_in_transaction_session_timeout') AS it`);
          return rows[0] as { pid: number; st: string; it: string };
        }),
      );
      expect(new Set(settings.map((s) => s.pid)).size).toBe(SERVER_CONNECTIONS);
      expect(settings.map(({ st, it }) => ({ st, it }))).toEqual(Array(SERVER_CONNECTIONS).fill({ st: '0', it: '0' }));
    } finally {
      await Promise.all(plain.map(async (c) => c.query('ROLLBACK').finally(() => c.end())));
    }
  });
});
