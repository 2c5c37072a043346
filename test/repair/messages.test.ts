import { TRPCError } from '@trpc/server';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import superjson from 'superjson';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngineContext } from '../../server/engine/context';
import { enroll } from '../../server/engine/enrollment';
import { checkInvariants } from '../../server/engine/invariants';
import { deliverQueuedMessages } from '../../server/engine/sender';
import type { MailTransport } from '../../server/engine/transport';
import { claimQueuedMessages } from '../../server/engine/claims';
import { STUCK_REASONS } from '../../server/common/stuck-reasons';
import { countStuck } from '../../server/stuck/counts';
import { listStuck } from '../../server/stuck/list';
import { withDocumentedProcedureNames } from '../../server/http/api-request';
import { appRouter } from '../../server/trpc/root';
import type { Actor } from '../../server/auth/actor';
import { actorFor, callerFor, contextFor } from '../support/callers';
import { freshDatabase, type TestDatabase } from '../support/database';
import { driveFromStart } from '../support/drive';
import { createProject, delayWorkflow, workflowFrom } from '../support/fixtures';
import { fulfilled, racers, type Racers } from '../support/race';

// An email whose fate is unknown (its sender died while SENDING) or
// that failed is listed as stuck (MESSAGE_UNCONFIRMED, MESSAGE_FAILED), and an operator
// can mark it sent, resend it (warned it may duplicate) or give up, through repair.preview
// and repair.applyOne (repair.apply over HTTP), each audited, each a CAS on the message.

let t: TestDatabase;
let projectId: string;
let workflowId: string;
let operator: Actor;
let r2: Racers;

