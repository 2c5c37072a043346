import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { advanceFromWait, advanceFromWaits, claimDueWaits, lockDueWaits } from '../../server/engine/claims';
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
      claimNext: true,
    };
    const result = await advanceFromWait(t.db, advance, { leaseSeconds: 30, owner: 'waker' });
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
    const replay = await advanceFromWait(t.db, advance, { leaseSeconds: 30, owner: 'waker' });
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
  it('the timer resolves a batch of due waits in one pass and advances them in one statement: the first `drive` run on here, the rest are left due to the step queue', async () => {
    const wf = await workflowFrom(t.db, projectId, delayWorkflow(3600));
    const mail = await stepId(t.db, wf.id, 'mail');
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) ids.push(await dueDelay(wf.id, `wake-batch-${i}@example.com`));
    const ctx = createEngineContext(t.db);
    expect(await processDueWaits(ctx, 100, 3)).toBe(10);
    const rows = await t.query(
      `SELECT e.status, e."currentStepId" AS step, e."readyAt" <= now() AS due,
              (SELECT count(*)::int FROM "StepExecution" s WHERE s."executionId" = e.id AND s."stepId" = $2) AS "mailRows"
         FROM "WorkflowExecution" e WHERE e.id = ANY($1::uuid[])`,
      [ids, mail],
    );
    // Three driven to the end here; seven moved past their DELAY to "mail", RUNNING and due, unclaimed.
    expect(rows.filter((r) => r.status === 'COMPLETED')).toHaveLength(3);
    expect(rows.filter((r) => r.status === 'RUNNING')).toEqual(Array.from({ length: 7 }, () => ({ status: 'RUNNING', step: mail, due: true, mailRows: 0 })));
    await runStepsOnly(t.db);
    const [done] = await t.query(`SELECT count(*)::int AS n FROM "WorkflowExecution" WHERE id = ANY($1::uuid[]) AND status = 'COMPLETED'`, [ids]);
    expect(done.n).toBe(10);
    const [mails] = await t.query(`SELECT count(*)::int AS n FROM "Message" WHERE "executionId" = ANY($1::uuid[])`, [ids]);
    expect(mails.n).toBe(10);
    await expectNoViolations(t.db, 'after the batch');
  });

  it('in one advanceFromWaits statement each row is fenced on its own: a stale row loses alone', async () => {
    const wf = await workflowFrom(t.db, projectId, delayWorkflow(3600));
    const mail = await stepId(t.db, wf.id, 'mail');
    const a = await dueDelay(wf.id, 'wake-fence-a@example.com');
    const b = await dueDelay(wf.id, 'wake-fence-b@example.com');
    const waits = await rawTransaction(t.db, 'ENGINE', async (tx) => claimDueWaits(tx, { stepExecutionIds: await lockDueWaits(tx, { limit: 10 }) }));
    expect(waits.map((w) => w.executionId).sort()).toEqual([a, b].sort());
    const results = await advanceFromWaits(
      t.db,
      waits.map((w) => ({
        executionId: w.executionId,
        // b's continuation saw an older version (a stale sweeper).
        expectedVersion: w.executionId === b ? w.version - 1 : w.version,
        stepExecutionId: w.stepExecutionId,
        waitStepId: w.stepId,
        nextStepId: mail,
        status: 'RUNNING' as const,
      })),
    );
    const byId = new Map(waits.map((w, i) => [w.executionId, results[i]!]));
    expect(byId.get(a)).toMatchObject({ won: true, next: null });
    expect(byId.get(b)).toMatchObject({ won: false, current: { status: 'WAITING' } });
    const [row] = await t.query(`SELECT status, "currentStepId" FROM "WorkflowExecution" WHERE id = $1`, [b]);
    expect(row).toEqual({ status: 'WAITING', currentStepId: waits.find((w) => w.executionId === b)!.stepId });
  });
});
