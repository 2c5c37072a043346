import { describe, expect, it } from 'vitest';
import { createContact, waitWorkflow, workflowFrom } from '../../support/fixtures';
import { t, projectId, otherProjectId, marketer, outsider, as, expectCode, runWorkers, setUpRouterTests } from './support';

setUpRouterTests();

describe('events.track', () => {
  it('an idempotency key makes a retry answer with the first event and store nothing more', async () => {
    const first = await as(marketer).events.track({ name: 'signup', email: 'idem@example.com', idempotencyKey: 'order-1' });
    const again = await as(marketer).events.track({ name: 'signup', email: 'idem@example.com', idempotencyKey: 'order-1', data: { other: true } });
    expect(again).toEqual({ eventId: first.eventId, duplicate: true });
    expect(first.duplicate).toBe(false);
    expect(await t.db.event.count({ where: { projectId, idempotencyKey: 'order-1' } })).toBe(1);
    // Keys are per project: another project's same key is its own event.
    const theirs = await as(outsider).events.track({ name: 'signup', idempotencyKey: 'order-1' });
    expect(theirs.eventId).not.toBe(first.eventId);
  });

  it("resolves the contact's wait for it: the execution takes the EVENT branch", async () => {
    const wf = await workflowFrom(t.db, projectId, waitWorkflow());
    const { executionId } = await as(marketer).enrollments.enroll({ workflowId: wf.id, email: 'buyer@example.com' });
    await runWorkers();
    expect((await t.db.workflowExecution.findUniqueOrThrow({ where: { id: executionId } })).status).toBe('WAITING');
    const { eventId } = await as(marketer).events.track({ name: 'purchase', email: 'BUYER@example.com', data: { total: 42 } });
    const wait = await t.db.stepExecution.findFirstOrThrow({ where: { executionId, status: { not: 'PENDING' }, resolvedBy: { not: null } } });
    expect(wait).toMatchObject({ resolvedBy: 'EVENT', resolvedBranch: 'EVENT', resumeEventId: eventId });
    expect(await t.db.auditEntry.count({ where: { targetId: eventId, action: 'events.track', outcome: 'APPLIED' } })).toBe(1);
  });

  it("another project's contact is NOT_FOUND (audited), and nothing is stored", async () => {
    const theirs = await createContact(t.db, otherProjectId, 'their-contact@example.com');
    const before = await t.db.event.count();
    await expectCode(as(marketer).events.track({ name: 'click', contactId: theirs.id }), 'NOT_FOUND');
    expect(await t.db.event.count()).toBe(before);
    expect(await t.db.auditEntry.count({ where: { targetId: theirs.id, action: 'events.track', outcome: 'REJECTED', projectId } })).toBe(1);
    await expectCode(as(marketer).events.track({ name: 'has spaces' }), 'BAD_REQUEST');
  });
});
