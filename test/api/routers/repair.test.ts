import { describe, expect, it } from 'vitest';
import { checkInvariants } from '../../../server/engine/invariants';
import { waitWorkflow, workflowFrom } from '../../support/fixtures';
import { t, projectId, otherProjectId, marketer, operator, outsider, as, expectCode, conflictOf, auditOf, runWorkers, setUpRouterTests } from './support';

setUpRouterTests();

describe('repair', () => {
  /** Executions waiting past their timeout, which no timer has processed (WAIT_OVERDUE). */
  async function overdueMany(n: number) {
    const parked = [];
    for (let i = 0; i < n; i++) {
      const wf = await workflowFrom(t.db, projectId, waitWorkflow());
      const { executionId } = await as(marketer).enrollments.enroll({ workflowId: wf.id, email: `stuck-${Math.random()}@example.com` });
      parked.push({ workflowId: wf.id, executionId });
    }
    await runWorkers();
    // After the workers ran: they would have timed the waits out themselves.
    await t.db.stepExecution.updateMany({
      where: { executionId: { in: parked.map((p) => p.executionId) }, status: 'WAITING' },
      data: { dueAt: new Date(Date.now() - 60_000) },
    });
    return parked;
  }
  const overdue = async () => (await overdueMany(1))[0]!;

  it('preview, then apply with the previewed version; a stale version is CONFLICT naming the winner, audited as LOST', async () => {
    const { executionId } = await overdue();
    const preview = await as(operator).repair.preview({ executionId, action: 'FORCE_TIMEOUT' });
    expect(preview.plan).toMatchObject({ allowed: true, branch: 'TIMEOUT' });

    const stale = await expectCode(
      as(operator).repair.applyOne({ executionId, action: 'FORCE_TIMEOUT', expectedVersion: preview.expectedVersion - 1, reason: 'stale look' }),
      'CONFLICT',
    );
    expect(conflictOf(stale)).toMatchObject({ reason: 'STALE_VERSION', currentVersion: preview.expectedVersion, winner: { kind: expect.any(String) } });

    const applied = await as(operator).repair.applyOne({
      executionId,
      action: 'FORCE_TIMEOUT',
      expectedVersion: preview.expectedVersion,
      reason: 'customer asked for the reminder now',
    });
    expect(applied).toMatchObject({ ok: true, action: 'FORCE_TIMEOUT', executionId });
    const entries = (await auditOf(executionId)).filter((e) => e.action === 'repair.FORCE_TIMEOUT');
    expect(entries.map((e) => [e.outcome, e.actor, e.reason])).toEqual([
      ['LOST', operator.id, 'stale look'],
      ['APPLIED', operator.id, 'customer asked for the reminder now'],
    ]);

    // The same action again, with the old version: it was already resolved.
    const again = await expectCode(
      as(operator).repair.applyOne({ executionId, action: 'FORCE_TIMEOUT', expectedVersion: preview.expectedVersion, reason: 'double click' }),
      'CONFLICT',
    );
    expect(conflictOf(again)).toMatchObject({ reason: 'WAIT_RESOLVED', resolvedBy: 'OPERATOR', winner: { kind: 'operator', actor: operator.id } });
  });

  it('an action the state does not allow is PRECONDITION_FAILED with the refusal; foreign ids are NOT_FOUND and audited', async () => {
    const { executionId } = await overdue();
    const preview = await as(operator).repair.preview({ executionId, action: 'RESUME_CONTINUATION' });
    expect(preview.plan.allowed).toBe(false);
    const refused = await expectCode(
      as(operator).repair.applyOne({ executionId, action: 'RESUME_CONTINUATION', expectedVersion: preview.expectedVersion, reason: 'try it' }),
      'PRECONDITION_FAILED',
    );
    expect(conflictOf(refused)).toMatchObject({ reason: 'NOT_ALLOWED', refusal: preview.plan.refusal, status: 'WAITING' });

    await expectCode(as(outsider).repair.preview({ executionId, action: 'CANCEL' }), 'NOT_FOUND');
    const theirEvent = await as(outsider).events.track({ name: 'purchase', email: 'their-buyer@example.com' });
    await expectCode(as(operator).repair.preview({ executionId, action: 'DELIVER_EVENT', eventId: theirEvent.eventId }), 'NOT_FOUND');
    await expectCode(as(outsider).repair.applyOne({ executionId, action: 'CANCEL', expectedVersion: 1, reason: 'not mine' }), 'NOT_FOUND');
    expect(await t.db.auditEntry.count({ where: { projectId: otherProjectId, targetId: executionId, outcome: 'REJECTED' } })).toBe(1);
    // Another project's event named at apply: NOT_FOUND from inside the repair's transaction,
    // audited there (one REJECTED entry, naming NOT_FOUND), and the wait is left as it was.
    const current = await as(operator).repair.preview({ executionId, action: 'DELIVER_EVENT' });
    await expectCode(
      as(operator).repair.applyOne({ executionId, action: 'DELIVER_EVENT', eventId: theirEvent.eventId, expectedVersion: current.expectedVersion, reason: 'their event' }),
      'NOT_FOUND',
    );
    const entries = await t.db.auditEntry.findMany({ where: { action: 'repair.DELIVER_EVENT', targetId: executionId } });
    expect(entries).toMatchObject([{ outcome: 'REJECTED', after: { reason: 'NOT_FOUND', message: 'event not found for this contact' } }]);
    expect((await t.db.workflowExecution.findUniqueOrThrow({ where: { id: executionId } })).status).toBe('WAITING');
  });

  it('inputs: a reason is mandatory (3..500), REDRIVE_EVENT needs an eventId and only it may omit executionId; marketers may not repair', async () => {
    const { executionId } = await overdue();
    await expectCode(as(operator).repair.applyOne({ executionId, action: 'CANCEL', expectedVersion: 1, reason: 'no' }), 'BAD_REQUEST');
    await expectCode(as(operator).repair.applyOne({ executionId, action: 'CANCEL', expectedVersion: 1, reason: 'x'.repeat(501) }), 'BAD_REQUEST');
    const missing = await expectCode(as(operator).repair.applyOne({ action: 'REDRIVE_EVENT', expectedVersion: 0, reason: 'redrive it' }), 'BAD_REQUEST');
    expect((missing.cause as unknown as { issues: { path: string[] }[] }).issues[0]!.path).toEqual(['eventId']);
    await expectCode(as(operator).repair.preview({ action: 'CANCEL' }), 'BAD_REQUEST');
    await expectCode(as(marketer).repair.stuck(), 'FORBIDDEN');
    await expectCode(as(marketer).repair.preview({ executionId, action: 'CANCEL' }), 'FORBIDDEN');
  });

  it('REDRIVE_EVENT targets an event by id alone', async () => {
    const { eventId } = await as(marketer).events.track({ name: 'late', email: 'redrive@example.com' });
    // As if its dispatch had been dead-lettered.
    await t.db.event.update({ where: { id: eventId }, data: { processedAt: null, deadAt: new Date(), dispatchAttempts: 8, lastError: 'poison' } });
    const preview = await as(operator).repair.preview({ action: 'REDRIVE_EVENT', eventId });
    expect(preview.target).toMatchObject({ kind: 'event', id: eventId });
    const applied = await as(operator).repair.applyOne({ action: 'REDRIVE_EVENT', eventId, expectedVersion: preview.expectedVersion, reason: 'cause fixed' });
    expect(applied).toMatchObject({ ok: true, eventId });
    expect((await t.db.event.findUniqueOrThrow({ where: { id: eventId } })).deadAt).toBeNull();
  });

  it('applyMany counts on a dry run, then reports each execution; one summary entry besides each repair\'s own', async () => {
    const [first, second] = (await overdueMany(2)) as [Awaited<ReturnType<typeof overdue>>, Awaited<ReturnType<typeof overdue>>];
    const filter = { reason: 'WAIT_OVERDUE' as const, workflowId: first.workflowId };
    const dry = await as(operator).repair.applyMany({ filter, action: 'FORCE_TIMEOUT', reason: 'bulk timeout', dryRun: true });
    expect(dry).toMatchObject({ matched: 1, dryRun: true, items: [] });
    const run = await as(operator).repair.applyMany({ filter: { executionIds: [first.executionId, second.executionId] }, action: 'FORCE_TIMEOUT', reason: 'bulk timeout' });
    expect(run.matched).toBe(2);
    expect(run.items.map((i) => i.outcome)).toEqual(['APPLIED', 'APPLIED']);
    expect(await t.db.auditEntry.count({ where: { action: 'repair.applyMany', actor: operator.id } })).toBe(1);
    await expectCode(as(operator).repair.applyMany({ filter: {}, action: 'CANCEL', reason: 'everything' }), 'BAD_REQUEST');
    expect((await checkInvariants(t.db)).filter((i) => i.violations > 0)).toEqual([]);
  });
});
