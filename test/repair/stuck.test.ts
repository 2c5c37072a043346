import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngineContext } from '../../server/engine/context';
import { enroll } from '../../server/engine/enrollment';
import { trackEvent } from '../../server/engine/events';
import { checkInvariants } from '../../server/engine/invariants';
import { runWorkerOnce } from '../../server/engine/worker';
import { claimReadySteps } from '../../server/engine/claims';
import { applyRepair, previewRepair } from '../../server/repair/actions';
import type { RepairAction } from '../../server/repair/planner';
import type { StuckReason } from '../../server/common/stuck-reasons';
import { countStuck } from '../../server/stuck/counts';
import { listStuck } from '../../server/stuck/list';
import { freshDatabase, type TestDatabase } from '../support/database';
import { runStepsOnly } from '../support/drive';
import { createContact, createProject, delayWorkflow, waitWorkflow, workflowFrom } from '../support/fixtures';
import { startWorkerProcess, waitFor } from '../support/processes';

// Every stuck reason, created the way it happens in production, listed with that reason,
// and cleared by the matching repair without breaking an invariant.

let t: TestDatabase;
let projectId: string;
const GRACE = { graceSeconds: 0 };
const OPERATOR = 'user:test-operator';

beforeAll(async () => {
  t = await freshDatabase();
  projectId = (await createProject(t.db)).id;
});
afterAll(async () => t?.drop());

async function expectHealthy() {
  const bad = (await checkInvariants(t.db)).filter((r) => r.violations > 0);
  expect(bad).toEqual([]);
}

async function reasonsOf(id: string): Promise<StuckReason[]> {
  const { items } = await listStuck(t.db, { projectId, ...GRACE, limit: 200 });
  return items.filter((i) => i.executionId === id || i.eventId === id).map((i) => i.reason);
}

async function repair(action: RepairAction, target: { executionId?: string; eventId?: string }, reason = 'test repair') {
  const preview = await previewRepair(t.db, { projectId, action, ...target }, GRACE);
  expect(preview.plan.allowed, preview.plan.refusal ?? '').toBe(true);
  const result = await applyRepair(
    t.db,
    { projectId, action, ...target, actor: OPERATOR, reason, expectedVersion: preview.expectedVersion },
    GRACE,
  );
  expect(result).toMatchObject({ ok: true });
  return { preview, result };
}

const idOf = (r: unknown) => (r as { executionId: string }).executionId;

