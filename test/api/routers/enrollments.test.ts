import { describe, expect, it } from 'vitest';
import type { Actor } from '../../../server/auth/actor';
import { createContact, delayWorkflow, workflowFrom } from '../../support/fixtures';
import { t, projectId, otherProjectId, marketer, operator, viewer, as, expectCode, conflictOf, auditOf, setUpRouterTests } from './support';

setUpRouterTests();

describe('enrollments.enroll', () => {
  it('enrolls by email or contact id, audits the execution, and a duplicate is CONFLICT ACTIVE_EXECUTION naming it', async () => {
    const wf = await workflowFrom(t.db, projectId, delayWorkflow(3600));
    const { executionId } = await as(marketer).enrollments.enroll({ workflowId: wf.id, email: 'enroll@example.com', context: { campaign: 'spring' } });
    const execution = await t.db.workflowExecution.findUniqueOrThrow({ where: { id: executionId } });
    expect(execution).toMatchObject({ projectId, workflowId: wf.id, status: 'RUNNING', context: { campaign: 'spring' } });
    expect((await auditOf(executionId)).map((e) => [e.action, e.outcome])).toEqual([['enrollments.enroll', 'APPLIED']]);

    const error = await expectCode(as(marketer).enrollments.enroll({ workflowId: wf.id, contactId: execution.contactId }), 'CONFLICT');
    expect(conflictOf(error)).toEqual({ reason: 'ACTIVE_EXECUTION', executionId });
    expect(await t.db.workflowExecution.count({ where: { workflowId: wf.id } })).toBe(1);
    const rejected = await t.db.auditEntry.findMany({ where: { targetId: wf.id, action: 'enrollments.enroll' } });
    expect(rejected).toMatchObject([{ outcome: 'REJECTED', after: { reason: 'ACTIVE_EXECUTION', executionId } }]);
  });

  it('a finished execution blocks re-entry when the workflow forbids it: CONFLICT REENTRY_BLOCKED', async () => {
    const wf = await workflowFrom(t.db, projectId, delayWorkflow(3600, { allowReentry: false }));
    const { executionId } = await as(marketer).enrollments.enroll({ workflowId: wf.id, email: 'once@example.com' });
    const preview = await as(operator).repair.preview({ executionId, action: 'CANCEL' });
    await as(operator).repair.applyOne({ executionId, action: 'CANCEL', expectedVersion: preview.expectedVersion, reason: 'test: end it' });
    const error = await expectCode(as(marketer).enrollments.enroll({ workflowId: wf.id, email: 'once@example.com' }), 'CONFLICT');
    expect(conflictOf(error)).toEqual({ reason: 'REENTRY_BLOCKED', executionId });
  });

  it('a disabled workflow is PRECONDITION_FAILED WORKFLOW_DISABLED: audited as REJECTED, no execution and no contact created', async () => {
    const wf = await workflowFrom(t.db, projectId, delayWorkflow(3600, { enabled: false }));
    const error = await expectCode(as(marketer).enrollments.enroll({ workflowId: wf.id, email: 'disabled@example.com' }), 'PRECONDITION_FAILED');
    expect(conflictOf(error)).toEqual({ reason: 'WORKFLOW_DISABLED' });
    expect(await t.db.workflowExecution.count({ where: { workflowId: wf.id } })).toBe(0);
    expect(await t.db.contact.count({ where: { email: 'disabled@example.com' } })).toBe(0);
    expect(await auditOf(wf.id)).toMatchObject([{ action: 'enrollments.enroll', outcome: 'REJECTED', actor: marketer.id }]);
  });

  it("another project's workflow or contact is NOT_FOUND; contactId and email together are BAD_REQUEST", async () => {
    const mine = await workflowFrom(t.db, projectId, delayWorkflow(3600));
    const theirs = await workflowFrom(t.db, otherProjectId, delayWorkflow(3600));
    const theirContact = await createContact(t.db, otherProjectId, 'theirs@example.com');
    await expectCode(as(marketer).enrollments.enroll({ workflowId: theirs.id, email: 'n@example.com' }), 'NOT_FOUND');
    await expectCode(as(marketer).enrollments.enroll({ workflowId: mine.id, contactId: theirContact.id }), 'NOT_FOUND');
    const both = await expectCode(
      as(marketer).enrollments.enroll({ workflowId: mine.id, contactId: theirContact.id, email: 'n@example.com' }),
      'BAD_REQUEST',
    );
    expect(both.message).toMatch(/exactly one/);
    await expectCode(as(viewer).enrollments.enroll({ workflowId: mine.id, email: 'n@example.com' }), 'FORBIDDEN');
    await expectCode(as(null).enrollments.enroll({ workflowId: mine.id, email: 'n@example.com' }), 'UNAUTHORIZED');
    expect(await t.db.workflowExecution.count({ where: { workflowId: { in: [mine.id, theirs.id] } } })).toBe(0);
  });

  it('the audit entry shares the transaction of its change: when the audit write fails, the enrollment is rolled back', async () => {
    const wf = await workflowFrom(t.db, projectId, delayWorkflow(3600));
    // A database-side fault only for this actor's audit entries.
    await t.query(`
      CREATE FUNCTION refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.actor = 'user:audit-refused' THEN RAISE EXCEPTION 'audit refused (test fault)'; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER refuse_audit BEFORE INSERT ON "AuditEntry" FOR EACH ROW EXECUTE FUNCTION refuse_audit();`);
    try {
      const doomed: Actor = { ...marketer, id: 'user:audit-refused' };
      await expectCode(as(doomed).enrollments.enroll({ workflowId: wf.id, email: 'rolled-back@example.com' }), 'INTERNAL_SERVER_ERROR');
      expect(await t.db.workflowExecution.count({ where: { workflowId: wf.id } })).toBe(0);
      expect(await t.db.contact.count({ where: { email: 'rolled-back@example.com' } })).toBe(0);
    } finally {
      await t.query(`DROP TRIGGER refuse_audit ON "AuditEntry"; DROP FUNCTION refuse_audit();`);
    }
  });
});

