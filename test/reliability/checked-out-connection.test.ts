import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeDb, createDb, preparedRaw, preparedTransaction, type Db, type RawDb } from '../../server/db';
import { freshDatabase, type TestDatabase } from '../support/database';

// A connection the database terminates while the pool has it checked out (a transaction
// waiting on JavaScript between two statements, as a worker's does around a send) must fail
// that transaction's next statement, not crash the process with an unhandled 'error' event.
//
// Shown to matter: without the per-client listener in server/db/index.ts createDb, this file
// failed with Vitest catching unhandled "Connection terminated unexpectedly" errors, and
// the connection-drop drill (test/race/drills.test.ts) saw workers exit 1 in 2 of 5 runs.

let t: TestDatabase;
let db: Db;
const seen: Error[] = [];

beforeAll(async () => {
  t = await freshDatabase();
  db = createDb(t.url, { poolSize: 2, onError: (error) => seen.push(error) });
});

afterAll(async () => {
  await closeDb(db).catch(() => {});
  await t.drop();
});

async function terminateMidTransaction(tx: RawDb): Promise<void> {
  const [row] = await tx.$queryRaw<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
  await t.query(`SELECT pg_terminate_backend(${Number(row!.pid)})`);
  // The client sits checked out with no query running while the termination arrives.
  await new Promise((resolve) => setTimeout(resolve, 300));
  await tx.$queryRaw`SELECT 1`;
}

describe('a checked-out connection terminated by the database', () => {
  it.each([
    ['a raw engine transaction (preparedTransaction, the claims\' path)', () => preparedTransaction(preparedRaw(db), terminateMidTransaction)],
    ["Prisma's interactive transaction", () => db.$transaction(terminateMidTransaction)],
  ])('%s fails, the error reaches onError, and the pool serves the next query', async (_, run) => {
    seen.length = 0;
    for (let round = 0; round < 3; round++) {
      await expect(run()).rejects.toThrow();
      const [row] = await preparedRaw(db).$queryRaw<{ ok: number }[]>`SELECT 1 AS ok`;
      expect(row?.ok).toBe(1);
    }
    expect(seen.length).toBeGreaterThanOrEqual(3);
  });
});
