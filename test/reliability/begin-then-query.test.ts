import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { closeDb, createDb, preparedRaw, preparedTransaction, Prisma, type Db, type RawDb } from '../../server/db';
import { freshDatabase, type TestDatabase } from '../support/database';

// A raw engine transaction sends BEGIN in the same write as its first statement
// (server/db/wire.ts, BeginThenQuery), and, when it has a closing statement, COMMIT in the same
// write as that one (QueryThenCommit); both lean on node-postgres internals. Their failure
// paths: a statement failing at parse or at execution, COMMIT itself failing, and the
// caller throwing, each on a pool of one connection, so that a connection left in a
// transaction, or with a named statement it believes prepared but is not, fails the next
// round.

let t: TestDatabase;
let db: Db;

beforeAll(async () => {
  t = await freshDatabase();
  db = createDb(t.url, { poolSize: 1 });
  await t.query('CREATE TABLE begin_probe (n int NOT NULL)');
  // A unique check made at COMMIT, not at the INSERT: the way to make COMMIT itself fail.
  await t.query('CREATE TABLE commit_probe (n int NOT NULL UNIQUE DEFERRABLE INITIALLY DEFERRED)');
});

afterAll(async () => {
  await closeDb(db).catch(() => {});
  await t.drop();
});

beforeEach(async () => {
  await t.query('TRUNCATE begin_probe, commit_probe');
});

const raw = () => preparedRaw(db);
const insert = (tx: RawDb, n: number) => tx.$executeRaw`INSERT INTO begin_probe (n) VALUES (${n}::int)`;
/** 10 / d: a division by zero at execution when d is 0 (the statement parses and plans). */
const insertQuotient = (tx: RawDb, d: number) => tx.$executeRaw`INSERT INTO begin_probe (n) VALUES (10 / ${d}::int)`;
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
    const late = (tx: RawDb) => tx.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM begin_late`;
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

describe('COMMIT sent with the closing statement', () => {
  it("commits the closing statement's write with the rest: seen from another connection once the call returns", async () => {
    for (let round = 0; round < 3; round++) {
      let closingAnswer: unknown = null;
      const result = await preparedTransaction(
        raw(),
        async (tx) => {
          await insert(tx, 10 + round);
          return 20 + round;
        },
        async (tx, n) => {
          closingAnswer = [await insert(tx, n), await tx.$queryRaw`SELECT 1 AS late`.catch((e: Error) => e.message)];
        },
      );
      expect(result!.value).toBe(20 + round);
      // The closing statement's answer is its own (1 row), not COMMIT's; nothing runs after it.
      expect(closingAnswer).toEqual([1, expect.stringMatching(/closing statement/)]);
      expect(await rows()).toEqual([10 + round, 20 + round]);
      await t.query('TRUNCATE begin_probe');
      await connectionIsClean();
    }
  });

  it('a closing statement failing at execution rolls back the whole transaction, with its own error', async () => {
    for (let round = 0; round < 3; round++) {
      await expect(
        preparedTransaction(
          raw(),
          (tx) => insert(tx, 1),
          (tx) => insertQuotient(tx, 0),
        ),
      ).rejects.toThrow(/division by zero/);
      expect(await rows()).toEqual([]);
      await connectionIsClean();
    }
    // The same named statement still runs, as closing statement and on its own.
    await preparedTransaction(raw(), (tx) => insert(tx, 1), (tx) => insertQuotient(tx, 5));
    expect(await rows()).toEqual([1, 2]);
  });

  it('a closing statement naming a table not there yet fails and rolls back; once the table exists it runs', async () => {
    await t.query('DROP TABLE IF EXISTS commit_late');
    const late = (tx: RawDb) => tx.$executeRaw`INSERT INTO commit_late (n) VALUES (1)`;
    for (let round = 0; round < 3; round++) {
      await expect(preparedTransaction(raw(), (tx) => insert(tx, 1), late)).rejects.toThrow(/commit_late/);
      expect(await rows()).toEqual([]);
      await connectionIsClean();
    }
    await t.query('CREATE TABLE commit_late (n int)');
    await preparedTransaction(raw(), (tx) => insert(tx, 1), late);
    expect(await rows()).toEqual([1]);
    expect(await t.query('SELECT n FROM commit_late')).toEqual([{ n: 1 }]);
    expect(await late(raw())).toBe(1);
  });

  it("COMMIT itself failing (a deferred unique check) fails the call with COMMIT's error and writes nothing", async () => {
    for (let round = 0; round < 3; round++) {
      await expect(
        preparedTransaction(
          raw(),
          async (tx) => {
            await insert(tx, 1);
            await tx.$executeRaw`INSERT INTO commit_probe (n) VALUES (7)`;
          },
          // Accepted by the INSERT (the check is deferred), refused at COMMIT.
          (tx) => tx.$executeRaw`INSERT INTO commit_probe (n) VALUES (7)`,
        ),
      ).rejects.toThrow(/duplicate key/);
      expect(await rows()).toEqual([]);
      expect(await t.query('SELECT n FROM commit_probe')).toEqual([]);
      await connectionIsClean();
    }
  });

  it('a caller that throws before the closing statement never runs it, and leaves nothing', async () => {
    let closed = false;
    await expect(
      preparedTransaction(
        raw(),
        async (tx) => {
          await insert(tx, 1);
          throw new Error('changed its mind');
        },
        async (tx) => {
          closed = true;
          await insert(tx, 2);
        },
      ),
    ).rejects.toThrow('changed its mind');
    expect(closed).toBe(false);
    expect(await rows()).toEqual([]);
    await connectionIsClean();
  });

  it('a closing statement as the only statement runs on its own; a closing step with no statement still commits', async () => {
    await preparedTransaction(raw(), async () => 3, (tx, n) => insert(tx, n));
    await preparedTransaction(raw(), (tx) => insert(tx, 4), async () => {});
    expect(await rows()).toEqual([3, 4]);
    await connectionIsClean();
  });

  it('a second statement after the closing one is refused: it would run outside the transaction', async () => {
    await expect(
      preparedTransaction(
        raw(),
        (tx) => insert(tx, 1),
        async (tx) => {
          await insert(tx, 2);
          await insert(tx, 3);
        },
      ),
    ).rejects.toThrow(/closing statement/);
    // The closing statement carried the COMMIT: 1 and 2 are in, 3 never ran.
    expect(await rows()).toEqual([1, 2]);
    await connectionIsClean();
  });
});
