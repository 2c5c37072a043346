import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngineContext } from '../../server/engine/context';
import { enroll } from '../../server/engine/enrollment';
import { storeEvent } from '../../server/engine/events';
import { runWorkerOnce } from '../../server/engine/worker';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createContact, createProject, delayWorkflow, workflowFrom } from '../support/fixtures';

let t: TestDatabase;
beforeAll(async () => {
  t = await freshDatabase();
});
afterAll(async () => t?.drop());

describe('enrollment', () => {
  it('rejects a disabled workflow, an unknown workflow and a contact of another project', async () => {
    const p1 = await createProject(t.db);
    const p2 = await createProject(t.db);
    const wf = await workflowFrom(t.db, p1.id, delayWorkflow(0, { enabled: false }));
    const contact = await createContact(t.db, p1.id, 'a@example.com');
    const foreign = await createContact(t.db, p2.id, 'b@example.com');
    expect(await enroll(t.db, { projectId: p1.id, workflowId: wf.id, contactId: contact.id })).toEqual({ ok: false, reason: 'WORKFLOW_DISABLED' });
    await t.db.workflow.update({ where: { id: wf.id }, data: { enabled: true } });
    expect(await enroll(t.db, { projectId: p1.id, workflowId: wf.id, contactId: foreign.id })).toEqual({ ok: false, reason: 'CONTACT_NOT_FOUND' });
    // The workflow of another project is as good as absent.
    expect(await enroll(t.db, { projectId: p2.id, workflowId: wf.id, contactId: foreign.id })).toEqual({ ok: false, reason: 'WORKFLOW_NOT_FOUND' });
    expect(await t.db.workflowExecution.count()).toBe(0);
  });

  it('allowReentry=false blocks any past execution; true only an active one', async () => {
    const ctx = createEngineContext(t.db);
    const p = await createProject(t.db);
    const once = await workflowFrom(t.db, p.id, delayWorkflow(0, { allowReentry: false }));
    const again = await workflowFrom(t.db, p.id, delayWorkflow(0, { allowReentry: true }));
    const contact = await createContact(t.db, p.id, 'c@example.com');
    const first = await enroll(t.db, { projectId: p.id, workflowId: once.id, contactId: contact.id });
    const second = await enroll(t.db, { projectId: p.id, workflowId: again.id, contactId: contact.id });
    expect(first).toMatchObject({ ok: true, created: true });
    expect(second).toMatchObject({ ok: true, created: true });
    await runWorkerOnce(ctx);
    const onceAgain = await enroll(t.db, { projectId: p.id, workflowId: once.id, contactId: contact.id });
    expect(onceAgain).toEqual({ ok: false, reason: 'REENTRY_BLOCKED', executionId: (first as { executionId: string }).executionId });
    expect(await enroll(t.db, { projectId: p.id, workflowId: again.id, contactId: contact.id })).toMatchObject({ ok: true, created: true });
  });

  it('is idempotent per source event: the same event enrolls once and answers with that execution', async () => {
    const p = await createProject(t.db);
    const wf = await workflowFrom(t.db, p.id, delayWorkflow(3600, { allowReentry: true }));
    const contact = await createContact(t.db, p.id, 'd@example.com');
    const event = await storeEvent(t.db, { projectId: p.id, name: 'signup', contactId: contact.id }, 60);
    const eventId = (event as { eventId: string }).eventId;
    const a = await enroll(t.db, { projectId: p.id, workflowId: wf.id, contactId: contact.id, sourceEventId: eventId });
    const b = await enroll(t.db, { projectId: p.id, workflowId: wf.id, contactId: contact.id, sourceEventId: eventId });
    expect(a).toMatchObject({ ok: true, created: true });
    expect(b).toEqual({ ok: true, created: false, executionId: (a as { executionId: string }).executionId });
  });

  it('upserts a contact by email, case-insensitively, and merges its data', async () => {
    const p = await createProject(t.db);
    const wf = await workflowFrom(t.db, p.id, delayWorkflow(3600, { allowReentry: true }));
    await enroll(t.db, { projectId: p.id, workflowId: wf.id, email: 'Eve@Example.com', contactData: { plan: 'free' } });
    const r = await enroll(t.db, { projectId: p.id, workflowId: wf.id, email: 'eve@example.com', contactData: { seats: 3 } });
    expect(r).toMatchObject({ ok: false, reason: 'ACTIVE_EXECUTION' });
    const contacts = await t.db.contact.findMany({ where: { projectId: p.id } });
    expect(contacts).toHaveLength(1);
    expect(contacts[0]).toMatchObject({ email: 'Eve@Example.com', data: { plan: 'free', seats: 3 } });
  });
});
