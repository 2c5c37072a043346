import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimWait } from '../../server/engine/claims/waits';
import { createEngineContext } from '../../server/engine/context';
import { enroll } from '../../server/engine/enrollment';
import { checkInvariants } from '../../server/engine/invariants';
import { processPendingContinuations } from '../../server/engine/runner';
import { freshDatabase, type TestDatabase } from '../support/database';
import { runStepsOnly } from '../support/drive';
import { createProject, waitWorkflow, workflowFrom } from '../support/fixtures';

// The continuation sweeper: a wait resolved by an event whose resolver died before it
// advanced the execution is re-driven by the next worker pass, down the event's branch,
// with the event read as context (context.lastEvent), exactly as the resolver would have.

let t: TestDatabase;
let projectId: string;

beforeAll(async () => {
  t = await freshDatabase();
  projectId = (await createProject(t.db)).id;
});
afterAll(async () => t?.drop());

describe('processPendingContinuations', () => {
  it('re-drives a wait an event resolved, with that event as context.lastEvent, once', async () => {
    const wf = await workflowFrom(t.db, projectId, waitWorkflow());
    const enrolled = await enroll(t.db, { projectId, workflowId: wf.id, email: 'sweeper@example.com' });
    if (!enrolled.ok) throw new Error(`enroll refused: ${enrolled.reason}`);
    const { executionId } = enrolled;
    await runStepsOnly(t.db);
    const [wait] = await t.query<{ id: string; contactId: string }>(
      `SELECT s.id, e."contactId" FROM "StepExecution" s JOIN "WorkflowExecution" e ON e.id = s."executionId"
        WHERE s."executionId" = $1 AND s.status = 'WAITING'`,
      [executionId],
    );
    const [event] = await t.query<{ id: string; createdAt: Date }>(
      `INSERT INTO "Event" ("projectId", "contactId", name, data, "processedAt") VALUES ($1, $2, 'purchase', '{"total": 42}', now())
       RETURNING id, "createdAt"`,
      [projectId, wait!.contactId],
    );
    // The resolver's claim commits; the resolver dies before advancing.
    const claimed = await claimWait(t.db, { stepExecutionId: wait!.id, resolvedBy: 'EVENT', branch: 'EVENT', eventId: event!.id });
    expect(claimed.won).toBe(true);

    const ctx = createEngineContext(t.db, { config: { continuationGraceSeconds: 0 } });
    expect(await processPendingContinuations(ctx, 10)).toBe(1);
    await runStepsOnly(t.db);
    const execution = await t.db.workflowExecution.findUniqueOrThrow({ where: { id: executionId } });
    expect(execution.status).toBe('COMPLETED');
    expect(execution.context).toMatchObject({
      lastEvent: { name: 'purchase', data: { total: 42 }, at: new Date(event!.createdAt).toISOString() },
    });
    const subjects = (await t.db.message.findMany({ where: { executionId }, orderBy: { createdAt: 'asc' } })).map((m) => m.subject);
    expect(subjects).toEqual(['Hello sweeper@example.com', 'Thanks']);
    // Nothing left to re-drive.
    expect(await processPendingContinuations(ctx, 10)).toBe(0);
    expect((await checkInvariants(t.db)).filter((r) => r.violations > 0)).toEqual([]);
  });
});
