import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngineContext } from '../../server/engine/context';
import { enroll } from '../../server/engine/enrollment';
import { trackEvent } from '../../server/engine/events';
import { totalViolations, checkInvariants } from '../../server/engine/invariants';
import { runWorkerOnce } from '../../server/engine/worker';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createProject, delayWorkflow, waitWorkflow, workflowFrom } from '../support/fixtures';
import { expectNoViolations } from '../support/race';

let t: TestDatabase;
beforeAll(async () => {
  t = await freshDatabase();
});
afterAll(async () => t?.drop());

describe('an execution from enrollment to the end', () => {
  it('sends, waits, takes the EVENT branch when the event arrives, and completes', async () => {
    const ctx = createEngineContext(t.db);
    const project = await createProject(t.db);
    const wf = await workflowFrom(t.db, project.id, waitWorkflow());
    const enrolled = await enroll(t.db, { projectId: project.id, workflowId: wf.id, email: 'ann@example.com' });
    expect(enrolled).toMatchObject({ ok: true, created: true });
    const executionId = (enrolled as { executionId: string }).executionId;

    await runWorkerOnce(ctx);
    let execution = await t.db.workflowExecution.findUniqueOrThrow({ where: { id: executionId } });
    expect(execution.status).toBe('WAITING');
    expect(await t.db.message.count({ where: { executionId } })).toBe(1);

    const tracked = await trackEvent(ctx, { projectId: project.id, name: 'purchase', email: 'ANN@example.com', data: { total: 42 } });
    expect(tracked).toMatchObject({ ok: true, duplicate: false });
    await runWorkerOnce(ctx);

    execution = await t.db.workflowExecution.findUniqueOrThrow({ where: { id: executionId } });
    expect(execution.status).toBe('COMPLETED');
    expect(execution.context).toMatchObject({ lastEvent: { name: 'purchase', data: { total: 42 } } });
    const messages = await t.db.message.findMany({ where: { executionId }, orderBy: { createdAt: 'asc' } });
    expect(messages.map((m) => [m.subject, m.status])).toEqual([
      ['Hello ann@example.com', 'SENT'],
      ['Thanks', 'SENT'],
    ]);
    const wait = await t.db.stepExecution.findFirstOrThrow({ where: { executionId, step: { key: 'wait' } } });
    expect(wait).toMatchObject({ status: 'COMPLETED', resolvedBy: 'EVENT', resolvedBranch: 'EVENT' });
    expect(await totalViolations(t.db)).toBe(0);
  });

  it('times out a wait and takes the TIMEOUT branch', async () => {
    const ctx = createEngineContext(t.db);
    const project = await createProject(t.db);
    const wf = await workflowFrom(t.db, project.id, waitWorkflow({}, 0));
    const enrolled = await enroll(t.db, { projectId: project.id, workflowId: wf.id, email: 'bob@example.com' });
    const executionId = (enrolled as { executionId: string }).executionId;
    await runWorkerOnce(ctx);
    const execution = await t.db.workflowExecution.findUniqueOrThrow({ where: { id: executionId } });
    expect(execution.status).toBe('COMPLETED');
    const subjects = (await t.db.message.findMany({ where: { executionId }, orderBy: { createdAt: 'asc' } })).map((m) => m.subject);
    expect(subjects).toEqual(['Hello bob@example.com', 'Reminder']);
    expect(await checkInvariants(t.db)).toSatisfy((r: { violations: number }[]) => r.every((i) => i.violations === 0));
  });

  it('a DELAY of 0 continues at once, recorded as its timer would resolve it', async () => {
    const ctx = createEngineContext(t.db);
    const project = await createProject(t.db);
    const wf = await workflowFrom(t.db, project.id, delayWorkflow(0));
    const enrolled = await enroll(t.db, { projectId: project.id, workflowId: wf.id, email: 'cy@example.com' });
    const executionId = (enrolled as { executionId: string }).executionId;
    const counts = await runWorkerOnce(ctx);
    // No park/wake round trip: nothing was left for the timer.
    expect(counts.waits).toBe(0);
    const execution = await t.db.workflowExecution.findUniqueOrThrow({ where: { id: executionId } });
    expect(execution.status).toBe('COMPLETED');
    const pause = await t.db.stepExecution.findFirstOrThrow({ where: { executionId, step: { key: 'pause' } } });
    expect(pause).toMatchObject({ resolvedBy: 'TIMEOUT', resolvedBranch: null, status: 'COMPLETED' });
    expect(pause.dueAt).not.toBeNull();
    expect(pause.resolvedAt).not.toBeNull();
    expect(pause.output).toMatchObject({ delaySeconds: 0, resolvedBy: 'TIMEOUT', branch: null });
    await expectNoViolations(t.db, 'after a DELAY of 0');
  });
});