describe('stuck reasons, made as in production, and their repairs', () => {
  it('LEASE_EXPIRED: a worker process killed mid-step; RETRY_STEP sends the email once', async () => {
    const wf = await workflowFrom(t.db, projectId, delayWorkflow(0, { name: 'lease' }));
    const victim = await startWorkerProcess(t.url, {
      concurrency: 1,
      env: { LEASE_SECONDS: '1', WAYPOST_FAULT_PAUSE_AFTER_CLAIM_MS: '600000', WAYPOST_FAULT_PAUSE_STEP_TYPE: 'TRIGGER' },
    });
    const id = idOf(await enroll(t.db, { projectId, workflowId: wf.id, email: 'lease@example.com' }));
    await waitFor('victim claims', async () => (await t.db.stepExecution.count({ where: { executionId: id, status: 'RUNNING' } })) > 0);
    victim.kill('SIGKILL');
    await victim.exited;
    await waitFor('lease to run out', async () => (await reasonsOf(id)).includes('LEASE_EXPIRED'), 10_000);
    expect(await reasonsOf(id)).toEqual(['LEASE_EXPIRED']);

    const { preview } = await repair('RETRY_STEP', { executionId: id });
    expect(preview.plan.change).toMatch(/attempt 2/);
    await runWorkerOnce(createEngineContext(t.db));
    const execution = await t.db.workflowExecution.findUniqueOrThrow({ where: { id } });
    expect(execution.status).toBe('COMPLETED');
    expect(await t.db.message.count({ where: { executionId: id } })).toBe(1);
    expect(await reasonsOf(id)).toEqual([]);
    await expectHealthy();
  });

  it('LEASE_EXPIRED that stays: a poison step killed its worker on every attempt; the fleet stops retrying it', async () => {
    const wf = await workflowFrom(t.db, projectId, delayWorkflow(0, { name: 'poison-step' }));
    const id = idOf(await enroll(t.db, { projectId, workflowId: wf.id, email: 'poison-step@example.com' }));
    // Three workers in turn claim the step and die holding it (their leases run out at once).
    for (let attempt = 1; attempt <= 3; attempt++) {
      const { claims } = await claimReadySteps(t.db, { limit: 10, leaseSeconds: 0, maxAttempts: 3 });
      expect(claims.map((c) => [c.executionId, c.attempt])).toEqual([[id, attempt]]);
    }
    // A fourth worker leaves it alone: it would only die too.
    expect((await claimReadySteps(t.db, { limit: 10, leaseSeconds: 0, maxAttempts: 3 })).claims).toEqual([]);
    expect(await reasonsOf(id)).toEqual(['LEASE_EXPIRED']);
    await repair('RETRY_STEP', { executionId: id }, 'the step was fixed');
    await runWorkerOnce(createEngineContext(t.db));
    expect((await t.db.workflowExecution.findUniqueOrThrow({ where: { id } })).status).toBe('COMPLETED');
    await expectHealthy();
  });

  it('WAIT_OVERDUE: a wait whose timeout nobody processed; FORCE_TIMEOUT takes the TIMEOUT branch', async () => {
    const wf = await workflowFrom(t.db, projectId, waitWorkflow({ name: 'overdue' }, 1));
    const id = idOf(await enroll(t.db, { projectId, workflowId: wf.id, email: 'overdue@example.com' }));
    await runStepsOnly(t.db);
    await new Promise((r) => setTimeout(r, 1100));
    expect(await reasonsOf(id)).toEqual(['WAIT_OVERDUE']);
    const { preview } = await repair('FORCE_TIMEOUT', { executionId: id });
    expect(preview.plan).toMatchObject({ branch: 'TIMEOUT', nextStep: { key: 'reminder' } });
    expect(preview.plan.sideEffect.note).toMatch(/sends an email \(once\)/);
    await runWorkerOnce(createEngineContext(t.db));
    const wait = await t.db.stepExecution.findFirstOrThrow({ where: { executionId: id, resolvedBy: { not: null } } });
    expect(wait).toMatchObject({ resolvedBy: 'OPERATOR', resolvedBranch: 'TIMEOUT' });
    const subjects = (await t.db.message.findMany({ where: { executionId: id } })).map((m) => m.subject).sort();
    expect(subjects).toEqual(['Hello overdue@example.com', 'Reminder']);
    expect(await reasonsOf(id)).toEqual([]);
    await expectHealthy();
  });

  it('CONTINUATION_PENDING: a worker crashed between claiming a timeout and advancing; RESUME_CONTINUATION, and a second one replays nothing', async () => {
    const wf = await workflowFrom(t.db, projectId, waitWorkflow({ name: 'crash' }, 0));
    const id = idOf(await enroll(t.db, { projectId, workflowId: wf.id, email: 'crash@example.com' }));
    await runStepsOnly(t.db);
    const crasher = await startWorkerProcess(t.url, { concurrency: 1, env: { WAYPOST_FAULT_CRASH_AFTER_WAIT_CLAIM: '1' } });
    expect(await crasher.exited).toBeNull(); // killed itself with SIGKILL after the claim
    expect(await reasonsOf(id)).toEqual(['CONTINUATION_PENDING']);
    const messagesBefore = await t.db.message.count({ where: { executionId: id } });

    const { preview } = await repair('RESUME_CONTINUATION', { executionId: id });
    expect(preview.plan).toMatchObject({ branch: 'TIMEOUT', nextStep: { key: 'reminder' } });
    await runWorkerOnce(createEngineContext(t.db));
    expect(await t.db.message.count({ where: { executionId: id } })).toBe(messagesBefore + 1);
    expect((await t.db.workflowExecution.findUniqueOrThrow({ where: { id } })).status).toBe('COMPLETED');

    // The continuation already ran: resuming again changes nothing and says so.
    const again = await previewRepair(t.db, { projectId, action: 'RESUME_CONTINUATION', executionId: id }, GRACE);
    expect(again.plan.allowed).toBe(false);
    const refused = await applyRepair(
      t.db,
      { projectId, action: 'RESUME_CONTINUATION', executionId: id, actor: OPERATOR, reason: 'again', expectedVersion: again.expectedVersion },
      GRACE,
    );
    expect(refused).toMatchObject({ ok: false, code: 'NOT_ALLOWED' });
    expect(await t.db.message.count({ where: { executionId: id } })).toBe(messagesBefore + 1);
    const audit = await t.db.auditEntry.findMany({ where: { targetId: id }, orderBy: { at: 'asc' } });
    expect(audit.map((a) => [a.action, a.outcome])).toEqual([
      ['repair.RESUME_CONTINUATION', 'APPLIED'],
      ['repair.RESUME_CONTINUATION', 'REJECTED'],
    ]);
    await expectHealthy();
  });

  it('MISSING_STEP: enrolled while no worker runs; RETRY_STEP once workers are back', async () => {
    const wf = await workflowFrom(t.db, projectId, delayWorkflow(0, { name: 'missing' }));
    const id = idOf(await enroll(t.db, { projectId, workflowId: wf.id, email: 'missing@example.com' }));
    await new Promise((r) => setTimeout(r, 20));
    expect(await reasonsOf(id)).toEqual(['MISSING_STEP']);
    await repair('RETRY_STEP', { executionId: id });
    await runWorkerOnce(createEngineContext(t.db));
    expect((await t.db.workflowExecution.findUniqueOrThrow({ where: { id } })).status).toBe('COMPLETED');
    expect(await reasonsOf(id)).toEqual([]);
    await expectHealthy();
  });

  it('FAILED: a step config the engine cannot read; SKIP_STEP moves on, RETRY_STEP after the fix completes', async () => {
    const wf = await workflowFrom(t.db, projectId, delayWorkflow(0, { name: 'failing' }));
    await t.db.$executeRaw`UPDATE "WorkflowStep" SET config = '{"template_id": 3}' WHERE "workflowId" = ${wf.id}::uuid AND key = 'mail'`;
    const ctx = createEngineContext(t.db, { config: { maxStepAttempts: 1 } });
    const a = idOf(await enroll(t.db, { projectId, workflowId: wf.id, email: 'fail-a@example.com' }));
    const b = idOf(await enroll(t.db, { projectId, workflowId: wf.id, email: 'fail-b@example.com' }));
    await runWorkerOnce(ctx);
    expect(await reasonsOf(a)).toEqual(['FAILED']);
    expect(await reasonsOf(b)).toEqual(['FAILED']);

    const skipped = await repair('SKIP_STEP', { executionId: a });
    expect(skipped.preview.plan.sideEffect.note).toBe('its email will not be sent');
    expect((await t.db.workflowExecution.findUniqueOrThrow({ where: { id: a } })).status).toBe('COMPLETED');

    await t.db.$executeRaw`UPDATE "WorkflowStep" SET config = '{"subject": "Fixed", "body": "ok"}' WHERE "workflowId" = ${wf.id}::uuid AND key = 'mail'`;
    await new Promise((r) => setTimeout(r, 5_100)); // the graph cache forgets the old config
    const retried = await repair('RETRY_STEP', { executionId: b });
    expect(retried.preview.plan.sideEffect).toMatchObject({ emailMayBeSent: true });
    await runWorkerOnce(ctx);
    expect((await t.db.workflowExecution.findUniqueOrThrow({ where: { id: b } })).status).toBe('COMPLETED');
    expect(await t.db.message.count({ where: { executionId: b } })).toBe(1);
    expect(await t.db.message.count({ where: { executionId: a } })).toBe(0);
    await expectHealthy();
  }, 20_000);

  it('EVENT_PENDING: accepted, but its dispatch never ran; REDRIVE_EVENT processes it', async () => {
    const wf = await workflowFrom(t.db, projectId, { ...delayWorkflow(3600, { name: 'pending-trigger' }), trigger: 'EVENT', triggerEvent: 'signup' });
    const ctx = createEngineContext(t.db);
    const tracked = await trackEvent(ctx, { projectId, name: 'signup', email: 'pending@example.com' }, { dispatch: false });
    const eventId = (tracked as { eventId: string }).eventId;
    expect(await reasonsOf(eventId)).toEqual(['EVENT_PENDING']);
    await repair('REDRIVE_EVENT', { eventId });
    expect((await t.db.event.findUniqueOrThrow({ where: { id: eventId } })).processedAt).not.toBeNull();
    expect(await t.db.workflowExecution.count({ where: { workflowId: wf.id, sourceEventId: eventId } })).toBe(1);
    expect(await reasonsOf(eventId)).toEqual([]);
    await expectHealthy();
  });

  it('EVENT_DEAD: a poison event dead-lettered after its attempts; REDRIVE_EVENT once the cause is fixed', async () => {
    // (A wait not parked yet no longer makes a dispatch fail: the wait looks back for the
    // event when it parks. The poison here is a real failure inside
    // PostgreSQL: the enrollment the event triggers cannot be stored.)
    const wf = await workflowFrom(t.db, projectId, { ...delayWorkflow(3600, { name: 'poison' }), trigger: 'EVENT', triggerEvent: 'refund' });
    const contact = await createContact(t.db, projectId, 'poison@example.com');
    await t.query(`
      CREATE FUNCTION refuse_poison_enrollment() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'enrollment store unavailable'; END $$`);
    await t.query(`
      CREATE TRIGGER refuse_poison_enrollment BEFORE INSERT ON "WorkflowExecution"
         FOR EACH ROW WHEN (NEW."workflowId" = '${wf.id}') EXECUTE FUNCTION refuse_poison_enrollment()`);
    const ctx = createEngineContext(t.db, { config: { eventMaxAttempts: 3, inlineDispatchSeconds: 0 } });
    const tracked = await trackEvent(ctx, { projectId, name: 'refund', contactId: contact.id });
    const eventId = (tracked as { eventId: string }).eventId;
    for (let i = 0; i < 3; i++) {
      await t.db.$executeRaw`UPDATE "Event" SET "nextDispatchAt" = now() WHERE id = ${eventId}::uuid AND "deadAt" IS NULL`;
      await runWorkerOnce(ctx, { maxPasses: 1 }).catch(() => null);
    }
    expect((await t.db.event.findUniqueOrThrow({ where: { id: eventId } })).deadAt).not.toBeNull();
    expect(await reasonsOf(eventId)).toEqual(['EVENT_DEAD']);

    // Fix the cause, then redrive: the event enrolls its contact, once.
    await t.query(`DROP TRIGGER refuse_poison_enrollment ON "WorkflowExecution"`);
    await repair('REDRIVE_EVENT', { eventId });
    await runWorkerOnce(createEngineContext(t.db));
    expect(await t.db.workflowExecution.count({ where: { workflowId: wf.id, contactId: contact.id, sourceEventId: eventId } })).toBe(1);
    expect((await t.db.event.findUniqueOrThrow({ where: { id: eventId } })).processedAt).not.toBeNull();
    expect(await reasonsOf(eventId)).toEqual([]);
    await expectHealthy();
  });

  it('counts by reason agree with the list', async () => {
    const counts = await countStuck(t.db, { projectId, graceSeconds: 0 });
    const { items } = await listStuck(t.db, { projectId, graceSeconds: 0, limit: 200 });
    for (const [reason, n] of Object.entries(counts)) expect(items.filter((i) => i.reason === reason)).toHaveLength(n);
  });

  it('a stuck list is scoped to its project', async () => {
    const other = await createProject(t.db);
    expect((await listStuck(t.db, { projectId: other.id, graceSeconds: 0, limit: 50 })).items).toEqual([]);
  });
});