describe('enrollments.enrollMany and importCsv', () => {
  it('answers each row on its own: bad rows fail alone, good ones are enrolled, one audit entry counts them all', async () => {
    const wf = await workflowFrom(t.db, projectId, delayWorkflow(3600));
    await as(marketer).enrollments.enroll({ workflowId: wf.id, email: 'already@example.com' });
    const { results, summary } = await as(marketer).enrollments.enrollMany({
      workflowId: wf.id,
      contacts: [
        { email: 'one@example.com', data: { plan: 'pro' } },
        { email: 'not an email' },
        { email: 'already@example.com' },
        { email: 'two@example.com', data: JSON.parse('{"__proto__": {"admin": true}}') },
        42 as unknown as { email: string },
        { email: 'ONE@example.com' },
        { email: 'three@example.com', data: { deep: { a: { b: { c: { d: { e: 1 } } } } } } },
        { email: 'four@example.com' },
      ],
    });
    expect(results.map((r) => [r.row, r.executionId ? 'enrolled' : r.error!.reason])).toEqual([
      [1, 'enrolled'],
      [2, 'INVALID'],
      [3, 'ACTIVE_EXECUTION'],
      [4, 'INVALID'],
      [5, 'INVALID'],
      [6, 'ACTIVE_EXECUTION'],
      [7, 'INVALID'],
      [8, 'enrolled'],
    ]);
    expect(results[1]).toMatchObject({ email: 'not an email', error: { message: expect.stringMatching(/email/i) } });
    expect(results[3]!.error!.message).toMatch(/__proto__/);
    expect(results[4]!.email).toBeNull();
    expect(results[5]!.error!.executionId).toBe(results[0]!.executionId);
    expect(summary).toEqual({ rows: 8, enrolled: 2, failed: 6, reasons: { INVALID: 4, ACTIVE_EXECUTION: 2 } });
    expect(({} as Record<string, unknown>).admin).toBeUndefined();

    expect(await t.db.workflowExecution.count({ where: { workflowId: wf.id } })).toBe(3);
    const entries = await t.db.auditEntry.findMany({ where: { targetId: wf.id, action: 'enrollments.enrollMany' } });
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ outcome: 'APPLIED', actor: marketer.id, after: { ...summary, source: 'rows', complete: true } });
  });

  it('a call over 10,000 rows is BAD_REQUEST before anything is written; a disabled workflow is refused before any row', async () => {
    const wf = await workflowFrom(t.db, projectId, delayWorkflow(3600));
    const rows = Array.from({ length: 10_001 }, (_, i) => ({ email: `over${i}@example.com` }));
    await expectCode(as(marketer).enrollments.enrollMany({ workflowId: wf.id, contacts: rows }), 'BAD_REQUEST');
    await expectCode(as(marketer).enrollments.enrollMany({ workflowId: wf.id, contacts: [] }), 'BAD_REQUEST');
    expect(await t.db.contact.count({ where: { email: 'over0@example.com' } })).toBe(0);

    await as(marketer).workflows.setEnabled({ id: wf.id, enabled: false });
    const error = await expectCode(as(marketer).enrollments.enrollMany({ workflowId: wf.id, contacts: [{ email: 'z@example.com' }] }), 'PRECONDITION_FAILED');
    expect(conflictOf(error)).toEqual({ reason: 'WORKFLOW_DISABLED' });
    expect(await t.db.contact.count({ where: { email: 'z@example.com' } })).toBe(0);
  });

  it('importCsv reads the header, puts the other columns into contact data, and reports bad rows by number', async () => {
    const wf = await workflowFrom(t.db, projectId, delayWorkflow(3600));
    const csv = [
      'Email,first_name,plan',
      'csv1@example.com,Ada,pro',
      'broken,Bob,free',
      '"csv2@example.com","Lovelace, Ada",',
      'csv3@example.com,Too,many,cells',
      '',
      'csv4@example.com',
    ].join('\n');
    const { results, summary } = await as(marketer).enrollments.importCsv({ workflowId: wf.id, csv });
    expect(results.map((r) => [r.row, r.email, r.executionId ? 'enrolled' : r.error!.reason])).toEqual([
      [1, 'csv1@example.com', 'enrolled'],
      [2, 'broken', 'INVALID'],
      [3, 'csv2@example.com', 'enrolled'],
      [4, 'csv3@example.com', 'INVALID'],
      [5, 'csv4@example.com', 'enrolled'],
    ]);
    expect(summary).toMatchObject({ rows: 5, enrolled: 3, failed: 2 });
    const contacts = await t.db.contact.findMany({ where: { projectId, email: { in: ['csv1@example.com', 'csv2@example.com', 'csv4@example.com'] } }, orderBy: { email: 'asc' } });
    expect(contacts.map((c) => c.data)).toEqual([{ first_name: 'Ada', plan: 'pro' }, { first_name: 'Lovelace, Ada' }, {}]);
    expect(await t.db.auditEntry.count({ where: { targetId: wf.id, action: 'enrollments.importCsv' } })).toBe(1);

    const noEmail = await expectCode(as(marketer).enrollments.importCsv({ workflowId: wf.id, csv: 'name,plan\nAda,pro\n' }), 'BAD_REQUEST');
    expect(noEmail.message).toMatch(/email/);
    await expectCode(as(marketer).enrollments.importCsv({ workflowId: wf.id, csv: 'email\n' }), 'BAD_REQUEST');
    await expectCode(as(marketer).enrollments.importCsv({ workflowId: wf.id, csv: 'email,__proto__\na@example.com,x\n' }), 'BAD_REQUEST');
  });
});
