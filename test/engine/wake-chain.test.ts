import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { advanceFromWait, claimDueWaits, lockDueWaits } from '../../server/engine/claims';
import { createEngineContext } from '../../server/engine/context';
import { enroll } from '../../server/engine/enrollment';
import { processDueWaits } from '../../server/engine/runner';
import { rawTransaction } from '../../server/db';
import { freshDatabase, type TestDatabase } from '../support/database';
import { runStepsOnly } from '../support/drive';
import { createProject, delayWorkflow, stepId, workflowFrom } from '../support/fixtures';
import { expectNoViolations } from '../support/race';

// The timer's wake-up: a due DELAY is resolved, and the advance past it claims the step
// that follows in the same statement (advanceFromWait's claimNext), as claimStep would
// with the version the advance writes; a stale continuation still changes nothing.

let t: TestDatabase;
let projectId: string;

beforeAll(async () => {
  t = await freshDatabase();
  projectId = (await createProject(t.db)).id;
});
afterAll(async () => t?.drop());

/** An execution parked on its DELAY, made due now. */
async function dueDelay(workflowId: string, email: string): Promise<string> {
  const enrolled = await enroll(t.db, { projectId, workflowId, email });
  if (!enrolled.ok) throw new Error(`enroll refused: ${enrolled.reason}`);
  await runStepsOnly(t.db);
  await t.query(`UPDATE "StepExecution" SET "dueAt" = now() - interval '1 second' WHERE "executionId" = $1 AND status = 'WAITING'`, [
    enrolled.executionId,
  ]);
  return enrolled.executionId;
}

describe('the wake-up claims the next step with the advance', () => {
  it('advanceFromWait with claimNext returns the next step claimed, the version moved by two; replayed, it loses', async () => {
    const wf = await workflowFrom(t.db, projectId, delayWorkflow(3600));
    const mail = await stepId(t.db, wf.id, 'mail');
    const executionId = await dueDelay(wf.id, 'wake-claim@example.com');
    const [wait] = await rawTransaction(t.db, 'ENGINE', async (tx) => claimDueWaits(tx, { stepExecutionIds: await lockDueWaits(tx, { limit: 10 }) }));
    expect(wait).toMatchObject({ executionId, branch: null });
    const advance = {
      executionId,
      expectedVersion: wait!.version,
      stepExecutionId: wait!.stepExecutionId,
      waitStepId: wait!.stepId,
      nextStepId: mail,
      status: 'RUNNING' as const,
      claimNext: { leaseSeconds: 30, owner: 'waker' },
    };
    const result = await advanceFromWait(t.db, advance);
    if (!result.won) throw new Error('the continuation lost');
    expect(result.version).toBe(wait!.version + 2);
    expect(result.next).toMatchObject({ executionId, version: wait!.version + 2, stepId: mail, attempt: 1, contactEmail: 'wake-claim@example.com' });
    const [row] = await t.query(
      `SELECT s.status, s."claimToken", s."leaseOwner", s."leaseExpiresAt" > now() AS live, e."readyAt" > now() AS leased, e.status AS execution
         FROM "StepExecution" s JOIN "WorkflowExecution" e ON e.id = s."executionId"
        WHERE s."executionId" = $1 AND s."stepId" = $2`,
      [executionId, mail],
    );
    expect(row).toEqual({ status: 'RUNNING', claimToken: result.next!.claimToken, leaseOwner: 'waker', live: true, leased: true, execution: 'RUNNING' });
    // The same continuation again (a sweeper that looked before): it changes nothing.
    const replay = await advanceFromWait(t.db, advance);
    expect(replay).toMatchObject({ won: false, current: { version: wait!.version + 2, status: 'RUNNING', currentStepId: mail } });
    await expectNoViolations(t.db, 'after the replay');
  });

  it("the timer's pass drives the execution on from the claim it got with the advance", async () => {
    const wf = await workflowFrom(t.db, projectId, delayWorkflow(3600));
    const executionId = await dueDelay(wf.id, 'wake-drive@example.com');
    const ctx = createEngineContext(t.db);
    expect(await processDueWaits(ctx, 10)).toBe(1);
    const [row] = await t.query(
      `SELECT e.status, (SELECT count(*)::int FROM "StepExecution" s WHERE s."executionId" = e.id AND s.status = 'COMPLETED') AS completed,
              (SELECT count(*)::int FROM "Message" m WHERE m."executionId" = e.id) AS messages
         FROM "WorkflowExecution" e WHERE e.id = $1`,
      [executionId],
    );
    expect(row).toEqual({ status: 'COMPLETED', completed: 3, messages: 1 });
    await expectNoViolations(t.db, 'after the pass');
  });
});
