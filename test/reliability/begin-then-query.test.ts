import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { closeDb, createDb, preparedRaw, preparedTransaction, Prisma, type Db, type DbTx } from '../../server/db';
import { freshDatabase, type TestDatabase } from '../support/database';

// A raw engine transaction sends BEGIN in the same write as its first statement
// (server/db.ts, BeginThenQuery, which leans on node-postgres internals). Its failure
// paths: the first statement failing at parse or at execution, a later statement failing,
// and the caller throwing, each on a pool of one connection, so that a connection left in
// a transaction, or with a named statement it believes prepared but is not, fails the
// next round.

let t: TestDatabase;
let db: Db;

beforeAll(async () => {
  t = await freshDatabase();
  db = createDb(t.url, { poolSize: 1 });
  await t.query('CREATE TABLE begin_probe (n int NOT NULL)');
});

afterAll(async () => {
  await closeDb(db).catch(() => {});
  await t.drop();
});

beforeEach(async () => {
  await t.query('TRUNCATE begin_probe');
});

const raw = () => preparedRaw(db);
const insert = (tx: DbTx, n: number) => tx.$executeRaw`INSERT INTO begin_probe (n) VALUES (${n}::int)`;
/** 10 / d: a division by zero at execution when d is 0 (the statement parses and plans). */
const insertQuotient = (tx: DbTx, d: number) => tx.$executeRaw`INSERT INTO begin_probe (n) VALUES (10 / ${d}::int)`;
const rows = async () => (await t.query<{ n: number }>('SELECT n FROM begin_probe ORDER BY n')).map((r) => r.n);

/**
 * The pool's one connection is outside any transaction: a statement it runs on its own
 * is committed at once (seen from another connection), not held in an open or aborted one.
 */
async function connectionIsClean() {
  await raw().$executeRaw`INSERT INTO begin_probe (n) VALUES (-1)`;
  expect(await rows()).toContain(-1);
  await t.query('DELETE FROM begin_probe WHERE n = -1');
}

describe('BEGIN sent with the first statement', () => {
  it('the first statement is inside the transaction: a caller that throws after it leaves nothing', async () => {
    for (let round = 0; round < 3; round++) {
      await expect(
        preparedTransaction(raw(), async (tx) => {
          await insert(tx, 1);
          throw new Error('the caller changed its mind');
        }),
      ).rejects.toThrow('the caller changed its mind');
      expect(await rows()).toEqual([]);
      await connectionIsClean();
    }
  });

  it("the first statement's rows are the answer (not BEGIN's), and a commit keeps its writes", async () => {
    const result = await preparedTransaction(raw(), async (tx) => {
      const [row] = await tx.$queryRaw<{ two: number }[]>`SELECT 1 + 1 AS two`;
      await insert(tx, 2);
      // Not committed yet: another connection does not see it.
      const meanwhile = await rows();
      return { row, meanwhile };
    });
    expect(result!.value.row).toEqual({ two: 2 });
    expect(result!.value.meanwhile).toEqual([]);
    expect(await rows()).toEqual([2]);
    await connectionIsClean();
  });

  it('a first statement failing at execution fails the transaction with its own error, writes nothing, and its named statement still runs after', async () => {
    for (let round = 0; round < 3; round++) {
      await expect(preparedTransaction(raw(), (tx) => insertQuotient(tx, 0))).rejects.toThrow(/division by zero/);
      expect(await rows()).toEqual([]);
      await connectionIsClean();
    }
    // The same named statement, now with a divisor, as first and as later statement.
    await preparedTransaction(raw(), async (tx) => {
      await insertQuotient(tx, 5);
      await insertQuotient(tx, 2);
    });
    expect(await rows()).toEqual([2, 5]);
  });

  it('a first statement that does not parse fails the transaction, and the connection serves the next one', async () => {
    const broken = Prisma.sql`SELEC 1 AS not_sql`;
    for (let round = 0; round < 3; round++) {
      await expect(preparedTransaction(raw(), (tx) => tx.$queryRaw(broken))).rejects.toThrow(/syntax error/);
      await connectionIsClean();
    }
    await preparedTransaction(raw(), (tx) => insert(tx, 3));
    expect(await rows()).toEqual([3]);
  });

  it('a first statement naming a table that is not there yet fails, and runs once the table exists (a migration landing under a running process)', async () => {
    await t.query('DROP TABLE IF EXISTS begin_late');
    const late = (tx: DbTx) => tx.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM begin_late`;
    for (let round = 0; round < 3; round++) {
      await expect(preparedTransaction(raw(), late)).rejects.toThrow(/begin_late/);
      await connectionIsClean();
    }
    await t.query('CREATE TABLE begin_late (n int)');
    const result = await preparedTransaction(raw(), late);
    expect(result!.value).toEqual([{ n: 0 }]);
    // And outside a transaction, the same statement on the same connection.
    expect(await late(raw())).toEqual([{ n: 0 }]);
  });

  it('a later statement failing rolls back the first one', async () => {
    for (let round = 0; round < 3; round++) {
      await expect(
        preparedTransaction(raw(), async (tx) => {
          await insert(tx, 4);
          await insertQuotient(tx, 0);
        }),
      ).rejects.toThrow(/division by zero/);
      expect(await rows()).toEqual([]);
      await connectionIsClean();
    }
  });
});
