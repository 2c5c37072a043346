import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeDb, createDb, poolOf, serverTimeoutMs, type Db } from '../../server/db';
import { enroll } from '../../server/engine/enrollment';
import { applyRepair } from '../../server/repair/actions';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createProject, holdExecutionRow, parkedAtWait, waitWorkflow, workflowFrom } from '../support/fixtures';

// A pooled connection is handed to the next borrower only when it is idle, outside any
// transaction, with nothing running on it. The reproducer (from an adversarial review):
// a pool of one, a 1 s query timeout, another session holding the execution's row for
// about 3 s, then FORCE_TIMEOUT. Before the fix, the repair's claim waited on the lock
// past the timeout, Prisma's ROLLBACK timed out unsent, the adapter released the client as
// healthy, the claim then completed inside the still-open transaction, and the next
// borrower's COMMIT committed it: a repair that answered "Query read timeout" was applied
// (resolvedBy OPERATOR) with no audit entry (I8), and the next borrower's own work lived or
// died with that transaction (I7).
//
// Three guards, each with a test here that fails without it:
// - the pool discards a client released inside a transaction or with a statement running
//   (CheckedPool in server/db/pool.ts): 'a client released inside a transaction ...';
// - a read timeout drops the connection at once (ReadTimeoutClient):
//   'the statement after a read timeout ...';
// - the server gives up first (statement_timeout below the client's bound):
//   'a statement waiting on a lock past the bound ...'.

let t: TestDatabase;
let projectId = '';
let workflowId = '';
const QUERY_TIMEOUT_MS = 1000;
let seq = 0;

beforeAll(async () => {
  t = await freshDatabase();
  projectId = (await createProject(t.db)).id;
  workflowId = (await workflowFrom(t.db, projectId, waitWorkflow())).id;
});
afterAll(async () => {
  await t?.drop();
});

/** A client under test: one connection, a 1 s client-side query timeout. */
function cutClient(name: string): Db {
  return createDb(t.url, { poolSize: 1, queryTimeoutMs: QUERY_TIMEOUT_MS, applicationName: `wp-poison-${name}`, onError: () => {} });
}

const parkedExecution = () => parkedAtWait(t.db, projectId, workflowId, `parked-${seq++}@example.com`);
const holdRow = (executionId: string, ms: number) => holdExecutionRow(t.url, executionId, ms);

/** End every session of an application name: whatever transaction they left open rolls back. */
async function endSessions(applicationName: string): Promise<void> {
  await t.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, [applicationName]);
}

