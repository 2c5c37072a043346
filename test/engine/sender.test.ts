import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SMTPServer } from 'smtp-server';
import type { AddressInfo } from 'node:net';
import { createEngineContext } from '../../server/engine/context';
import { enroll } from '../../server/engine/enrollment';
import { deliverQueuedMessages } from '../../server/engine/sender';
import { logTransport, smtpTransport, type MailTransport } from '../../server/engine/transport';
import { runWorkerOnce } from '../../server/engine/worker';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createProject, workflowFrom } from '../support/fixtures';

// The email sender: queued messages leave through a transport exactly once. SMTP is
// tested against a real SMTP server on localhost (the smtp-server package), not a mock.

let t: TestDatabase;
let smtp: SMTPServer;
let port = 0;
const received: { to: string; raw: string }[] = [];

beforeAll(async () => {
  t = await freshDatabase();
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    onData(stream, session, callback) {
      let raw = '';
      stream.on('data', (c: Buffer) => (raw += c.toString()));
      stream.on('end', () => {
        received.push({ to: session.envelope.rcptTo.map((r) => r.address).join(','), raw });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', () => resolve()));
  port = (smtp.server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise<void>((resolve) => smtp.close(() => resolve()));
  await t?.drop();
});

async function oneMailWorkflow(projectId: string) {
  return workflowFrom(t.db, projectId, {
    name: `mail-${Math.random().toString(36).slice(2, 8)}`,
    trigger: 'MANUAL',
    steps: [
      { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
      { key: 'mail', type: 'SEND_EMAIL', name: 'Mail', config: { subject: 'Hi {{contact.data.name}}', body: 'Body for {{contact.email}}' } },
    ],
    transitions: [{ from: 'start', to: 'mail', branch: null }],
  });
}

describe('sender', () => {
  it('delivers through SMTP when configured, once, and records the provider id', async () => {
    const ctx = createEngineContext(t.db, { transport: smtpTransport(`smtp://127.0.0.1:${port}`) });
    const p = await createProject(t.db);
    const wf = await oneMailWorkflow(p.id);
    await enroll(t.db, { projectId: p.id, workflowId: wf.id, email: 'zoe@example.com', contactData: { name: 'Zoe' } });
    await runWorkerOnce(ctx, { from: 'Team <team@example.com>' });
    expect(received).toHaveLength(1);
    expect(received[0]!.to).toBe('zoe@example.com');
    expect(received[0]!.raw).toContain('Subject: Hi Zoe');
    expect(received[0]!.raw).toContain('Body for zoe@example.com');
    const [message] = await t.db.message.findMany({ where: { projectId: p.id } });
    expect(message).toMatchObject({ status: 'SENT', providerId: expect.stringMatching(/^smtp:/) });
    // Nothing left to send: another pass delivers nothing again.
    expect(await deliverQueuedMessages(ctx, { from: 'x@example.com', limit: 10 })).toBe(0);
    expect(received).toHaveLength(1);
  });

  it('a transport failure marks the message FAILED and does not retry it blindly', async () => {
    const failing: MailTransport = { name: 'down', send: async () => Promise.reject(new Error('connection refused')) };
    const ctx = createEngineContext(t.db, { transport: failing });
    const p = await createProject(t.db);
    const wf = await oneMailWorkflow(p.id);
    await enroll(t.db, { projectId: p.id, workflowId: wf.id, email: 'yan@example.com' });
    await runWorkerOnce(ctx);
    const [message] = await t.db.message.findMany({ where: { projectId: p.id } });
    expect(message).toMatchObject({ status: 'FAILED', error: 'connection refused' });
    const ok = createEngineContext(t.db, { transport: logTransport(() => {}) });
    expect(await deliverQueuedMessages(ok, { from: 'x@example.com', limit: 10 })).toBe(0);
  });
});
