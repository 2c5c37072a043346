import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WorkflowInput } from '../../server/common/workflow-definition';
import { WEBHOOK_EVENT_TYPES, webhookIdOf } from '../../server/common/webhook-events';
import { transaction } from '../../server/db';
import { advanceExecution, claimStep, failStep } from '../../server/engine/claims';
import { createEngineContext } from '../../server/engine/context';
import { enroll } from '../../server/engine/enrollment';
import { dispatchEvent, trackEvent } from '../../server/engine/events';
import { writeAudit } from '../../server/engine/audit';
import type { MailTransport } from '../../server/engine/transport';
import { publishVersion, versionDefinitionOf } from '../../server/engine/versions';
import { runWorkerOnce } from '../../server/engine/worker';
import { applyRepair } from '../../server/repair/actions';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createContact, createProject, stepId, workflowFrom } from '../support/fixtures';
import { createTestEndpoint, dispatchAllDue, dispatcherFor, startReceiver, type Receiver } from './receiver';

// The outbox (docs/webhooks.md): each of the engine's changes that a webhook reports,
// made through the engine's own code, yields exactly one message per subscribed endpoint,
// written by the migration's triggers in the change's own transaction, and the dispatcher
// delivers each once, signed (the receiver verifies with the standardwebhooks package). A
// change rolled back leaves no message. Only ids and names travel: no contact email.

let t: TestDatabase;
let receiver: Receiver;
const OPTS = { graceSeconds: 0 };
let serial = 0;

beforeAll(async () => {
  t = await freshDatabase();
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await t?.drop();
});

/** A project with one endpoint on the receiver taking every event type. */
async function projectWithEndpoint(): Promise<{ projectId: string; endpointId: string; path: string }> {
  const projectId = (await createProject(t.db)).id;
  const path = `/hook/${++serial}`;
  const endpointId = await createTestEndpoint(t.db, projectId, { ...receiver.endpoint(path), eventTypes: [...WEBHOOK_EVENT_TYPES] });
  return { projectId, endpointId, path };
}

