import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngineContext } from '../../server/engine/context';
import { enroll } from '../../server/engine/enrollment';
import { trackEvent } from '../../server/engine/events';
import type { MailTransport } from '../../server/engine/transport';
import { runWorkerOnce } from '../../server/engine/worker';
import { removeExecutions, START } from '../../server/retention/batches';
import { sweep } from '../../server/retention/sweep';
import { stuckReasonsOf } from '../../server/stuck/predicates';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createContact, createProject, mailWorkflow, parkedAtWait, waitWorkflow, workflowFrom } from '../support/fixtures';
import { healthyRun, violations, type Healthy } from '../support/healthy-run';
import { ageProject, FAST, rowsOf, seedFinished } from '../support/retention';

// What a history sweep removes and what it keeps (docs/deploy.md, "Retention"), on a
// database in every state the engine and its operators leave (test/support/healthy-run.ts)
// moved 40 days into the past, swept with RETENTION_DAYS=30.

let t: TestDatabase;
const GRACE = 120;

beforeAll(async () => {
  t = await freshDatabase();
});
afterAll(async () => {
  await t.drop();
});

const statusOf = async (id: string) => (await t.query(`SELECT status FROM "WorkflowExecution" WHERE id = $1`, [id]))[0]?.status ?? null;

describe('a history sweep over every state the engine leaves, 40 days old', () => {
  let run: Healthy;
  let before: { id: string; status: string; stuck: string[]; mailInFlight: boolean }[];
  let swept: Awaited<ReturnType<typeof sweep>>;

  beforeAll(async () => {
    run = await healthyRun(t);
    await ageProject(t, run.projectId, 40);
    const rows = await t.query(
      `SELECT e.id, e.status::text AS status,
              EXISTS (SELECT 1 FROM "Message" m WHERE m."executionId" = e.id AND m.status IN ('QUEUED', 'SENDING')) AS "mailInFlight"
         FROM "WorkflowExecution" e WHERE e."projectId" = $1`,
      [run.projectId],
    );
    before = await Promise.all(
      rows.map(async (r) => ({
        ...r,
        stuck: (await stuckReasonsOf(t.db, { projectId: run.projectId, graceSeconds: GRACE }, r.id)).map((s) => s.reason),
      })),
    );
    expect(await violations(t.db)).toEqual({});
    swept = await sweep(t.db, 'history', { days: 30, graceSeconds: GRACE, timing: { ...FAST, executionBatch: 4, rowBatch: 4 } });
  });

  it('removes exactly the finished executions nobody must look at, with their step rows and emails', async () => {
    const after = new Set((await t.query(`SELECT id FROM "WorkflowExecution" WHERE "projectId" = $1`, [run.projectId])).map((r) => r.id));
    const finished = ['COMPLETED', 'EXITED', 'CANCELLED'];
    for (const e of before) {
      const mayGo = finished.includes(e.status) && e.stuck.length === 0 && !e.mailInFlight;
      expect(after.has(e.id), `${e.id} (${e.status}, stuck: ${e.stuck.join(',') || 'no'})`).toBe(!mayGo);
    }
    expect(swept.removed.executions).toBe(before.length - after.size);
    expect(swept.removed.executions).toBeGreaterThanOrEqual(15);
    const orphans = await t.query(
      `SELECT (SELECT count(*) FROM "StepExecution" s WHERE NOT EXISTS (SELECT 1 FROM "WorkflowExecution" e WHERE e.id = s."executionId"))::int AS steps,
              (SELECT count(*) FROM "Message" m WHERE NOT EXISTS (SELECT 1 FROM "WorkflowExecution" e WHERE e.id = m."executionId"))::int AS emails`,
    );
    expect(orphans).toEqual([{ steps: 0, emails: 0 }]);
    expect(swept.removed.steps).toBeGreaterThan(swept.removed.executions!);
    expect(swept.removed.emails).toBeGreaterThan(0);
  });

  it('keeps the stuck and the failed-unrepaired ones, and every running or waiting one', async () => {
    // MESSAGE_FAILED and MESSAGE_UNCONFIRMED on COMPLETED executions; FAILED; active ones.
    for (const name of ['mailFailed', 'mailUnconfirmed', 'failed', 'waiting', 'delayed', 'retryPending', 'stalled']) {
      expect(await statusOf(run.ids[name]!), name).not.toBeNull();
    }
    expect(await statusOf(run.ids.failed!)).toBe('FAILED');
    // Repaired, then finished: gone (cancelled, skipped, retried, an email resent, marked sent or given up on).
    for (const name of ['cancelled', 'cancelWait', 'skipped', 'retried', 'evt1', 'tmo1', 'force', 'deliver', 'mailResent', 'mailMarked', 'mailGivenUp']) {
      expect(await statusOf(run.ids[name]!), name).toBeNull();
    }
  });

  it('leaves every invariant holding (I4 still finds each kept resumed wait\'s event, I7 each queued email)', async () => {
    expect(await violations(t.db)).toEqual({});
  });

  it('removes processed events nothing waits on, and keeps pending, dead, and referenced ones', async () => {
    const kept = await t.query(
      `SELECT ev.id, ev.name, ev."processedAt" IS NOT NULL AS processed, ev."deadAt" IS NOT NULL AS dead,
              EXISTS (SELECT 1 FROM "StepExecution" s WHERE s."resumeEventId" = ev.id) AS resumed,
              EXISTS (SELECT 1 FROM "WorkflowExecution" x WHERE x."sourceEventId" = ev.id) AS enrolled,
              EXISTS (SELECT 1 FROM "WorkflowExecution" x WHERE x."contactId" = ev."contactId"
                        AND x.status IN ('RUNNING', 'WAITING', 'FAILED') AND x."startedAt" <= ev."createdAt") AS awaited
         FROM "Event" ev WHERE ev."projectId" = $1`,
      [run.projectId],
    );
    for (const ev of kept) {
      expect(!ev.processed || ev.dead || ev.resumed || ev.enrolled || ev.awaited, JSON.stringify(ev)).toBe(true);
    }
    expect(kept.some((ev) => ev.dead)).toBe(true);
    expect(kept.some((ev) => !ev.processed && !ev.dead)).toBe(true);
    // The signup event enrolled an execution that is still waiting.
    expect(kept.some((ev) => ev.name === 'signup' && ev.enrolled)).toBe(true);
    expect(swept.removed.events).toBeGreaterThanOrEqual(3);
  });

  it('touches no audit entry: that is the audit sweep\'s, with its own period', async () => {
    const [{ n }] = await t.query(`SELECT count(*)::int AS n FROM "AuditEntry" WHERE "projectId" = $1`, [run.projectId]);
    expect(n).toBeGreaterThan(10);
    expect(swept.removed.auditEntries).toBeUndefined();
  });

  it('a second sweep finds nothing more, and walked in batches of at most 4', async () => {
    expect(swept.batches).toBeGreaterThanOrEqual(Math.ceil(before.length / 4));
    const again = await sweep(t.db, 'history', { days: 30, graceSeconds: GRACE, timing: FAST });
    expect(again.removed).toMatchObject({ executions: 0, executionsReduced: 0, steps: 0, emails: 0, events: 0 });
  });
});

