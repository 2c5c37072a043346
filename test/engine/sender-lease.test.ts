import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renewMessageLeases } from '../../server/engine/claims';
import { createEngineContext } from '../../server/engine/context';
import { enroll } from '../../server/engine/enrollment';
import { deliverQueuedMessages } from '../../server/engine/sender';
import { smtpTransport, type MailTransport } from '../../server/engine/transport';
import { applyMessageRepair, previewMessageRepair } from '../../server/repair/messages';
import { listStuck } from '../../server/stuck/list';
import { freshDatabase, type TestDatabase } from '../support/database';
import { driveFromStart } from '../support/drive';
import { createProject, workflowFrom } from '../support/fixtures';

// A slow provider is not a dead sender. While the transport works, the sender renews the
// lease of each email it has not heard back about, so the console does not call the email
// unconfirmed and RESEND is refused: the contact gets the email once. Only a lease that
// lapsed without renewal (the sender died, or its provider did not answer within the send
// timeout) makes the email an operator's to decide, and the sender's late outcome is then
// kept in the audit log instead of being dropped. Each SMTP phase is bounded well under
// the lease, so a provider that stops answering fails the send instead of holding it for
// nodemailer's ten minutes.

let t: TestDatabase;

beforeAll(async () => {
  t = await freshDatabase();
});
afterAll(async () => t?.drop());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A provider that takes `ms` to accept each email, or holds it until `release()` when ms is null. */
function slowTransport(ms: number | null) {
  const sent: string[] = [];
  let release: () => void = () => {};
  const released = new Promise<void>((r) => (release = r));
  const transport: MailTransport = {
    name: 'slow',
    async send(message) {
      if (ms === null) await released;
      else await sleep(ms);
      sent.push(message.to);
      return { providerId: `slow:${sent.length}` };
    },
  };
  return { transport, sent, release };
}

