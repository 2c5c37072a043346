import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../server/db';
import { enroll } from '../../server/engine/enrollment';
import { freshDatabase, type TestDatabase } from '../support/database';
import { healthyRun, violations, type Counts, type Healthy } from '../support/healthy-run';

// The invariant queries (server/engine/invariants.ts) must see nothing
// wrong on a healthy database full of real executions in every state the engine and its
// operators leave, and each one must fire on a hand-made violation of it. The healthy
// database is made only by the engine (enrollment, workers, events, timers, failures,
// repairs through the tRPC router); each violation is made by hand in a database of its
// own, dropping the index or constraint that would refuse it.

describe('each invariant query fires on a hand-made violation', () => {
  let t: TestDatabase;
  let run: Healthy;
  /** A second, healthy project: a violation of the first is never counted in its health panel. */
  let bystander: Healthy;
  beforeAll(async () => {
    t = await freshDatabase();
    // The bystander first: a run drives every project's due work, and the states the
    // violations below are made from must be the ones the main run left.
    bystander = await healthyRun(t);
    run = await healthyRun(t);
    expect(await violations(t.db)).toEqual({});
  }, 240_000);
  afterAll(async () => t?.drop());

  /** Make a violation in a transaction, check the counts, and roll it back. */
  async function violated(sql: string[], params: unknown[][] = []): Promise<Counts> {
    let counts: Counts = {};
    await t.db
      .$transaction(async (tx) => {
        for (let i = 0; i < sql.length; i++) await tx.$executeRawUnsafe(sql[i]!, ...(params[i] ?? []));
        counts = await violationsIn(tx as unknown as Db);
        // health.invariants counts the caller's project only: the
        // violated project sees all of it, the other project none of it.
        expect(await violationsIn(tx as unknown as Db, run.projectId), 'in the violated project').toEqual(counts);
        expect(await violationsIn(tx as unknown as Db, bystander.projectId), 'in another project').toEqual({});
        throw new Rollback();
      })
      .catch((e: unknown) => {
        if (!(e instanceof Rollback)) throw e;
      });
    expect(await violations(t.db), 'rolled back').toEqual({});
    return counts;
  }
  class Rollback extends Error {}
  const violationsIn = violations;

  const exec = (name: string) => run.ids[name]!;

  it('I1: two active executions of one (workflow, contact)', async () => {
    expect(
      await violated(
        [
          `DROP INDEX "WorkflowExecution_active_workflowId_contactId_key"`,
          `INSERT INTO "WorkflowExecution"(id, "projectId", "workflowId", "workflowVersionId", "contactId", status, "currentStepId", "readyAt", "updatedAt")
           SELECT gen_random_uuid(), "projectId", "workflowId", "workflowVersionId", "contactId", status, "currentStepId", "readyAt", now()
             FROM "WorkflowExecution" WHERE id = $1::uuid`,
        ],
        [[], [exec('stalled')]],
      ),
    ).toEqual({ I1: 1 });
  });

  it('I2: a second step row for one (execution, step)', async () => {
    expect(
      await violated(
        [
          `DROP INDEX "StepExecution_executionId_stepId_key"`,
          `INSERT INTO "StepExecution"(id, "executionId", "stepId", status, "finishedAt")
           SELECT gen_random_uuid(), s."executionId", s."stepId", 'COMPLETED', now() FROM "StepExecution" s
             JOIN "WorkflowStep" ws ON ws.id = s."stepId" AND ws.type = 'TRIGGER'
            WHERE s."executionId" = $1::uuid`,
        ],
        [[], [exec('evt1')]],
      ),
    ).toEqual({ I2: 1 });
  });

  it('I3: one source event enrolled twice in a workflow', async () => {
    expect(
      await violated(
        [
          `DROP INDEX "WorkflowExecution_workflowId_sourceEventId_key"`,
          `DROP INDEX "WorkflowExecution_active_workflowId_contactId_key"`,
          `INSERT INTO "WorkflowExecution"(id, "projectId", "workflowId", "workflowVersionId", "contactId", status, "sourceEventId", "finishedAt", "updatedAt")
           SELECT gen_random_uuid(), "projectId", "workflowId", "workflowVersionId", "contactId", 'COMPLETED', "sourceEventId", now(), now()
             FROM "WorkflowExecution" WHERE "sourceEventId" IS NOT NULL AND "projectId" = $1::uuid LIMIT 1`,
        ],
        [[], [], [run.projectId]],
      ),
    ).toEqual({ I3: 1 });
  });

  it('I4: a wait resolved by TIMEOUT that took the EVENT branch', async () => {
    expect(
      await violated([`UPDATE "StepExecution" SET "resolvedBranch" = 'EVENT' WHERE "executionId" = $1::uuid AND "resolvedBy" = 'TIMEOUT'`], [[exec('tmo1')]]),
    ).toEqual({ I4: 1 });
  });

  it('I4: a wait whose resolver was overwritten after it completed (the event and the timer both resolved it)', async () => {
    expect(
      await violated([`UPDATE "StepExecution" SET "resolvedBy" = 'TIMEOUT', "resolvedBranch" = 'TIMEOUT', "resumeEventId" = NULL WHERE "executionId" = $1::uuid AND "resolvedBy" = 'EVENT'`], [[exec('evt2')]]),
    ).toEqual({ I4: 1 });
  });

  it('I4: a wait resolved by its event and, as well, forced by an operator (two resolutions)', async () => {
    expect(
      await violated(
        [
          `INSERT INTO "AuditEntry"(id, "projectId", actor, action, "targetType", "targetId", reason, before, after, outcome)
           SELECT gen_random_uuid(), "projectId", 'user:late', 'repair.FORCE_TIMEOUT', 'execution', id::text, 'late',
                  jsonb_build_object('step', 'wait', 'version', version), jsonb_build_object('version', version + 2), 'APPLIED'
             FROM "WorkflowExecution" WHERE id = $1::uuid`,
        ],
        [[exec('evt1')]],
      ),
    ).toEqual({ I4: 1 });
  });

  it('I4: a wait forced twice by operators', async () => {
    expect(
      await violated(
        [
          `INSERT INTO "AuditEntry"(id, "projectId", actor, action, "targetType", "targetId", reason, before, after, outcome)
           SELECT gen_random_uuid(), "projectId", 'user:twice', action, "targetType", "targetId", reason, before, after, outcome
             FROM "AuditEntry" WHERE "targetId" = $1 AND action = 'repair.FORCE_TIMEOUT' AND outcome = 'APPLIED'`,
        ],
        [[exec('force')]],
      ),
    ).toEqual({ I4: 1 });
  });

  it('I4: a wait completed with no resolver', async () => {
    expect(
      await violated(
        [`UPDATE "StepExecution" SET "resolvedBy" = NULL, "resolvedAt" = NULL, "resolvedBranch" = NULL, output = '{}' WHERE "executionId" = $1::uuid AND "resolvedBy" = 'TIMEOUT'`],
        [[exec('tmo2')]],
      ),
    ).toEqual({ I4: 1 });
  });

  it('I5: two messages for one step execution', async () => {
    expect(
      await violated(
        [
          `DROP INDEX "Message_stepExecutionId_key"`,
          `INSERT INTO "Message"(id, "projectId", "executionId", "stepExecutionId", "to", subject, body, status)
           SELECT gen_random_uuid(), "projectId", "executionId", "stepExecutionId", "to", subject, body, 'QUEUED' FROM "Message" WHERE id = $1::uuid`,
        ],
        [[], [run.messages.mailResent]],
      ),
    ).toEqual({ I5: 1 });
  });

  it('I6: a step row still WAITING after its execution moved on', async () => {
    expect(
      await violated([`UPDATE "StepExecution" SET status = 'WAITING' WHERE "executionId" = $1::uuid AND "resolvedBy" IS NOT NULL`], [[exec('evt1')]]),
    ).toEqual({ I6: 1 });
  });

  it('I7: a RUNNING execution with no wake-up time', async () => {
    expect(await violated([`UPDATE "WorkflowExecution" SET "readyAt" = NULL WHERE id = $1::uuid`], [[exec('stalled')]])).toEqual({ I7: 1 });
  });

  it('I7: an accepted event that is in no visible state (processed and dead-lettered at once)', async () => {
    expect(await violated([`UPDATE "Event" SET "processedAt" = now() WHERE "deadAt" IS NOT NULL AND "projectId" = $1::uuid`], [[run.projectId]])).toEqual({
      I7: 1,
    });
  });

  it('I7: an email left SENDING with no lease (never listed, never taken)', async () => {
    expect(await violated([`UPDATE "Message" SET "leaseExpiresAt" = NULL WHERE id = $1::uuid`], [[run.messages.mailUnconfirmed]])).toEqual({ I7: 1 });
  });

  it('I7: a SEND_EMAIL step recorded as queued whose email is gone', async () => {
    expect(await violated([`DELETE FROM "Message" WHERE id = $1::uuid`], [[run.messages.mailResent]])).toEqual({ I7: 1 });
  });

  it('I8: a cancelled execution whose only audit entry is another one (its enrollment)', async () => {
    expect(
      await violated(
        [
          `DELETE FROM "AuditEntry" WHERE "targetId" = $1 AND action = 'repair.CANCEL'`,
          `INSERT INTO "AuditEntry"(id, "projectId", actor, action, "targetType", "targetId", outcome)
           SELECT gen_random_uuid(), "projectId", 'user:x', 'enrollments.enroll', 'execution', id::text, 'APPLIED' FROM "WorkflowExecution" WHERE id = $1::uuid`,
        ],
        [[exec('cancelled')], [exec('cancelled')]],
      ),
    ).toEqual({ I8: 1 });
  });

  it('I8: a wait resolved by an operator with no entry for that resolution (only other repairs audited)', async () => {
    expect(
      await violated(
        [
          `UPDATE "AuditEntry" SET action = 'repair.RETRY_STEP' WHERE "targetId" = $1 AND action = 'repair.FORCE_TIMEOUT'`,
        ],
        [[exec('force')]],
      ),
    ).toEqual({ I8: 1 });
  });

  it('I8: a wait resolved by an operator through waits.resolve with no entry', async () => {
    expect(await violated([`DELETE FROM "AuditEntry" WHERE "targetId" = $1 AND action = 'waits.resolve'`], [[exec('resolveApi')]])).toEqual({ I8: 1 });
  });

  it('I8: a skipped step with no SKIP_STEP entry', async () => {
    expect(await violated([`DELETE FROM "AuditEntry" WHERE "targetId" = $1 AND action = 'repair.SKIP_STEP'`], [[exec('skipped')]])).toEqual({ I8: 1 });
  });

  it('I8: a step reset for a retry with no RETRY_STEP entry', async () => {
    expect(await violated([`DELETE FROM "AuditEntry" WHERE "targetId" = $1 AND action = 'repair.RETRY_STEP'`], [[exec('retryPending')]])).toEqual({ I8: 1 });
  });

  it('I8: an email given up on with no GIVE_UP entry', async () => {
    expect(await violated([`DELETE FROM "AuditEntry" WHERE "targetId" = $1 AND action = 'repair.GIVE_UP'`], [[run.messages.mailGivenUp]])).toEqual({ I8: 1 });
  });

  it('I9: an active execution, and its step row, at a step its version does not have (a step of another workflow)', async () => {
    // The composite foreign key refuses the execution's half while it is in place. The
    // step row moves with the execution (else I6 fires too), and each of the two counts.
    const foreignStep = `(SELECT s.id FROM "WorkflowStep" s JOIN "WorkflowExecution" x ON x.id = $1::uuid
                            WHERE s."workflowId" <> x."workflowId" ORDER BY s.id LIMIT 1)`;
    expect(
      await violated(
        [
          `ALTER TABLE "WorkflowExecution" DROP CONSTRAINT "WorkflowExecution_step_in_version_fkey"`,
          `UPDATE "StepExecution" SET "stepId" = ${foreignStep} WHERE "executionId" = $1::uuid AND status IN ('PENDING', 'RUNNING', 'WAITING')`,
          `UPDATE "WorkflowExecution" SET "currentStepId" = ${foreignStep} WHERE id = $1::uuid`,
        ],
        [[], [exec('stalled')], [exec('stalled')]],
      ),
    ).toEqual({ I9: 2 });
  });
});