/** trigger -> update contact (a): a step that can fail. */
const oneStep = (name: string): WorkflowInput => ({
  name,
  trigger: 'MANUAL',
  allowReentry: false,
  steps: [
    { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
    { key: 'a', type: 'UPDATE_CONTACT', name: 'Sync CRM', config: { set: { synced: true } } },
  ],
  transitions: [{ from: 'start', to: 'a', branch: null }],
});

/** Enroll and run to step a, claimed: the claim failStep takes. */
async function claimedAtA(projectId: string, workflowId: string) {
  const e = await enroll(t.db, { projectId, workflowId, email: `x${++serial}@example.com` });
  if (!e.ok) throw new Error(e.reason);
  const start = await claimStep(t.db, { executionId: e.executionId, expectedVersion: 1, leaseSeconds: 30 });
  if (!start.won) throw new Error('claim start');
  const advanced = await advanceExecution(t.db, start.claim, { nextStepId: await stepId(t.db, workflowId, 'a'), status: 'RUNNING', output: {} });
  if (!advanced.won) throw new Error('advance');
  const a = await claimStep(t.db, { executionId: e.executionId, expectedVersion: advanced.version, leaseSeconds: 30 });
  if (!a.won) throw new Error('claim a');
  return { executionId: e.executionId, claim: a.claim };
}

/** A failed execution, failed by the engine's failStep on its last attempt. */
async function failedExecution(projectId: string, workflowId: string, error = 'CRM answered 503') {
  const { executionId, claim } = await claimedAtA(projectId, workflowId);
  const failed = await failStep(t.db, claim, { error, retryInSeconds: null });
  if (!failed.won) throw new Error('failStep lost');
  return { executionId, version: failed.version };
}

async function messages(projectId: string) {
  return t.db.webhookMessage.findMany({ where: { projectId }, orderBy: { createdAt: 'asc' } });
}

/** Deliver everything due, then the verified deliveries that reached `path`. */
async function delivered(path: string) {
  await dispatchAllDue(t.db, dispatcherFor());
  return receiver.deliveries.filter((d) => d.path === path);
}

describe('each event type: one signed delivery per committed change', () => {
  it('execution.failed: a step failing on its last attempt', async () => {
    const p = await projectWithEndpoint();
    const wf = await workflowFrom(t.db, p.projectId, oneStep('fails'));
    const { executionId } = await failedExecution(p.projectId, wf.id);
    const got = await delivered(p.path);
    expect(got).toHaveLength(1);
    const x = await t.db.workflowExecution.findUniqueOrThrow({ where: { id: executionId } });
    expect(got[0]!.body).toMatchObject({
      type: 'execution.failed',
      data: { executionId, workflowId: wf.id, workflowName: 'fails', workflowVersion: 1, contactId: x.contactId, stepKey: 'a', error: 'CRM answered 503' },
    });
    expect(JSON.stringify(got[0]!.body)).not.toContain('@example.com');
    const [m] = await messages(p.projectId);
    expect(got[0]!.webhookId).toBe(webhookIdOf(m!.id));
    expect(m).toMatchObject({ status: 'DELIVERED', attempts: 1, lastResponseStatus: 200, endpointId: p.endpointId });
    expect(await t.db.webhookAttempt.count({ where: { messageId: m!.id } })).toBe(1);
  });

  it('execution.failed through the worker: a step whose every attempt fails', async () => {
    const p = await projectWithEndpoint();
    const wf = await workflowFrom(t.db, p.projectId, oneStep('broken-config'));
    // A step the runner cannot run (its stored config no longer parses): each attempt fails.
    await t.query(`UPDATE "WorkflowStep" SET config = '{"set": "not an object"}' WHERE "workflowId" = $1 AND key = 'a'`, [wf.id]);
    const e = await enroll(t.db, { projectId: p.projectId, workflowId: wf.id, email: `w${++serial}@example.com` });
    if (!e.ok) throw new Error(e.reason);
    await runWorkerOnce(createEngineContext(t.db, { config: { maxStepAttempts: 1 } }));
    const x = await t.db.workflowExecution.findUniqueOrThrow({ where: { id: e.executionId } });
    expect(x.status).toBe('FAILED');
    const got = await delivered(p.path);
    expect(got.map((d) => d.body.type)).toEqual(['execution.failed']);
    expect(got[0]!.body.data).toMatchObject({ executionId: e.executionId, stepKey: 'a', error: x.lastError });
  });

  it('a failed attempt that is retried (attempts left) is no execution.failed', async () => {
    const p = await projectWithEndpoint();
    const wf = await workflowFrom(t.db, p.projectId, oneStep('retried'));
    const { claim } = await claimedAtA(p.projectId, wf.id);
    expect((await failStep(t.db, claim, { error: 'transient', retryInSeconds: 60 })).won).toBe(true);
    expect(await messages(p.projectId)).toEqual([]);
  });

  it('message.failed: the sender marks an email FAILED', async () => {
    const p = await projectWithEndpoint();
    const wf = await workflowFrom(t.db, p.projectId, {
      name: 'mail',
      trigger: 'MANUAL',
      steps: [
        { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
        { key: 'mail', type: 'SEND_EMAIL', name: 'Mail', config: { subject: 'Hi', body: 'Body' } },
      ],
      transitions: [{ from: 'start', to: 'mail', branch: null }],
    });
    const failing: MailTransport = { name: 'down', send: async () => Promise.reject(new Error('connection refused')) };
    const e = await enroll(t.db, { projectId: p.projectId, workflowId: wf.id, email: 'secret-person@example.com' });
    if (!e.ok) throw new Error(e.reason);
    await runWorkerOnce(createEngineContext(t.db, { transport: failing }));
    const message = await t.db.message.findFirstOrThrow({ where: { executionId: e.executionId } });
    expect(message.status).toBe('FAILED');
    const x = await t.db.workflowExecution.findUniqueOrThrow({ where: { id: e.executionId } });
    const got = (await delivered(p.path)).filter((d) => d.body.type === 'message.failed');
    expect(got).toHaveLength(1);
    expect(got[0]!.body.data).toEqual({
      messageId: message.id,
      executionId: e.executionId,
      workflowId: wf.id,
      workflowName: 'mail',
      contactId: x.contactId,
      stepKey: 'mail',
      error: 'connection refused',
    });
    expect(JSON.stringify(got[0]!.body)).not.toContain('secret-person');
  });

  it('event.dead: the outbox dead-letters an event after its last dispatch attempt', async () => {
    const p = await projectWithEndpoint();
    const ctx = createEngineContext(t.db, { config: { eventMaxAttempts: 2 } });
    const triggered = await workflowFrom(t.db, p.projectId, { ...oneStep('on-refund'), trigger: 'EVENT', triggerEvent: 'refund' });
    const contact = await createContact(t.db, p.projectId, 'dead@example.com');
    // A real failure inside PostgreSQL: the enrollment the event triggers cannot be stored.
    await t.query(`CREATE FUNCTION refuse_enrollment() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'enrollment store unavailable'; END $$`);
    await t.query(`CREATE TRIGGER refuse_enrollment BEFORE INSERT ON "WorkflowExecution" FOR EACH ROW WHEN (NEW."workflowId" = '${triggered.id}') EXECUTE FUNCTION refuse_enrollment()`);
    try {
      const tracked = await trackEvent(ctx, { projectId: p.projectId, name: 'refund', contactId: contact.id }, { dispatch: false });
      const eventId = (tracked as { eventId: string }).eventId;
      await expect(dispatchEvent(ctx, eventId)).rejects.toThrow(/enrollment store unavailable/);
      expect(await messages(p.projectId)).toEqual([]);
      await expect(dispatchEvent(ctx, eventId)).rejects.toThrow(/enrollment store unavailable/);
      const got = await delivered(p.path);
      expect(got.map((d) => d.body)).toEqual([
        {
          type: 'event.dead',
          timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
          data: { eventId, eventName: 'refund', contactId: contact.id, attempts: 2, error: expect.stringMatching(/enrollment store unavailable/) },
        },
      ]);
    } finally {
      await t.query(`DROP TRIGGER refuse_enrollment ON "WorkflowExecution"`);
      await t.query(`DROP FUNCTION refuse_enrollment()`);
    }
  });

  it('repair.applied: an operator retries a failed step through the repair code', async () => {
    const p = await projectWithEndpoint();
    const wf = await workflowFrom(t.db, p.projectId, oneStep('repaired'));
    const failed = await failedExecution(p.projectId, wf.id);
    await delivered(p.path);
    const result = await applyRepair(
      t.db,
      { projectId: p.projectId, action: 'RETRY_STEP', executionId: failed.executionId, actor: 'user:operator-1', reason: 'CRM is back', expectedVersion: failed.version },
      OPTS,
    );
    expect(result.ok).toBe(true);
    const audit = await t.db.auditEntry.findFirstOrThrow({ where: { projectId: p.projectId, action: 'repair.RETRY_STEP', outcome: 'APPLIED' } });
    const got = (await delivered(p.path)).filter((d) => d.body.type === 'repair.applied');
    expect(got.map((d) => d.body.data)).toEqual([
      { auditId: audit.id, action: 'repair.RETRY_STEP', targetType: 'execution', targetId: failed.executionId, actor: 'user:operator-1', reason: 'CRM is back' },
    ]);
    // A refused repair (stale version) is audited REJECTED, and is no repair.applied.
    const stale = await applyRepair(
      t.db,
      { projectId: p.projectId, action: 'RETRY_STEP', executionId: failed.executionId, actor: 'user:operator-1', reason: 'again', expectedVersion: failed.version },
      OPTS,
    );
    expect(stale.ok).toBe(false);
    expect((await delivered(p.path)).filter((d) => d.body.type === 'repair.applied')).toHaveLength(1);
  });

  it('workflow.published: publishing version 2 through server/engine/versions.ts (a lost publish sends none)', async () => {
    const p = await projectWithEndpoint();
    const wf = await workflowFrom(t.db, p.projectId, oneStep('published'));
    const v1 = (await versionDefinitionOf(t.db, wf.id, 1))!;
    const v2 = { ...v1, steps: v1.steps.map((s) => (s.key === 'a' ? { ...s, name: 'Sync CRM v2' } : s)) };
    const by = { projectId: p.projectId, actor: 'user:marketer-1' };
    expect(await publishVersion(t.db, by, { workflowId: wf.id, basedOnVersion: 1, definition: v2 })).toMatchObject({ ok: true, version: 2 });
    expect(await publishVersion(t.db, by, { workflowId: wf.id, basedOnVersion: 1, definition: v2 })).toMatchObject({ ok: false, reason: 'VERSION_CONFLICT' });
    const audit = await t.db.auditEntry.findFirstOrThrow({ where: { projectId: p.projectId, action: 'workflows.publish', outcome: 'APPLIED' } });
    const got = await delivered(p.path);
    expect(got.map((d) => d.body.data)).toEqual([{ auditId: audit.id, workflowId: wf.id, workflowName: 'published', version: 2, actor: 'user:marketer-1' }]);
  });

  it('fans out to every enabled endpoint subscribed to the type, and to none other', async () => {
    const projectId = (await createProject(t.db)).id;
    const paths = ['/fan/a', '/fan/b', '/fan/unsubscribed', '/fan/disabled'];
    await createTestEndpoint(t.db, projectId, { ...receiver.endpoint(paths[0]!), eventTypes: ['execution.failed'] });
    await createTestEndpoint(t.db, projectId, { ...receiver.endpoint(paths[1]!), eventTypes: ['execution.failed', 'event.dead'] });
    await createTestEndpoint(t.db, projectId, { ...receiver.endpoint(paths[2]!), eventTypes: ['event.dead'] });
    await createTestEndpoint(t.db, projectId, { ...receiver.endpoint(paths[3]!), eventTypes: ['execution.failed'], enabled: false });
    const other = await projectWithEndpoint();
    const wf = await workflowFrom(t.db, projectId, oneStep('fan'));
    await failedExecution(projectId, wf.id);
    await failedExecution(projectId, wf.id);
    await dispatchAllDue(t.db, dispatcherFor());
    const count = (path: string) => receiver.deliveries.filter((d) => d.path === path).length;
    expect(paths.map(count)).toEqual([2, 2, 0, 0]);
    expect(count(other.path)).toBe(0);
    // One webhook-id per endpoint and occurrence.
    const ids = receiver.deliveries.filter((d) => d.path.startsWith('/fan/')).map((d) => d.webhookId);
    expect(new Set(ids).size).toBe(4);
  });

  it('no endpoint: no message row at all', async () => {
    const projectId = (await createProject(t.db)).id;
    const wf = await workflowFrom(t.db, projectId, oneStep('quiet'));
    await failedExecution(projectId, wf.id);
    expect(await messages(projectId)).toEqual([]);
  });
});

describe('a change that rolls back', () => {
  it('writes no message: a failed step, an audit entry, a dead event inside a transaction that aborts', async () => {
    const p = await projectWithEndpoint();
    const wf = await workflowFrom(t.db, p.projectId, oneStep('rolled-back'));
    const { executionId, claim } = await claimedAtA(p.projectId, wf.id);
    const contact = await createContact(t.db, p.projectId, 'rb@example.com');
    const event = await t.db.event.create({ data: { projectId: p.projectId, contactId: contact.id, name: 'x' } });
    await expect(
      transaction(t.db, 'ENGINE', async (tx) => {
        expect((await failStep(tx, claim, { error: 'boom', retryInSeconds: null })).won).toBe(true);
        await writeAudit(tx, { projectId: p.projectId, actor: 'user:o', action: 'repair.SKIP_STEP', targetType: 'execution', targetId: executionId, outcome: 'APPLIED' });
        await tx.$executeRaw`UPDATE "Event" SET "deadAt" = now() WHERE id = ${event.id}::uuid`;
        // Inside the transaction the outbox rows exist...
        expect(await tx.webhookMessage.count({ where: { projectId: p.projectId } })).toBe(3);
        throw new Error('rolled back on purpose');
      }),
    ).rejects.toThrow('rolled back on purpose');
    // ...and the rollback took them along.
    expect(await messages(p.projectId)).toEqual([]);
    expect((await t.db.workflowExecution.findUniqueOrThrow({ where: { id: executionId } })).status).toBe('RUNNING');
    expect(await delivered(p.path)).toEqual([]);
    // The same change committed: exactly one.
    expect((await failStep(t.db, claim, { error: 'boom', retryInSeconds: null })).won).toBe(true);
    expect((await delivered(p.path)).map((d) => d.body.type)).toEqual(['execution.failed']);
  });
});
