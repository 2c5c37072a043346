import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeDb, createDb, type Db } from '../../server/db';
import { ConflictError } from '../../server/trpc/trpc';
import type { Actor } from '../../server/auth/actor';
import { actorFor, callerFor, expectCode } from '../support/callers';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createProject, holdExecutionRow, parkedAtWait, waitWorkflow, workflowFrom } from '../support/fixtures';

// A repair waiting on a row that other work holds. It waits as long as the engine's own
// transactions may (TRANSACTION_POLICY.ENGINE), not Prisma's 5 s default; and when the database
// does not let it finish (here: the server's statement timeout, below a 1 s query timeout)
// it answers a typed, retryable BUSY (503, data.conflict.reason BUSY), changes nothing,
// and the attempt is audited FAILED. Before, both answered INTERNAL_SERVER_ERROR.

let t: TestDatabase;
let projectId = '';
let workflowId = '';
let operator: Actor;
let seq = 0;

beforeAll(async () => {
  t = await freshDatabase();
  projectId = (await createProject(t.db)).id;
  workflowId = (await workflowFrom(t.db, projectId, waitWorkflow())).id;
  operator = actorFor(projectId, 'OPERATOR');
});
afterAll(async () => {
  await t?.drop();
});

const parkedExecution = () => parkedAtWait(t.db, projectId, workflowId, `parked-${seq++}@example.com`);
const holdRow = (executionId: string, ms: number) => holdExecutionRow(t.url, executionId, ms);

async function unchanged(x: { id: string; version: number }) {
  const after = await t.db.workflowExecution.findUniqueOrThrow({ where: { id: x.id } });
  expect({ status: after.status, version: after.version }).toEqual({ status: 'WAITING', version: x.version });
  const wait = await t.db.stepExecution.findFirstOrThrow({ where: { executionId: x.id, status: 'WAITING' } });
  expect(wait.resolvedBy).toBeNull();
}

function expectBusy(error: { cause?: unknown; message: string }) {
  expect(error.cause).toBeInstanceOf(ConflictError);
  expect((error.cause as ConflictError).conflict).toMatchObject({ reason: 'BUSY' });
  expect(error.message).toMatch(/nothing was changed/);
}

describe('a repair waiting on a row other work holds', () => {
  it("waits past Prisma's 5 s default, as the engine's transactions do, and applies", async () => {
    const x = await parkedExecution();
    const { released } = await holdRow(x.id, 6500);
    const applied = await callerFor(t.db, operator).repair.applyOne({ action: 'FORCE_TIMEOUT', executionId: x.id, expectedVersion: x.version, reason: 'overdue' });
    await released;
    expect(applied).toMatchObject({ ok: true, action: 'FORCE_TIMEOUT', executionId: x.id });
  }, 30_000);

  describe('that the database does not let finish', () => {
    let cut: Db;
    beforeAll(() => {
      cut = createDb(t.url, { poolSize: 2, queryTimeoutMs: 1000, applicationName: 'wp-busy' });
    });
    afterAll(async () => {
      await closeDb(cut).catch(() => {});
    });

    it('repair.applyOne answers BUSY (SERVICE_UNAVAILABLE), changes nothing, and the attempt is audited FAILED', async () => {
      const x = await parkedExecution();
      const { released } = await holdRow(x.id, 3000);
      const error = await expectCode(
        callerFor(cut, operator).repair.applyOne({ action: 'FORCE_TIMEOUT', executionId: x.id, expectedVersion: x.version, reason: 'overdue' }),
        'SERVICE_UNAVAILABLE',
      );
      await released;
      expectBusy(error);
      await unchanged(x);
      const audit = await t.db.auditEntry.findMany({ where: { targetId: x.id, action: 'repair.FORCE_TIMEOUT' } });
      expect(audit.map((a) => a.outcome)).toEqual(['FAILED']);
      expect(audit[0]!.after).toMatchObject({ reason: 'BUSY' });
      expect(audit[0]!.reason).toBe('overdue');

      // Retried once the row is free, the same request applies.
      const retried = await callerFor(cut, operator).repair.applyOne({ action: 'FORCE_TIMEOUT', executionId: x.id, expectedVersion: x.version, reason: 'overdue' });
      expect(retried).toMatchObject({ ok: true });
    });

    it('waits.resolve answers BUSY, changes nothing, and is audited FAILED', async () => {
      const x = await parkedExecution();
      const { released } = await holdRow(x.id, 3000);
      const error = await expectCode(
        callerFor(cut, actorFor(projectId, 'MARKETER')).waits.resolve({ stepExecutionId: x.stepExecutionId, outcome: 'TIMEOUT', expectedVersion: x.version }),
        'SERVICE_UNAVAILABLE',
      );
      await released;
      expectBusy(error);
      await unchanged(x);
      const audit = await t.db.auditEntry.findMany({ where: { action: 'waits.resolve', outcome: 'FAILED', targetId: x.stepExecutionId } });
      expect(audit).toHaveLength(1);
    });

    it('a bulk repair reports the busy row as not repaired and goes on with the others', async () => {
      const held = await parkedExecution();
      const free = await parkedExecution();
      const { released } = await holdRow(held.id, 3000);
      const run = await callerFor(cut, operator).repair.applyMany({
        action: 'FORCE_TIMEOUT',
        reason: 'incident',
        filter: { executionIds: [held.id, free.id] },
      });
      await released;
      const byId = new Map(run.items.map((i) => [i.executionId, i]));
      expect(byId.get(held.id)).toMatchObject({ outcome: 'SKIPPED', detail: expect.stringMatching(/nothing was changed; retry/) });
      expect(byId.get(free.id)).toMatchObject({ outcome: 'APPLIED' });
      await unchanged(held);
    });
  });
});
