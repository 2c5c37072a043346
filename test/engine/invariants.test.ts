import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../server/db';
import { checkInvariants } from '../../server/engine/invariants';
import { countStuck } from '../../server/stuck/counts';
import { freshDatabase, type TestDatabase } from '../support/database';
import { healthyRun, violations, type Healthy } from '../support/healthy-run';

// The invariant queries (server/engine/invariants.ts) must see nothing
// wrong on a healthy database full of real executions in every state the engine and its
// operators leave, and each one must fire on a hand-made violation of it. The healthy
// database is made only by the engine (enrollment, workers, events, timers, failures,
// repairs through the tRPC router); each violation is made by hand in a database of its
// own, dropping the index or constraint that would refuse it.

describe('invariant queries on a healthy run', () => {
  let t: TestDatabase;
  let run: Healthy;
  beforeAll(async () => {
    t = await freshDatabase();
    run = await healthyRun(t);
  }, 120_000);
  afterAll(async () => t?.drop());

  it('the run left executions, steps, emails and events in every state', async () => {
    const statuses = await t.query(`SELECT DISTINCT status::text AS s FROM "WorkflowExecution"`);
    expect(statuses.map((r) => r.s).sort()).toEqual(['CANCELLED', 'COMPLETED', 'FAILED', 'RUNNING', 'WAITING']);
    const resolvers = await t.query(`SELECT DISTINCT "resolvedBy"::text AS r FROM "StepExecution" WHERE "resolvedBy" IS NOT NULL`);
    expect(resolvers.map((r) => r.r).sort()).toEqual(['EVENT', 'OPERATOR', 'TIMEOUT']);
    const steps = await t.query(`SELECT DISTINCT status::text AS s FROM "StepExecution"`);
    expect(steps.map((r) => r.s).sort()).toEqual(['COMPLETED', 'FAILED', 'PENDING', 'RUNNING', 'SKIPPED', 'WAITING']);
    const mail = await t.query(`SELECT DISTINCT status::text AS s FROM "Message"`);
    expect(mail.map((r) => r.s).sort()).toEqual(['ABANDONED', 'FAILED', 'SENDING', 'SENT']);
    const stuck = await countStuck(t.db, { projectId: run.projectId, graceSeconds: 0 });
    expect(stuck).toMatchObject({ FAILED: 1, EVENT_DEAD: 1, MESSAGE_UNCONFIRMED: 1, MESSAGE_FAILED: 1 });
    // The merging branches were both taken, by different executions: EVENT -> thanks, TIMEOUT -> nudge -> thanks.
    const merged = await t.query(
      `SELECT e.id, array_agg(ws.key ORDER BY s."startedAt", ws.key) AS keys FROM "WorkflowExecution" e
         JOIN "StepExecution" s ON s."executionId" = e.id JOIN "WorkflowStep" ws ON ws.id = s."stepId"
        WHERE e.id = ANY($1::uuid[]) GROUP BY e.id`,
      [[run.ids.mergeEvt, run.ids.mergeTmo]],
    );
    const byId = Object.fromEntries(merged.map((r) => [r.id, r.keys]));
    expect(byId[run.ids.mergeEvt!]).toEqual(['start', 'wait', 'thanks']);
    expect(byId[run.ids.mergeTmo!]).toEqual(['start', 'wait', 'nudge', 'thanks']);
  });

  it('invariant queries see nothing wrong on a healthy run', async () => {
    expect(await violations(t.db)).toEqual({});
  });

  it('I1, I2, I3 and I5 are proven by their unique indexes while those are in place, and counted when one is not exactly it', async () => {
    const proof = async (db: Db) => Object.fromEntries((await checkInvariants(db)).map((r) => [r.id, r.provenBy]));
    expect(await proof(t.db)).toEqual({
      I1: 'WorkflowExecution_active_workflowId_contactId_key',
      I2: 'StepExecution_executionId_stepId_key',
      I3: 'WorkflowExecution_workflowId_sourceEventId_key',
      I4: null,
      I5: 'Message_stepExecutionId_key',
      I6: null,
      I7: null,
      I8: null,
      I9: null,
    });
    // An index of the same name that does not enforce the same thing proves nothing.
    const replaced = [
      // not unique
      [`DROP INDEX "Message_stepExecutionId_key"`, `CREATE INDEX "Message_stepExecutionId_key" ON "Message" ("stepExecutionId")`],
      // another predicate
      [
        `DROP INDEX "WorkflowExecution_active_workflowId_contactId_key"`,
        `CREATE UNIQUE INDEX "WorkflowExecution_active_workflowId_contactId_key" ON "WorkflowExecution" ("workflowId", "contactId") WHERE status = 'RUNNING'`,
      ],
      // other columns
      [
        `DROP INDEX "StepExecution_executionId_stepId_key"`,
        `CREATE UNIQUE INDEX "StepExecution_executionId_stepId_key" ON "StepExecution" ("stepId", "executionId")`,
      ],
      // gone
      [`DROP INDEX "WorkflowExecution_workflowId_sourceEventId_key"`],
    ];
    const expected = ['I5', 'I1', 'I2', 'I3'];
    for (const [i, sql] of replaced.entries()) {
      class Rollback extends Error {}
      await t.db
        .$transaction(async (tx) => {
          for (const statement of sql) await tx.$executeRawUnsafe(statement);
          const results = await checkInvariants(tx as unknown as Db);
          const counted = results.find((r) => r.id === expected[i])!;
          expect(counted, expected[i]).toMatchObject({ provenBy: null, violations: 0 });
          throw new Rollback();
        })
        .catch((e: unknown) => {
          if (!(e instanceof Rollback)) throw e;
        });
    }
  });
});