describe('a pooled connection in an unknown state is never handed on', () => {
  it('FORCE_TIMEOUT that waits on a locked row past the query timeout changes nothing, and the next borrower works alone', async () => {
    const x = await parkedExecution();
    const cut = cutClient('repair');
    try {
      const { released } = await holdRow(x.id, 3000);
      const repair = await applyRepair(
        cut,
        { projectId, action: 'FORCE_TIMEOUT', executionId: x.id, eventId: null, actor: 'user:operator', reason: 'stuck', expectedVersion: x.version },
        { graceSeconds: 0 },
      ).then(
        (result) => ({ result, error: null }),
        (error: unknown) => ({ result: null, error }),
      );
      // It did not apply: it failed, or answered a typed refusal.
      expect(repair.result?.ok ?? false).toBe(false);
      await released;
      await new Promise((r) => setTimeout(r, 300));

      // The next borrower's own work, in its own transaction: it answers ok, so it must exist.
      const email = `next-${seq++}@example.com`;
      const next = await enroll(cut, { projectId, workflowId, email });
      expect(next.ok).toBe(true);

      // Whatever the pool's sessions still hold open is rolled back now.
      await endSessions('wp-poison-repair');
      const [after] = await t.query<{ status: string; version: number; resolvedBy: string | null }>(
        `SELECT e.status, e.version, s."resolvedBy" FROM "WorkflowExecution" e
           JOIN "StepExecution" s ON s."executionId" = e.id AND s.status = 'WAITING'
          WHERE e.id = $1`,
        [x.id],
      );
      expect(after).toEqual({ status: 'WAITING', version: x.version, resolvedBy: null });
      const applied = await t.query(`SELECT id FROM "AuditEntry" WHERE "targetId" = $1 AND outcome = 'APPLIED'`, [x.id]);
      expect(applied).toEqual([]);
      if (next.ok) {
        const enrolled = await t.query(`SELECT id FROM "WorkflowExecution" WHERE id = $1`, [next.executionId]);
        expect(enrolled).toHaveLength(1);
      }
    } finally {
      await closeDb(cut).catch(() => {});
    }
  });

  it('a client released inside a transaction is not handed to the next borrower', async () => {
    const cut = cutClient('release');
    try {
      const pool = poolOf(cut)!;
      const first = await pool.connect();
      const [{ pid: firstPid }] = (await first.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows as [{ pid: number }];
      await first.query('BEGIN');
      await first.query(`INSERT INTO "Project" (name) VALUES ('left-in-a-transaction')`);
      // Released as Prisma's adapter does after a ROLLBACK that never went out: no error.
      first.release();

      const second = await pool.connect();
      try {
        const { rows } = await second.query<{ pid: number; open: boolean }>(
          'SELECT pg_backend_pid() AS pid, pg_current_xact_id_if_assigned() IS NOT NULL AS open',
        );
        expect(rows[0]!.open).toBe(false);
        expect(rows[0]!.pid).not.toBe(firstPid);
        // BEGIN and COMMIT of the next borrower commit only its own work.
        await second.query('BEGIN');
        await second.query('SELECT 1');
        await second.query('COMMIT');
      } finally {
        second.release();
      }
      expect(await t.query(`SELECT id FROM "Project" WHERE name = 'left-in-a-transaction'`)).toEqual([]);
    } finally {
      await closeDb(cut).catch(() => {});
    }
  });

  it('the statement after a read timeout is not sent on the timed-out session', async () => {
    const cut = cutClient('timeout');
    try {
      const client = await poolOf(cut)!.connect();
      try {
        // The server-side bound off for this session: only the client's read timeout acts.
        await client.query('SET statement_timeout = 0');
        await expect(client.query('SELECT pg_sleep(3)')).rejects.toThrow(/Query read timeout/);
        const started = Date.now();
        // Before the fix this was queued behind pg_sleep on the same session.
        await expect(client.query('SELECT 1')).rejects.toThrow(/Connection terminated|not queryable/i);
        expect(Date.now() - started).toBeLessThan(500);
      } finally {
        client.release();
      }
      const [row] = await cut.$queryRaw<{ ok: number }[]>`SELECT 1 AS ok`;
      expect(row?.ok).toBe(1);
    } finally {
      await closeDb(cut).catch(() => {});
    }
  }, 20_000);

  it('a statement waiting on a lock past the bound is cancelled by the server, which releases its locks, before the client gives up', async () => {
    const x = await parkedExecution();
    const cut = cutClient('server');
    try {
      const [settings] = await cut.$queryRaw<{ statement: string; idle: string }[]>`
        SELECT current_setting('statement_timeout') AS statement, current_setting('idle_in_transaction_session_timeout') AS idle`;
      expect(settings).toEqual({ statement: `${serverTimeoutMs(QUERY_TIMEOUT_MS)}ms`, idle: `${serverTimeoutMs(QUERY_TIMEOUT_MS)}ms` });

      const { released } = await holdRow(x.id, 3000);
      const error = await cut
        .$transaction(async (tx) => tx.$executeRaw`UPDATE "WorkflowExecution" SET "updatedAt" = now() WHERE id = ${x.id}::uuid`, { timeout: 10_000 })
        .then(
          () => null,
          (e: unknown) => e,
        );
      expect(String(error)).toMatch(/statement timeout/);
      // Nothing of the session waits on the row any more (without the server's bound it
      // would, until the holder lets go).
      const waiting = await t.query(`SELECT pid FROM pg_stat_activity WHERE application_name = 'wp-poison-server' AND wait_event_type = 'Lock'`);
      expect(waiting).toEqual([]);
      await released;
    } finally {
      await closeDb(cut).catch(() => {});
    }
  });
});
