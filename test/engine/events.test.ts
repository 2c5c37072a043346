import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngineContext } from '../../server/engine/context';
import { enroll } from '../../server/engine/enrollment';
import { dispatchEvent, processDueEvents, trackEvent } from '../../server/engine/events';
import { runWorkerOnce } from '../../server/engine/worker';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createContact, createProject, delayWorkflow, waitWorkflow, workflowFrom } from '../support/fixtures';

let t: TestDatabase;
beforeAll(async () => {
  t = await freshDatabase();
});
afterAll(async () => t?.drop());

describe('tracked events', () => {
  it('an idempotency key stores one event however often it is tracked', async () => {
    const ctx = createEngineContext(t.db);
    const p = await createProject(t.db);
    const first = await trackEvent(ctx, { projectId: p.id, name: 'signup', email: 'a@example.com', idempotencyKey: 'k1' });
    const second = await trackEvent(ctx, { projectId: p.id, name: 'signup', email: 'a@example.com', idempotencyKey: 'k1' });
    expect(first).toMatchObject({ ok: true, duplicate: false });
    expect(second).toEqual({ ok: true, duplicate: true, eventId: (first as { eventId: string }).eventId });
    expect(await t.db.event.count({ where: { projectId: p.id } })).toBe(1);
  });

  it('an event tracked by email creates the contact, and its data stays the event’s', async () => {
    const ctx = createEngineContext(t.db);
    const p = await createProject(t.db);
    await trackEvent(ctx, { projectId: p.id, name: 'purchase', email: 'New@Example.com', data: { total: 42 } });
    const contact = await t.db.contact.findFirstOrThrow({ where: { projectId: p.id } });
    expect(contact).toMatchObject({ email: 'New@Example.com', data: {} });
    const event = await t.db.event.findFirstOrThrow({ where: { projectId: p.id } });
    expect(event).toMatchObject({ contactId: contact.id, data: { total: 42 } });
  });

  it('refuses a contact id of another project and stores nothing', async () => {
    const ctx = createEngineContext(t.db);
    const p1 = await createProject(t.db);
    const p2 = await createProject(t.db);
    const foreign = await createContact(t.db, p2.id, 'x@example.com');
    expect(await trackEvent(ctx, { projectId: p1.id, name: 'x', contactId: foreign.id })).toEqual({ ok: false, reason: 'CONTACT_NOT_FOUND' });
    expect(await t.db.event.count({ where: { projectId: p1.id } })).toBe(0);
  });

  it('enrolls into workflows triggered by its name and resolves the contact’s waits for it', async () => {
    const ctx = createEngineContext(t.db);
    const p = await createProject(t.db);
    const triggered = await workflowFrom(t.db, p.id, { ...delayWorkflow(3600), trigger: 'EVENT', triggerEvent: 'purchase' });
    const waiting = await workflowFrom(t.db, p.id, waitWorkflow());
    const contact = await createContact(t.db, p.id, 'b@example.com');
    const w = await enroll(t.db, { projectId: p.id, workflowId: waiting.id, contactId: contact.id });
    await runWorkerOnce(ctx);
    await trackEvent(ctx, { projectId: p.id, name: 'purchase', contactId: contact.id, data: { total: 5 } });
    const enrolled = await t.db.workflowExecution.findMany({ where: { workflowId: triggered.id } });
    expect(enrolled).toHaveLength(1);
    expect(enrolled[0]!.context).toMatchObject({ trigger: { name: 'purchase', data: { total: 5 } } });
    const wait = await t.db.stepExecution.findFirstOrThrow({ where: { executionId: (w as { executionId: string }).executionId, resolvedBy: { not: null } } });
    expect(wait.resolvedBy).toBe('EVENT');
  });

  it('an event dispatched late never resolves a wait that began after it happened', async () => {
    const ctx = createEngineContext(t.db, { config: { inlineDispatchSeconds: 0 } });
    const p = await createProject(t.db);
    const waiting = await workflowFrom(t.db, p.id, waitWorkflow());
    const contact = await createContact(t.db, p.id, 'late-wait@example.com');
    const early = await trackEvent(ctx, { projectId: p.id, name: 'purchase', contactId: contact.id }, { dispatch: false });
    await new Promise((r) => setTimeout(r, 5));
    const w = await enroll(t.db, { projectId: p.id, workflowId: waiting.id, contactId: contact.id });
    await runWorkerOnce(ctx); // parks the wait, then the sweeper dispatches the early event
    const event = await t.db.event.findUniqueOrThrow({ where: { id: (early as { eventId: string }).eventId } });
    expect(event.processedAt).not.toBeNull();
    const wait = await t.db.stepExecution.findFirstOrThrow({ where: { executionId: (w as { executionId: string }).executionId, step: { key: 'wait' } } });
    expect(wait).toMatchObject({ status: 'WAITING', resolvedBy: null });
  });

  it('the sweeper dispatches an event whose inline dispatch never happened', async () => {
    const ctx = createEngineContext(t.db, { config: { inlineDispatchSeconds: 0 } });
    const p = await createProject(t.db);
    const triggered = await workflowFrom(t.db, p.id, { ...delayWorkflow(3600), trigger: 'EVENT', triggerEvent: 'late' });
    const tracked = await trackEvent(ctx, { projectId: p.id, name: 'late', email: 'c@example.com' }, { dispatch: false });
    expect(await t.db.workflowExecution.count({ where: { workflowId: triggered.id } })).toBe(0);
    expect(await processDueEvents(ctx, 10)).toBeGreaterThanOrEqual(1);
    expect(await t.db.workflowExecution.count({ where: { workflowId: triggered.id } })).toBe(1);
    const event = await t.db.event.findUniqueOrThrow({ where: { id: (tracked as { eventId: string }).eventId } });
    expect(event.processedAt).not.toBeNull();
    expect(event.dispatchAttempts).toBe(1);
  });

  it('a dispatch that keeps failing backs off exponentially and is dead-lettered after the last attempt', async () => {
    const ctx = createEngineContext(t.db, { config: { eventMaxAttempts: 4 } });
    const p = await createProject(t.db);
    const triggered = await workflowFrom(t.db, p.id, { ...delayWorkflow(3600), name: 'dead-letter', trigger: 'EVENT', triggerEvent: 'refund' });
    const contact = await createContact(t.db, p.id, 'd@example.com');
    // A real failure inside PostgreSQL: the enrollment this event triggers cannot be
    // stored (as when a disk fills up or a constraint is added by hand).
    await t.query(`
      CREATE FUNCTION refuse_enrollment() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'enrollment store unavailable'; END $$`);
    await t.query(`
      CREATE TRIGGER refuse_enrollment BEFORE INSERT ON "WorkflowExecution"
         FOR EACH ROW WHEN (NEW."workflowId" = '${triggered.id}') EXECUTE FUNCTION refuse_enrollment()`);
    try {
      const tracked = await trackEvent(ctx, { projectId: p.id, name: 'refund', contactId: contact.id }, { dispatch: false });
      const eventId = (tracked as { eventId: string }).eventId;
      const delays: number[] = [];
      for (let attempt = 1; attempt <= 4; attempt++) {
        await expect(dispatchEvent(ctx, eventId)).rejects.toThrow(/enrollment store unavailable/);
        const e = await t.db.event.findUniqueOrThrow({ where: { id: eventId } });
        expect(e.dispatchAttempts).toBe(attempt);
        expect(e.lastError).toMatch(/enrollment store unavailable/);
        delays.push(Math.round((e.nextDispatchAt.getTime() - Date.now()) / 1000));
        if (attempt < 4) expect(e.deadAt).toBeNull();
        else expect(e.deadAt).not.toBeNull();
      }
      expect(delays.slice(0, 3)).toEqual([2, 4, 8]);
      // Dead events are not dispatched again.
      expect(await dispatchEvent(ctx, eventId)).toBeNull();
    } finally {
      await t.query(`DROP TRIGGER refuse_enrollment ON "WorkflowExecution"`);
    }
  });
});