describe('the cut-off', () => {
  it('keeps what finished more recently than RETENTION_DAYS, and removes what finished before', async () => {
    const projectId = (await createProject(t.db)).id;
    await seedFinished(t, t.db, projectId, 5, 31);
    await seedFinished(t, t.db, projectId, 7, 29);
    const result = await sweep(t.db, 'history', { days: 30, graceSeconds: GRACE, timing: FAST });
    expect(result.removed).toMatchObject({ executions: 5, steps: 10, emails: 5 });
    expect(await rowsOf(t, projectId)).toMatchObject({ executions: 7, steps: 14, emails: 7 });
    const [{ n }] = await t.query(
      `SELECT count(*)::int AS n FROM "WorkflowExecution" WHERE "projectId" = $1 AND "finishedAt" < now() - interval '30 days'`,
      [projectId],
    );
    expect(n).toBe(0);
  });

  it('a batch looks at no more rows than its limit, and the walk goes past the rows it keeps', async () => {
    const projectId = (await createProject(t.db)).id;
    const oldest = await seedFinished(t, t.db, projectId, 6, 50);
    // The oldest six are kept (their emails failed: MESSAGE_FAILED), the 9 after them may go.
    await t.query(`UPDATE "Message" m SET status = 'FAILED', "sentAt" = NULL FROM "WorkflowExecution" e WHERE e.id = m."executionId" AND e."workflowId" = $1`, [oldest]);
    await seedFinished(t, t.db, projectId, 9, 40);
    const cutoff = new Date(Date.now() - 30 * 86_400_000);
    const first = await removeExecutions(t.db, { projectId, cutoff, graceSeconds: GRACE, limit: 4 }, START);
    expect(first).toMatchObject({ seen: 4, removed: { executions: 0 } });
    const second = await removeExecutions(t.db, { projectId, cutoff, graceSeconds: GRACE, limit: 4 }, first.next);
    expect(second.seen).toBe(4);
    expect(second.removed.executions).toBe(2);
    const result = await sweep(t.db, 'history', { days: 30, graceSeconds: GRACE, timing: { ...FAST, executionBatch: 4 } });
    expect(result.removed.executions).toBe(7);
    expect(await rowsOf(t, projectId)).toMatchObject({ executions: 6 });
  });
});

