import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngineContext } from '../../server/engine/context';
import { enroll } from '../../server/engine/enrollment';
import { checkInvariants } from '../../server/engine/invariants';
import { deliverQueuedMessages } from '../../server/engine/sender';
import type { MailTransport } from '../../server/engine/transport';
import { applyMany } from '../../server/repair/bulk';
import { applyMessageRepair } from '../../server/repair/messages';
import { applyManyInput } from '../../server/trpc/routers/repair.schema';
import { freshDatabase, type TestDatabase } from '../support/database';
import { driveFromStart } from '../support/drive';
import { createProject, workflowFrom } from '../support/fixtures';

// Bulk repair of an email incident: after a provider outage, the FAILED emails of one
// stuck group are resent (or given up) in one run, each fenced by the message version it
// had when selected. An execution's action never lands on an email's row, nor an email's
// action on an execution.

let t: TestDatabase;
let projectId: string;
let workflowId: string;

beforeAll(async () => {
  t = await freshDatabase();
  projectId = (await createProject(t.db)).id;
  workflowId = (
    await workflowFrom(t.db, projectId, {
      name: 'bulk-mail',
      trigger: 'MANUAL',
      steps: [
        { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
        { key: 'mail', type: 'SEND_EMAIL', name: 'Welcome mail', config: { subject: 'Welcome', body: 'Hello' } },
      ],
      transitions: [{ from: 'start', to: 'mail', branch: null }],
    })
  ).id;
});
afterAll(async () => t?.drop());

const down: MailTransport = { name: 'down', send: async () => Promise.reject(new Error('421 provider outage')) };

describe('bulk repair of emails (MESSAGE_* groups)', () => {
  it('RESEND over a MESSAGE_FAILED group requeues each email once; one changed since selection is left alone', async () => {
    const messageIds: string[] = [];
    for (let i = 0; i < 12; i++) {
      const enrolled = await enroll(t.db, { projectId, workflowId, email: `outage-${i}@example.com` });
      if (!enrolled.ok) throw new Error('enroll');
      await driveFromStart(t.db, enrolled.executionId);
      const [m] = await t.query(`SELECT id FROM "Message" WHERE "executionId" = $1`, [enrolled.executionId]);
      messageIds.push(m.id);
    }
    await deliverQueuedMessages(createEngineContext(t.db, { transport: down }), { from: 'x@example.com', limit: 100 });
    expect((await t.query(`SELECT count(*)::int AS n FROM "Message" WHERE status = 'FAILED'`))[0].n).toBe(12);

    const dry = await applyMany(
      t.db,
      { projectId, actor: 'user:op', action: 'RESEND', reason: 'provider back', filter: { reason: 'MESSAGE_FAILED' }, dryRun: true },
      { graceSeconds: 0 },
    );
    expect(dry.matched).toBe(12);

    const run = await applyMany(
      t.db,
      {
        projectId,
        actor: 'user:op',
        action: 'RESEND',
        reason: 'provider back',
        filter: { reason: 'MESSAGE_FAILED' },
        dryRun: false,
        ratePerSecond: 1000,
        // Another operator gives up on one of them between selection and apply.
        onSelected: async () => {
          const [m] = await t.query(`SELECT version FROM "Message" WHERE id = $1`, [messageIds[0]]);
          const r = await applyMessageRepair(t.db, {
            projectId, action: 'GIVE_UP', messageId: messageIds[0]!, actor: 'user:other', reason: 'bounced address', expectedVersion: m.version,
          });
          expect(r.ok).toBe(true);
        },
      },
      { graceSeconds: 0 },
    );
    expect(run.items.filter((i) => i.outcome === 'APPLIED')).toHaveLength(11);
    expect(run.items.filter((i) => i.outcome === 'SKIPPED_CHANGED').map((i) => i.messageId)).toEqual([messageIds[0]]);
    const statuses = await t.query(`SELECT id, status FROM "Message" ORDER BY id`);
    expect(statuses.filter((m) => m.status === 'QUEUED')).toHaveLength(11);
    expect(statuses.find((m) => m.id === messageIds[0])!.status).toBe('ABANDONED');
    // Each resend is audited on its email.
    const audits = await t.query(`SELECT count(*)::int AS n FROM "AuditEntry" WHERE action = 'repair.RESEND' AND outcome = 'APPLIED'`);
    expect(audits[0].n).toBe(11);
    // Sent once each when the provider is back.
    const sent: string[] = [];
    await deliverQueuedMessages(
      createEngineContext(t.db, { transport: { name: 'ok', send: async (m) => (sent.push(m.to), { providerId: 'ok' }) } }),
      { from: 'x@example.com', limit: 100 },
    );
    expect(new Set(sent).size).toBe(11);
    expect(sent).toHaveLength(11);
    expect((await checkInvariants(t.db)).filter((r) => r.violations > 0)).toEqual([]);
  });

  it('refuses an execution action on an email group, and an email action on anything else, at the input', () => {
    const wrong = applyManyInput.safeParse({ filter: { reason: 'MESSAGE_FAILED' }, action: 'RETRY_STEP', reason: 'retry them' });
    expect(wrong.success).toBe(false);
    expect(wrong.error?.issues[0]).toMatchObject({ path: ['action'], message: expect.stringMatching(/MARK_SENT, RESEND or GIVE_UP/) });
    const alsoWrong = applyManyInput.safeParse({ filter: { status: 'FAILED' }, action: 'GIVE_UP', reason: 'give up' });
    expect(alsoWrong.success).toBe(false);
    expect(alsoWrong.error?.issues[0]).toMatchObject({ path: ['action'], message: expect.stringMatching(/select them with reason MESSAGE_/) });
    expect(applyManyInput.safeParse({ filter: { reason: 'MESSAGE_UNCONFIRMED' }, action: 'MARK_SENT', reason: 'provider has them' }).success).toBe(true);
  });
});