beforeAll(async () => {
  t = await freshDatabase();
  r2 = await racers(t.url, 2);
  projectId = (await createProject(t.db)).id;
  operator = actorFor(projectId, 'OPERATOR');
  workflowId = (
    await workflowFrom(t.db, projectId, {
      name: 'mail',
      trigger: 'MANUAL',
      steps: [
        { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
        { key: 'mail', type: 'SEND_EMAIL', name: 'Welcome mail', config: { subject: 'Welcome', body: 'Hello' } },
      ],
      transitions: [{ from: 'start', to: 'mail', branch: null }],
    })
  ).id;
});
afterAll(async () => {
  await r2?.close();
  await t?.drop();
});

const failing: MailTransport = { name: 'down', send: async () => Promise.reject(new Error('550 mailbox unavailable')) };
function accepting(sent: string[]): MailTransport {
  return { name: 'ok', send: async (m) => (sent.push(m.to), { providerId: `ok:${sent.length}` }) };
}

/** An execution whose email is queued; returns the execution and message ids. */
async function queued(email: string): Promise<{ executionId: string; messageId: string }> {
  const enrolled = await enroll(t.db, { projectId, workflowId, email });
  if (!enrolled.ok) throw new Error('enrollment failed');
  await driveFromStart(t.db, enrolled.executionId);
  const [m] = await t.query(`SELECT id FROM "Message" WHERE "executionId" = $1 AND status = 'QUEUED'`, [enrolled.executionId]);
  return { executionId: enrolled.executionId, messageId: m.id };
}

/** Its sender claimed it and died mid-send: SENDING, lease run out. */
async function unconfirmed(email: string) {
  const q = await queued(email);
  // Only this message: a sender that claims the one queued message, then dies.
  const claimed = await claimQueuedMessages(t.db, { owner: 'worker:dead', leaseSeconds: 0, limit: 100 });
  expect(claimed.map((c) => c.id)).toEqual([q.messageId]);
  // Time passes beyond the stuck grace period (STUCK_GRACE_SECONDS).
  await t.query(`UPDATE "Message" SET "leaseExpiresAt" = now() - interval '1 hour' WHERE id = $1`, [q.messageId]);
  return q;
}

async function failed(email: string) {
  const q = await queued(email);
  await deliverQueuedMessages(createEngineContext(t.db, { transport: failing }), { from: 'x@example.com', limit: 100 });
  return q;
}

async function message(id: string) {
  const [m] = await t.query(`SELECT status::text, version, "providerId", error FROM "Message" WHERE id = $1`, [id]);
  return m as { status: string; version: number; providerId: string | null; error: string | null };
}

const caller = () => callerFor(t.db, operator);
const errorOf = (p: Promise<unknown>) => p.then(() => null, (e: unknown) => e as TRPCError & { cause?: { conflict?: Record<string, unknown> } });

async function expectHealthy() {
  const bad = (await checkInvariants(t.db)).filter((r) => r.violations > 0);
  expect(bad).toEqual([]);
}

describe('stuck emails', () => {
  it('an email left SENDING past its lease is MESSAGE_UNCONFIRMED, a failed one MESSAGE_FAILED, listed and counted with the others', async () => {
    const u = await unconfirmed('unconfirmed@example.com');
    const f = await failed('failed@example.com');
    const listed = await caller().repair.stuck({});
    const byReason = Object.fromEntries(listed.items.map((i) => [i.reason, i]));
    expect(byReason.MESSAGE_UNCONFIRMED).toMatchObject({
      executionId: u.executionId,
      eventId: null,
      workflowId,
      detail: { messageId: u.messageId, status: 'SENDING', sender: 'worker:dead' },
    });
    expect(byReason.MESSAGE_UNCONFIRMED!.description).toMatch(/sender stopped renewing its lease/);
    expect(byReason.MESSAGE_FAILED).toMatchObject({
      executionId: f.executionId,
      detail: { messageId: f.messageId, status: 'FAILED', error: '550 mailbox unavailable' },
    });
    expect((await caller().repair.stuck({ reason: 'MESSAGE_FAILED' })).items.map((i) => i.detail.messageId)).toEqual([f.messageId]);

    const stats = await caller().executions.stats({});
    expect(stats.byStuckReason).toMatchObject({ MESSAGE_UNCONFIRMED: 1, MESSAGE_FAILED: 1 });
    expect(Object.keys(stats.byStuckReason).sort()).toEqual([...STUCK_REASONS].sort());
    // The execution's own detail names the reason too.
    const detail = await caller().executions.get({ id: f.executionId });
    expect(detail.stuck.map((s) => s.reason)).toContain('MESSAGE_FAILED');
    // A workflow filter applies to emails as well.
    const other = await workflowFrom(t.db, projectId, { ...delayWorkflow(60), name: 'other' });
    expect(await countStuck(t.db, { projectId, workflowId: other.id, graceSeconds: 0 })).toMatchObject({ MESSAGE_UNCONFIRMED: 0, MESSAGE_FAILED: 0 });

    // Clean up for the tests below: give up on both.
    for (const m of [u, f]) {
      const p = await caller().repair.preview({ action: 'GIVE_UP', messageId: m.messageId });
      await caller().repair.applyOne({ action: 'GIVE_UP', messageId: m.messageId, expectedVersion: p.expectedVersion, reason: 'clean up' });
    }
    expect((await countStuck(t.db, { projectId, graceSeconds: 0 })).MESSAGE_FAILED).toBe(0);
  });

  it('a SENDING email whose sender is still within its lease is not stuck', async () => {
    const q = await queued('live@example.com');
    await claimQueuedMessages(t.db, { owner: 'worker:live', leaseSeconds: 600, limit: 100 });
    const counts = await countStuck(t.db, { projectId, graceSeconds: 0 });
    expect(counts.MESSAGE_UNCONFIRMED).toBe(0);
    // ... and no repair may take it from its sender.
    const p = await caller().repair.preview({ action: 'RESEND', messageId: q.messageId });
    expect(p.plan).toMatchObject({ allowed: false });
    const error = await errorOf(
      caller().repair.applyOne({ action: 'RESEND', messageId: q.messageId, expectedVersion: p.expectedVersion, reason: 'too early' }),
    );
    expect(error?.code).toBe('PRECONDITION_FAILED');
    expect(await message(q.messageId)).toMatchObject({ status: 'SENDING' });
    expect(await t.db.auditEntry.count({ where: { targetId: q.messageId, action: 'repair.RESEND', outcome: 'REJECTED' } })).toBe(1);
    await t.query(`UPDATE "Message" SET status = 'SENT', "leaseExpiresAt" = NULL WHERE id = $1`, [q.messageId]);
  });
});

describe('message repairs', () => {
  it('MARK_SENT: the operator checked the provider; recorded SENT with its id, nothing sent, audited', async () => {
    const u = await unconfirmed('mark@example.com');
    const preview = await caller().repair.preview({ action: 'MARK_SENT', messageId: u.messageId });
    expect(preview.plan).toMatchObject({ allowed: true, sideEffect: { emailMayBeSent: false, mayDuplicate: false } });
    expect(preview.target).toMatchObject({ kind: 'message', executionId: u.executionId, status: 'SENDING', stepName: 'Welcome mail' });
    const sent: string[] = [];
    const result = await caller().repair.applyOne({
      action: 'MARK_SENT',
      messageId: u.messageId,
      expectedVersion: preview.expectedVersion,
      reason: 'provider log shows it delivered',
      providerId: 'smtp:<abc@provider>',
    });
    expect(result).toMatchObject({ ok: true, messageId: u.messageId, executionId: u.executionId, status: 'SENT' });
    expect(await message(u.messageId)).toMatchObject({ status: 'SENT', providerId: 'smtp:<abc@provider>', version: preview.expectedVersion + 1 });
    await deliverQueuedMessages(createEngineContext(t.db, { transport: accepting(sent) }), { from: 'x@example.com', limit: 100 });
    expect(sent).toEqual([]);
    const [audit] = await t.db.auditEntry.findMany({ where: { targetId: u.messageId, action: 'repair.MARK_SENT' } });
    expect(audit).toMatchObject({ outcome: 'APPLIED', actor: operator.id, targetType: 'message', reason: 'provider log shows it delivered' });
    expect(audit!.after).toMatchObject({ executionId: u.executionId, version: preview.expectedVersion + 1 });
    // Done: a second MARK_SENT is refused, not applied twice.
    const again = await errorOf(
      caller().repair.applyOne({ action: 'MARK_SENT', messageId: u.messageId, expectedVersion: preview.expectedVersion + 1, reason: 'again' }),
    );
    expect(again?.code).toBe('PRECONDITION_FAILED');
    await expectHealthy();
  });

  it('RESEND: its preview warns of a duplicate; the email is queued again and a sender delivers it once', async () => {
    const f = await failed('resend@example.com');
    const preview = await caller().repair.preview({ action: 'RESEND', messageId: f.messageId });
    expect(preview.plan).toMatchObject({ allowed: true, sideEffect: { emailMayBeSent: true, mayDuplicate: true } });
    expect(preview.plan.sideEffect.note).toMatch(/duplicate/);
    const u = await unconfirmed('resend-unknown@example.com');
    const p2 = await caller().repair.preview({ action: 'RESEND', messageId: u.messageId });
    expect(p2.plan.sideEffect.note).toMatch(/WARNING: this may send a duplicate/);
    await caller().repair.applyOne({ action: 'GIVE_UP', messageId: u.messageId, expectedVersion: p2.expectedVersion, reason: 'not this one' });

    const result = await caller().repair.applyOne({ action: 'RESEND', messageId: f.messageId, expectedVersion: preview.expectedVersion, reason: 'mailbox is back' });
    expect(result).toMatchObject({ ok: true, status: 'QUEUED' });
    const sent: string[] = [];
    const ctx = createEngineContext(t.db, { transport: accepting(sent) });
    await deliverQueuedMessages(ctx, { from: 'x@example.com', limit: 100 });
    await deliverQueuedMessages(ctx, { from: 'x@example.com', limit: 100 });
    expect(sent).toEqual(['resend@example.com']);
    expect(await message(f.messageId)).toMatchObject({ status: 'SENT', error: null });
    expect(await t.query(`SELECT id FROM "Message" WHERE "executionId" = $1`, [f.executionId])).toHaveLength(1);
    await expectHealthy();
  });

  it('GIVE_UP: ABANDONED, never sent, no longer stuck', async () => {
    const f = await failed('giveup@example.com');
    const preview = await caller().repair.preview({ action: 'GIVE_UP', messageId: f.messageId });
    await caller().repair.applyOne({ action: 'GIVE_UP', messageId: f.messageId, expectedVersion: preview.expectedVersion, reason: 'bad address' });
    expect(await message(f.messageId)).toMatchObject({ status: 'ABANDONED' });
    const page = await listStuck(t.db, { projectId, graceSeconds: 0, limit: 100 });
    expect(page.items.filter((i) => i.detail.messageId === f.messageId)).toEqual([]);
    await expectHealthy();
  });

  it('a stale version loses with CONFLICT naming the operator who won; audited LOST', async () => {
    const f = await failed('stale@example.com');
    const preview = await caller().repair.preview({ action: 'RESEND', messageId: f.messageId });
    const other = actorFor(projectId, 'OPERATOR', 'other');
    await callerFor(t.db, other).repair.applyOne({ action: 'GIVE_UP', messageId: f.messageId, expectedVersion: preview.expectedVersion, reason: 'first' });
    const error = await errorOf(
      caller().repair.applyOne({ action: 'RESEND', messageId: f.messageId, expectedVersion: preview.expectedVersion, reason: 'second' }),
    );
    expect(error?.code).toBe('CONFLICT');
    expect(error?.cause?.conflict).toMatchObject({
      reason: 'STALE_VERSION',
      status: 'ABANDONED',
      currentVersion: preview.expectedVersion + 1,
      winner: { kind: 'operator', actor: other.id, action: 'repair.GIVE_UP' },
    });
    expect(await t.db.auditEntry.count({ where: { targetId: f.messageId, action: 'repair.RESEND', outcome: 'LOST' } })).toBe(1);
  });

  it('two operators resending at once: one applies, the other loses; one email', async () => {
    for (let round = 0; round < 10; round++) {
      const f = await failed(`race-${round}@example.com`);
      const preview = await caller().repair.preview({ action: 'RESEND', messageId: f.messageId });
      const results = fulfilled(
        await r2.race((db, i) =>
          callerFor(db, actorFor(projectId, 'OPERATOR', `op${i}`))
            .repair.applyOne({ action: 'RESEND', messageId: f.messageId, expectedVersion: preview.expectedVersion, reason: 'race' })
            .then((r) => r.ok, (e: TRPCError) => e.code),
        ),
      );
      expect(results.sort(), `round ${round}`).toEqual(['CONFLICT', true].sort());
      const sent: string[] = [];
      await deliverQueuedMessages(createEngineContext(t.db, { transport: accepting(sent) }), { from: 'x@example.com', limit: 100 });
      expect(sent).toEqual([`race-${round}@example.com`]);
    }
    await expectHealthy();
  });

  it('the reason is mandatory; a missing messageId or an unknown message is refused, never a 500', async () => {
    const f = await failed('input@example.com');
    expect((await errorOf(caller().repair.applyOne({ action: 'GIVE_UP', messageId: f.messageId, expectedVersion: 1, reason: '' })))?.code).toBe('BAD_REQUEST');
    expect((await errorOf(caller().repair.applyOne({ action: 'GIVE_UP', expectedVersion: 1, reason: 'no target' })))?.code).toBe('BAD_REQUEST');
    const unknown = crypto.randomUUID();
    expect((await errorOf(caller().repair.applyOne({ action: 'GIVE_UP', messageId: unknown, expectedVersion: 1, reason: 'nope' })))?.code).toBe('NOT_FOUND');
    expect(await t.db.auditEntry.count({ where: { targetId: unknown, outcome: 'REJECTED' } })).toBe(1);
    // Another project's email is not found either.
    const stranger = actorFor((await createProject(t.db)).id, 'OPERATOR');
    expect((await errorOf(callerFor(t.db, stranger).repair.preview({ action: 'GIVE_UP', messageId: f.messageId })))?.code).toBe('NOT_FOUND');
    // A viewer may not repair.
    expect((await errorOf(callerFor(t.db, actorFor(projectId, 'VIEWER')).repair.preview({ action: 'GIVE_UP', messageId: f.messageId })))?.code).toBe('FORBIDDEN');
  });

  it('over HTTP, the documented repair.apply serves message repairs', async () => {
    const f = await failed('http@example.com');
    const preview = await caller().repair.preview({ action: 'MARK_SENT', messageId: f.messageId });
    const body = JSON.stringify(superjson.serialize({ action: 'MARK_SENT', messageId: f.messageId, expectedVersion: preview.expectedVersion, reason: 'over http' }));
    const req = withDocumentedProcedureNames(
      new Request('http://localhost/api/trpc/repair.apply', { method: 'POST', headers: { 'content-type': 'application/json' }, body }),
    );
    const response = await fetchRequestHandler({ endpoint: '/api/trpc', router: appRouter, createContext: () => contextFor(t.db, operator), req });
    expect(response.status).toBe(200);
    expect(await message(f.messageId)).toMatchObject({ status: 'SENT' });
    // And a refusal is 412, a lost race 409, never a 500.
    const again = await fetchRequestHandler({
      endpoint: '/api/trpc',
      router: appRouter,
      createContext: () => contextFor(t.db, operator),
      req: withDocumentedProcedureNames(new Request('http://localhost/api/trpc/repair.apply', { method: 'POST', headers: { 'content-type': 'application/json' }, body })),
    });
    expect(again.status).toBe(409);
  });
});