describe('an old processed event a wait may still take', () => {
  it('stays while its contact has an execution, begun before the event, that is not finished (waiting, or failed and retryable)', async () => {
    const projectId = (await createProject(t.db)).id;
    const workflow = await workflowFrom(t.db, projectId, waitWorkflow({ allowReentry: true }, 90 * 86_400));
    const waiting = await parkedAtWait(t.db, projectId, workflow.id, 'waits@example.com');
    const failedWf = await seedFinished(t, t.db, projectId, 1, 0);
    const [failed] = await t.query(`UPDATE "WorkflowExecution" SET status = 'FAILED' WHERE "workflowId" = $1 RETURNING id, "contactId"`, [failedWf]);
    const later = await seedFinished(t, t.db, projectId, 1, 0);
    const [{ contactId: laterContact }] = await t.query(`UPDATE "WorkflowExecution" SET status = 'RUNNING', "finishedAt" = NULL, "readyAt" = now() + interval '1 day'
      WHERE "workflowId" = $1 RETURNING "contactId"`, [later]);
    await ageProject(t, projectId, 40);
    // The running one began 10 days ago, after its contact's event: no wait of it can take the event.
    await t.query(`UPDATE "WorkflowExecution" SET "startedAt" = now() - interval '10 days' WHERE "workflowId" = $1`, [later]);
    const contactOf = async (executionId: string) => (await t.query(`SELECT "contactId" FROM "WorkflowExecution" WHERE id = $1`, [executionId]))[0].contactId;
    const event = async (contactId: string) =>
      (await t.query(
        `INSERT INTO "Event" ("projectId", "contactId", name, "createdAt", "processedAt", "nextDispatchAt", "dispatchAttempts")
         VALUES ($1, $2, 'purchase', now() - interval '35 days', now() - interval '35 days', now() - interval '35 days', 1) RETURNING id`,
        [projectId, contactId],
      ))[0].id as string;
    const forWaiting = await event(await contactOf(waiting.id));
    const forFailed = await event(failed.contactId);
    const forLater = await event(laterContact);
    const eventsLeft = async () => (await t.query(`SELECT id FROM "Event" WHERE "projectId" = $1 ORDER BY id`, [projectId])).map((r) => r.id);

    await sweep(t.db, 'history', { days: 30, graceSeconds: GRACE, timing: FAST });
    expect(await eventsLeft()).toEqual([forWaiting, forFailed].sort());
    expect(await eventsLeft()).not.toContain(forLater);
    // Once nothing of its contact can wait any more (cancelled, and itself swept), it goes.
    await t.query(`UPDATE "WorkflowExecution" SET status = 'CANCELLED', "finishedAt" = now() - interval '31 days' WHERE id = ANY($1::uuid[])`, [[waiting.id, failed.id]]);
    await t.query(`UPDATE "StepExecution" SET status = 'SKIPPED' WHERE "executionId" = $1 AND status = 'WAITING'`, [waiting.id]);
    // Its "hello" email was only queued (no sender ran here): sent, it is done with.
    await t.query(`UPDATE "Message" SET status = 'SENT', "sentAt" = now() - interval '35 days' WHERE "executionId" = $1`, [waiting.id]);
    const result = await sweep(t.db, 'history', { days: 30, graceSeconds: GRACE, timing: FAST });
    expect(result.removed).toMatchObject({ executions: 2, events: 2 });
    expect(await eventsLeft()).toEqual([]);
  });
});