/** A project with one contact enrolled in a one-email workflow, its email QUEUED. */
async function queuedEmail(email: string): Promise<{ projectId: string; messageId: string }> {
  const p = await createProject(t.db);
  const wf = await workflowFrom(t.db, p.id, {
    name: 'mail',
    trigger: 'MANUAL',
    steps: [
      { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
      { key: 'mail', type: 'SEND_EMAIL', name: 'Mail', config: { subject: 'Hi', body: 'Hello' } },
    ],
    transitions: [{ from: 'start', to: 'mail', branch: null }],
  });
  const enrolled = await enroll(t.db, { projectId: p.id, workflowId: wf.id, email });
  if (!enrolled.ok) throw new Error('enrollment failed');
  await driveFromStart(t.db, enrolled.executionId);
  const [m] = await t.query(`SELECT id, status FROM "Message" WHERE "projectId" = $1`, [p.id]);
  expect(m.status).toBe('QUEUED');
  return { projectId: p.id, messageId: m.id };
}

async function messageRow(id: string) {
  const [m] = await t.query(`SELECT status, version, "providerId", "leaseOwner", "leaseExpiresAt" FROM "Message" WHERE id = $1`, [id]);
  return m as { status: string; version: number; providerId: string | null; leaseOwner: string | null; leaseExpiresAt: Date | null };
}

async function unconfirmed(projectId: string): Promise<string[]> {
  const stuck = await listStuck(t.db, { projectId, graceSeconds: 0, limit: 10, reasons: ['MESSAGE_UNCONFIRMED'] });
  return stuck.items.map((i) => i.detail.messageId as string);
}

describe('sender: a send longer than the lease', () => {
  // Each round: a 1 s lease, a provider that takes 3 s; an operator watches the stuck
  // list and tries RESEND while the send is in flight.
  it.each([1, 2, 3])('keeps its lease: never listed unconfirmed, RESEND refused, the provider gets one email (round %i)', async (round) => {
    const { projectId, messageId } = await queuedEmail(`slow-${round}@example.com`);
    const provider = slowTransport(3000);
    const ctx = createEngineContext(t.db, { transport: provider.transport, config: { leaseSeconds: 1 } });
    const sending = deliverQueuedMessages(ctx, { from: 'x@example.com', limit: 10 });

    const seenUnconfirmed: string[][] = [];
    const resends: unknown[] = [];
    const started = Date.now();
    while (Date.now() - started < 2700) {
      await sleep(300);
      seenUnconfirmed.push(await unconfirmed(projectId));
      if (Date.now() - started > 1500 && resends.length === 0) {
        const preview = await previewMessageRepair(t.db, { projectId, action: 'RESEND', messageId });
        const applied = await applyMessageRepair(t.db, {
          projectId,
          action: 'RESEND',
          messageId,
          actor: 'user:operator',
          expectedVersion: preview.expectedVersion,
          reason: 'the sender looks dead',
        });
        resends.push({ allowed: preview.plan.allowed, applied: applied.ok, refusal: preview.plan.refusal });
      }
    }
    await sending;
    // Whatever a RESEND did, a later pass delivers what it queued.
    await deliverQueuedMessages(ctx, { from: 'x@example.com', limit: 10 });

    expect(seenUnconfirmed.flat()).toEqual([]);
    expect(resends).toEqual([{ allowed: false, applied: false, refusal: expect.stringContaining('a sender is delivering this email right now') }]);
    expect(provider.sent).toEqual([`slow-${round}@example.com`]);
    expect(await messageRow(messageId)).toMatchObject({ status: 'SENT', providerId: 'slow:1', leaseOwner: null });
  }, 15_000);
});

describe('sender: a provider that never answers', () => {
  it('is renewed only until the send timeout; then the lease lapses, the email is MESSAGE_UNCONFIRMED, and a late SENT is kept in the audit log', async () => {
    const { projectId, messageId } = await queuedEmail('hung@example.com');
    const provider = slowTransport(null);
    const ctx = createEngineContext(t.db, {
      transport: provider.transport,
      owner: 'worker:test:hung',
      config: { leaseSeconds: 1, sendTimeoutSeconds: 1 },
    });
    const sending = deliverQueuedMessages(ctx, { from: 'x@example.com', limit: 10 });
    // Renewed past its first second...
    await sleep(1300);
    expect(await unconfirmed(projectId)).toEqual([]);
    // ... but not past the send timeout plus a lease.
    await sleep(1700);
    expect(await unconfirmed(projectId)).toEqual([messageId]);

    const preview = await previewMessageRepair(t.db, { projectId, action: 'RESEND', messageId });
    expect(preview.plan.allowed).toBe(true);
    expect(preview.plan.sideEffect.note).toContain('its sender (worker:test:hung) stopped renewing its lease');
    const applied = await applyMessageRepair(t.db, {
      projectId,
      action: 'RESEND',
      messageId,
      actor: 'user:operator',
      expectedVersion: preview.expectedVersion,
      reason: 'provider checked: it does not have it',
    });
    expect(applied.ok).toBe(true);

    // The provider answers at last: the sender's write is fenced out, its provider id kept.
    provider.release();
    await sending;
    expect(await messageRow(messageId)).toMatchObject({ status: 'QUEUED', providerId: null });
    const late = await t.query(
      `SELECT actor, outcome, after FROM "AuditEntry" WHERE "targetId" = $1 AND action = 'sender.lateDelivery'`,
      [messageId],
    );
    expect(late).toEqual([{ actor: 'worker:test:hung', outcome: 'LOST', after: { providerId: 'slow:1' } }]);
  }, 15_000);
});

describe('renewMessageLeases', () => {
  async function sendingMessage(email: string, leaseSeconds: number) {
    const { messageId } = await queuedEmail(email);
    await t.query(
      `UPDATE "Message" SET status = 'SENDING', version = version + 1, "leaseOwner" = 'sender-a',
              "leaseExpiresAt" = now() + $2 * interval '1 second' WHERE id = $1`,
      [messageId, leaseSeconds],
    );
    return { messageId, version: (await messageRow(messageId)).version };
  }

  it('extends its own live lease at the version of its claim, and nothing else', async () => {
    const live = await sendingMessage('renew-live@example.com', 5);
    const before = (await messageRow(live.messageId)).leaseExpiresAt!;
    expect(await renewMessageLeases(t.db, { owner: 'sender-a', leaseSeconds: 60, messages: [live] })).toEqual([live.messageId]);
    expect((await messageRow(live.messageId)).leaseExpiresAt!.getTime()).toBeGreaterThan(before.getTime() + 30_000);

    // Another sender's lease, or another version of the message: untouched.
    expect(await renewMessageLeases(t.db, { owner: 'sender-b', leaseSeconds: 600, messages: [live] })).toEqual([]);
    expect(await renewMessageLeases(t.db, { owner: 'sender-a', leaseSeconds: 600, messages: [{ ...live, version: live.version - 1 }] })).toEqual([]);
  });

  it('never revives a lease that lapsed: the email is already an operator\'s to decide', async () => {
    const lapsed = await sendingMessage('renew-lapsed@example.com', -1);
    expect(await renewMessageLeases(t.db, { owner: 'sender-a', leaseSeconds: 60, messages: [lapsed] })).toEqual([]);
    expect((await messageRow(lapsed.messageId)).leaseExpiresAt!.getTime()).toBeLessThan(Date.now());
  });
});

describe('SMTP transport: every phase bounded', () => {
  const sockets: Socket[] = [];
  let server: Server;
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => server?.close(() => r()));
  });

  /** An SMTP server that greets only when `greet`, and after that answers EHLO and then nothing. */
  async function stalling(greet: boolean): Promise<number> {
    server = createServer((socket) => {
      sockets.push(socket);
      if (!greet) return;
      socket.write('220 stalling ESMTP\r\n');
      socket.on('data', (chunk) => {
        if (/^(EHLO|HELO)/i.test(chunk.toString())) socket.write('250 stalling\r\n');
        // MAIL FROM and everything after: no answer, ever.
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    return (server.address() as AddressInfo).port;
  }

  it.each([
    ['never greets', false],
    ['stops answering after EHLO', true],
  ])('a server that %s fails the send within the bound, not minutes later', async (_what, greet) => {
    const port = await stalling(greet);
    const transport = smtpTransport(`smtp://127.0.0.1:${port}`, { timeoutMs: 500 });
    const started = Date.now();
    const outcome = await Promise.race([
      transport.send({ to: 'a@example.com', subject: 's', body: 'b', from: 'x@example.com' }).then(
        () => 'sent',
        (error: Error) => `failed: ${error.message}`,
      ),
      sleep(4000).then(() => 'still waiting after 4 s'),
    ]);
    transport.close?.();
    await new Promise<void>((r) => server.close(() => r()));
    expect(outcome).toMatch(/^failed: /);
    expect(Date.now() - started).toBeLessThan(3000);
  }, 10_000);
});
