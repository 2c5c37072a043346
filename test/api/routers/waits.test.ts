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
    expect(result).toEqual({ executionId: w.executionId, branch: 'TIMEOUT', resolvedBy: 'OPERATOR', eventId: null, eventNotTaken: null });
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
    expect(result).toMatchObject({ branch: 'EVENT', resolvedBy: 'EVENT', eventId: event.id, eventNotTaken: null });
    expect(await t.db.stepExecution.findUniqueOrThrow({ where: { id: w.stepExecutionId } })).toMatchObject({ resolvedBy: 'EVENT', resumeEventId: event.id });
  });

  // Event time decides here too: EVENT is the event's only with an event the wait would
  // take. Before, any event of the contact (another name, after the deadline) or none at
  // all was recorded as resolvedBy EVENT, and the wrong one became context.lastEvent.
  describe('EVENT counts as the event’s only with an event the wait takes; otherwise it is OPERATOR’s', () => {
    async function windowed() {
      const w = await parkedWait();
      const row = await t.db.stepExecution.findUniqueOrThrow({ where: { id: w.stepExecutionId } });
      const execution = await t.db.workflowExecution.findUniqueOrThrow({ where: { id: w.executionId } });
      const at = (ms: number) => new Date(row.startedAt!.getTime() + ms);
      const event = (name: string, createdAt: Date) =>
        t.db.event.create({ data: { projectId, contactId: execution.contactId, name, data: { name }, createdAt, processedAt: new Date() } });
      return { ...w, row, at, event };
    }
    const resolveWith = (w: { stepExecutionId: string; version: number }, eventId?: string) =>
      as(operator).waits.resolve({ stepExecutionId: w.stepExecutionId, outcome: 'EVENT', expectedVersion: w.version, ...(eventId ? { eventId } : {}) });
    const lastEventOf = async (executionId: string) =>
      ((await t.db.workflowExecution.findUniqueOrThrow({ where: { id: executionId } })).context as { lastEvent?: unknown }).lastEvent;

    it.each([
      ['an event of another name', 'OTHER_NAME', (w: Awaited<ReturnType<typeof windowed>>) => w.event('browse', w.at(1000))],
      ['an event accepted after the deadline', 'AFTER_DEADLINE', (w: Awaited<ReturnType<typeof windowed>>) => w.event('purchase', new Date(w.row.dueAt!.getTime() + 1000))],
      ['an event accepted before the wait began', 'BEFORE_WAIT', (w: Awaited<ReturnType<typeof windowed>>) => w.event('purchase', w.at(-60_000))],
    ] as const)('%s: the EVENT branch is forced by the caller (OPERATOR), without the event, and the answer says why (%s)', async (_, why, make) => {
      const w = await windowed();
      const event = await make(w);
      const result = await resolveWith(w, event.id);
      expect(await t.db.stepExecution.findUniqueOrThrow({ where: { id: w.stepExecutionId } })).toMatchObject({ resolvedBy: 'OPERATOR', resolvedBranch: 'EVENT', resumeEventId: null });
      expect(await lastEventOf(w.executionId)).toBeUndefined();
      expect(result).toMatchObject({ branch: 'EVENT', resolvedBy: 'OPERATOR', eventId: null, eventNotTaken: { eventId: event.id, why } });
      const audit = (await auditOf(w.executionId)).find((e) => e.action === 'waits.resolve')!;
      expect(audit).toMatchObject({ outcome: 'APPLIED', after: expect.objectContaining({ resolvedBy: 'OPERATOR', eventNotTaken: { eventId: event.id, why } }) });
      expect((await checkInvariants(t.db)).find((i) => i.id === 'I4')!.violations).toBe(0);
    });

    it('without an eventId it is OPERATOR’s, with no lastEvent', async () => {
      const w = await windowed();
      expect(await resolveWith(w)).toMatchObject({ branch: 'EVENT', resolvedBy: 'OPERATOR', eventId: null });
      expect(await t.db.stepExecution.findUniqueOrThrow({ where: { id: w.stepExecutionId } })).toMatchObject({ resolvedBy: 'OPERATOR', resumeEventId: null });
      expect(await lastEventOf(w.executionId)).toBeUndefined();
    });

    it('an event of its name accepted inside the window is the event’s: EVENT, and its data is context.lastEvent', async () => {
      const w = await windowed();
      const event = await w.event('purchase', w.at(1000));
      expect(await resolveWith(w, event.id)).toMatchObject({ resolvedBy: 'EVENT', eventId: event.id, eventNotTaken: null });
      expect(await lastEventOf(w.executionId)).toMatchObject({ name: 'purchase', data: { name: 'purchase' } });
    });
  });

  describe('TIMEOUT follows the timer’s rule', () => {
    it('an event accepted inside the window and never dispatched takes the EVENT branch; ignoreInWindowEvents times out past it, audited', async () => {
      const first = await parkedWait();
      const second = await parkedWait();
      for (const w of [first, second]) {
        const execution = await t.db.workflowExecution.findUniqueOrThrow({ where: { id: w.executionId } });
        // The window: started an hour ago, due a second ago; the purchase came 30 s before the deadline.
        await t.db.stepExecution.update({ where: { id: w.stepExecutionId }, data: { startedAt: new Date(Date.now() - 3600_000), dueAt: new Date(Date.now() - 1000) } });
        await t.db.event.create({
          data: { projectId, contactId: execution.contactId, name: 'purchase', data: { late: true }, createdAt: new Date(Date.now() - 31_000), nextDispatchAt: new Date(Date.now() + 3600_000) },
        });
      }
      expect(await as(operator).waits.resolve({ stepExecutionId: first.stepExecutionId, outcome: 'TIMEOUT', expectedVersion: first.version })).toMatchObject({
        branch: 'EVENT',
        resolvedBy: 'EVENT',
        eventId: expect.any(String),
      });
      expect(
        await as(operator).waits.resolve({ stepExecutionId: second.stepExecutionId, outcome: 'TIMEOUT', ignoreInWindowEvents: true, expectedVersion: second.version }),
      ).toMatchObject({ branch: 'TIMEOUT', resolvedBy: 'TIMEOUT', eventId: null });
      expect((await auditOf(second.executionId)).find((e) => e.action === 'waits.resolve')!.before).toMatchObject({ ignoreInWindowEvents: true });
      await expectCode(
        as(operator).waits.resolve({ stepExecutionId: second.stepExecutionId, outcome: 'EVENT', ignoreInWindowEvents: true, expectedVersion: second.version + 1 }),
        'BAD_REQUEST',
      );
      expect((await checkInvariants(t.db)).find((i) => i.id === 'I4')!.violations).toBe(0);
    });
  });
});