describe('an old event that resumed the wait of a kept execution', () => {
  it('stays as long as that execution does: invariant I4 reads it', async () => {
    const projectId = (await createProject(t.db)).id;
    const workflow = await workflowFrom(t.db, projectId, waitWorkflow({ allowReentry: true }));
    const parked = await parkedAtWait(t.db, projectId, workflow.id, 'bought@example.com');
    const contactId = (await t.query(`SELECT "contactId" FROM "WorkflowExecution" WHERE id = $1`, [parked.id]))[0].contactId;
    const down: MailTransport = { name: 'down', send: async () => Promise.reject(new Error('550 mailbox unavailable')) };
    const ctx = createEngineContext(t.db, { transport: down });
    const tracked = await trackEvent(ctx, { projectId, name: 'purchase', contactId });
    if (!tracked.ok) throw new Error('event');
    await runWorkerOnce(ctx);
    // It went along EVENT to "thanks", whose email failed: MESSAGE_FAILED, for an operator.
    expect(await statusOf(parked.id)).toBe('COMPLETED');
    const [resumed] = await t.query(`SELECT "resumeEventId" FROM "StepExecution" WHERE id = $1`, [parked.stepExecutionId]);
    expect(resumed.resumeEventId).toBe(tracked.eventId);
    await ageProject(t, projectId, 40);
    await sweep(t.db, 'history', { days: 30, graceSeconds: GRACE, timing: FAST });
    expect(await statusOf(parked.id)).toBe('COMPLETED');
    expect(await t.query(`SELECT id FROM "Event" WHERE id = $1`, [tracked.eventId])).toHaveLength(1);
    expect(await violations(t.db)).toEqual({});
  });
});

describe('an execution enrolled once only', () => {
  it('keeps its row, so the contact still cannot enter again, and removes its history', async () => {
    const projectId = (await createProject(t.db)).id;
    const workflow = await workflowFrom(t.db, projectId, mailWorkflow({ allowReentry: false }));
    const contact = await createContact(t.db, projectId, 'once@example.com');
    const first = await enroll(t.db, { projectId, workflowId: workflow.id, contactId: contact.id, context: { coupon: 'A1' } });
    if (!first.ok) throw new Error(first.reason);
    await runWorkerOnce(createEngineContext(t.db));
    expect(await statusOf(first.executionId)).toBe('COMPLETED');
    await ageProject(t, projectId, 40);

    const result = await sweep(t.db, 'history', { days: 30, graceSeconds: GRACE, timing: FAST });
    expect(result.removed).toMatchObject({ executions: 0, executionsReduced: 1, steps: 2, emails: 1 });
    const [row] = await t.query(`SELECT status, context, "historyRemovedAt" FROM "WorkflowExecution" WHERE id = $1`, [first.executionId]);
    expect(row).toMatchObject({ status: 'COMPLETED', context: {}, historyRemovedAt: expect.any(Date) });
    expect(await rowsOf(t, projectId)).toMatchObject({ executions: 1, steps: 0, emails: 0 });

    const again = await enroll(t.db, { projectId, workflowId: workflow.id, contactId: contact.id });
    expect(again).toMatchObject({ ok: false, reason: 'REENTRY_BLOCKED', executionId: first.executionId });
    // Off the walk: the next sweep does not count it again.
    expect((await sweep(t.db, 'history', { days: 30, graceSeconds: GRACE, timing: FAST })).removed.executionsReduced).toBe(0);
    expect(await violations(t.db)).toEqual({});
  });
});

describe('webhook messages', () => {
  it('removes settled ones (delivered, dead) with their attempts, and keeps pending ones', async () => {
    const projectId = (await createProject(t.db)).id;
    const endpoint = await t.db.webhookEndpoint.create({ data: { projectId, url: 'https://hooks.example.com/x', eventTypes: ['event.dead'], secret: 'whsec_x' } });
    const make = async (status: 'PENDING' | 'DELIVERED' | 'DEAD') =>
      t.db.webhookMessage.create({ data: { projectId, endpointId: endpoint.id, eventType: 'event.dead', payload: {}, status } });
    const [pending, delivered, dead] = [await make('PENDING'), await make('DELIVERED'), await make('DEAD')];
    await t.db.webhookAttempt.create({ data: { messageId: delivered.id, latencyMs: 12, responseStatus: 200, dispatcher: 'worker:x' } });
    await ageProject(t, projectId, 40);
    const result = await sweep(t.db, 'history', { days: 30, graceSeconds: GRACE, timing: FAST });
    expect(result.removed).toMatchObject({ webhookMessages: 2, webhookAttempts: 1 });
    const left = await t.query(`SELECT id FROM "WebhookMessage" WHERE "projectId" = $1`, [projectId]);
    expect(left.map((r) => r.id)).toEqual([pending.id]);
    expect([delivered.id, dead.id]).not.toContain(left[0]!.id);
  });
});

