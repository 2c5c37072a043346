import { describe, expect, it } from 'vitest';
import { checkInvariants } from '../../../server/engine/invariants';
import { waitWorkflow, workflowFrom } from '../../support/fixtures';
import { t, projectId, marketer, operator, viewer, outsider, as, expectCode, conflictOf, auditOf, runWorkers, setUpRouterTests } from './support';

setUpRouterTests();

describe('waits.resolve', () => {
  async function parkedWait(timeoutSeconds = 3600) {
    const wf = await workflowFrom(t.db, projectId, waitWorkflow({}, timeoutSeconds));
    const { executionId } = await as(marketer).enrollments.enroll({ workflowId: wf.id, email: `wait-${Math.random()}@example.com` });
    await runWorkers();
    const execution = await t.db.workflowExecution.findUniqueOrThrow({ where: { id: executionId } });
    const step = await t.db.stepExecution.findFirstOrThrow({ where: { executionId, status: 'WAITING' } });
    return { executionId, version: execution.version, stepExecutionId: step.id };
  }

  it('TIMEOUT before the wait is due is forced by an operator: resolvedBy OPERATOR, audited so I8 holds', async () => {
    const w = await parkedWait();
    const result = await as(operator).waits.resolve({ stepExecutionId: w.stepExecutionId, outcome: 'TIMEOUT', expectedVersion: w.version });
    expect(result).toEqual({ executionId: w.executionId, branch: 'TIMEOUT' });
    expect(await t.db.stepExecution.findUniqueOrThrow({ where: { id: w.stepExecutionId } })).toMatchObject({ resolvedBy: 'OPERATOR', resolvedBranch: 'TIMEOUT' });
    expect(await auditOf(w.executionId)).toEqual(
      expect.arrayContaining([expect.objectContaining({ action: 'waits.resolve', outcome: 'APPLIED', actor: operator.id })]),
    );
    expect((await checkInvariants(t.db)).find((i) => i.id === 'I8')!.violations).toBe(0);

    // The same wait again: CONFLICT WAIT_RESOLVED saying who won and when, audited as LOST.
    const error = await expectCode(
      as(operator).waits.resolve({ stepExecutionId: w.stepExecutionId, outcome: 'EVENT', expectedVersion: w.version + 1 }),
      'CONFLICT',
    );
    expect(conflictOf(error)).toEqual({ reason: 'WAIT_RESOLVED', resolvedBy: 'OPERATOR', at: expect.any(Date) });
    expect((await auditOf(w.executionId)).filter((e) => e.outcome === 'LOST')).toHaveLength(1);
  });

  it('TIMEOUT once the wait is due is the timeout itself: resolvedBy TIMEOUT', async () => {
    const w = await parkedWait();
    await t.db.stepExecution.update({ where: { id: w.stepExecutionId }, data: { dueAt: new Date(Date.now() - 1000) } });
    await as(operator).waits.resolve({ stepExecutionId: w.stepExecutionId, outcome: 'TIMEOUT', expectedVersion: w.version });
    expect((await t.db.stepExecution.findUniqueOrThrow({ where: { id: w.stepExecutionId } })).resolvedBy).toBe('TIMEOUT');
  });

  it('a stale expectedVersion loses: CONFLICT STALE_VERSION with the current version and status, nothing resolved', async () => {
    const w = await parkedWait();
    const error = await expectCode(
      as(operator).waits.resolve({ stepExecutionId: w.stepExecutionId, outcome: 'EVENT', expectedVersion: w.version - 1 }),
      'CONFLICT',
    );
    expect(conflictOf(error)).toEqual({ reason: 'STALE_VERSION', currentVersion: w.version, status: 'WAITING' });
    expect((await t.db.stepExecution.findUniqueOrThrow({ where: { id: w.stepExecutionId } })).resolvedBy).toBeNull();
  });

  it("EVENT with the contact's event resumes on the EVENT branch; another project's wait is NOT_FOUND; viewers may not", async () => {
    const w = await parkedWait();
    const execution = await t.db.workflowExecution.findUniqueOrThrow({ where: { id: w.executionId }, include: { contact: true } });
    // Stored without dispatch, as an operator would find it: it did not resume the wait.
    const event = await t.db.event.create({ data: { projectId, contactId: execution.contactId, name: 'purchase', data: { sku: 'X' }, processedAt: new Date() } });
    await expectCode(as(outsider).waits.resolve({ stepExecutionId: w.stepExecutionId, outcome: 'EVENT', expectedVersion: w.version }), 'NOT_FOUND');
    await expectCode(as(viewer).waits.resolve({ stepExecutionId: w.stepExecutionId, outcome: 'EVENT', expectedVersion: w.version }), 'FORBIDDEN');
    await expectCode(
      as(operator).waits.resolve({ stepExecutionId: w.stepExecutionId, outcome: 'TIMEOUT', eventId: event.id, expectedVersion: w.version }),
      'BAD_REQUEST',
    );
    const result = await as(operator).waits.resolve({ stepExecutionId: w.stepExecutionId, outcome: 'EVENT', eventId: event.id, expectedVersion: w.version });
    expect(result.branch).toBe('EVENT');
    expect(await t.db.stepExecution.findUniqueOrThrow({ where: { id: w.stepExecutionId } })).toMatchObject({ resolvedBy: 'EVENT', resumeEventId: event.id });
  });
});
