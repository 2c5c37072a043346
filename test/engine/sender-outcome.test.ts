import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngineContext } from '../../server/engine/context';
import { enroll } from '../../server/engine/enrollment';
import { deliverQueuedMessages } from '../../server/engine/sender';
import type { MailTransport } from '../../server/engine/transport';
import { listStuck } from '../../server/stuck/list';
import { freshDatabase, type TestDatabase } from '../support/database';
import { driveFromStart } from '../support/drive';
import { createProject, workflowFrom } from '../support/fixtures';

// Once the transport has accepted an email, a failing database write
// must never record it FAILED (an operator would resend it: a duplicate). The outcome
// write is retried; if it keeps failing, the message stays SENDING and shows up as
// MESSAGE_UNCONFIRMED once its lease runs out. The database failure is real: a trigger
// refuses the SENT write, as a full disk or a lost connection would.

let t: TestDatabase;

beforeAll(async () => {
  t = await freshDatabase();
  // The count of refused writes is a sequence: it survives the rollback of the write it refused.
  await t.query(`CREATE SEQUENCE sent_writes`);
  await t.query(`CREATE TABLE sent_write_failures (fail_first int NOT NULL)`);
  await t.query(`INSERT INTO sent_write_failures VALUES (0)`);
  await t.query(`
    CREATE FUNCTION refuse_sent_write() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.status = 'SENT' AND OLD.status = 'SENDING'
         AND nextval('sent_writes') <= (SELECT fail_first FROM sent_write_failures) THEN
        RAISE EXCEPTION 'could not write the delivery: disk full';
      END IF;
      RETURN NEW;
    END $$`);
  await t.query(`CREATE TRIGGER refuse_sent_write BEFORE UPDATE ON "Message" FOR EACH ROW EXECUTE FUNCTION refuse_sent_write()`);
});
afterAll(async () => t?.drop());

/** The next `n` SENT writes fail. */
async function failFirstSentWrites(n: number) {
  await t.query(`SELECT setval('sent_writes', 1, false)`);
  await t.query(`UPDATE sent_write_failures SET fail_first = $1`, [n]);
}

function acceptingTransport(sent: string[]): MailTransport {
  return {
    name: 'accepting',
    async send(message) {
      sent.push(message.to);
      return { providerId: `test:${sent.length}` };
    },
  };
}

async function enrolledAndQueued(email: string): Promise<string> {
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
  // Drive the steps only (the sender runs in the test itself).
  await driveFromStart(t.db, enrolled.executionId);
  const [m] = await t.query(`SELECT status FROM "Message" WHERE "projectId" = $1`, [p.id]);
  expect(m.status).toBe('QUEUED');
  return p.id;
}

describe('sender: the transport accepted the mail, the database write failed', () => {
  it('a failed SENT write never records the message FAILED; a transient failure is retried to SENT', async () => {
    const projectId = await enrolledAndQueued('once@example.com');
    await failFirstSentWrites(1);
    const sent: string[] = [];
    const ctx = createEngineContext(t.db, { transport: acceptingTransport(sent) });
    await deliverQueuedMessages(ctx, { from: 'x@example.com', limit: 10 });
    expect(sent).toEqual(['once@example.com']);
    const [m] = await t.query(`SELECT status, "providerId", error FROM "Message" WHERE "projectId" = $1`, [projectId]);
    expect(m).toEqual({ status: 'SENT', providerId: 'test:1', error: null });
  });

  it('when the SENT write keeps failing the message stays SENDING and becomes MESSAGE_UNCONFIRMED, never FAILED', async () => {
    const projectId = await enrolledAndQueued('unknown@example.com');
    await failFirstSentWrites(1000);
    const sent: string[] = [];
    const ctx = createEngineContext(t.db, { transport: acceptingTransport(sent), config: { leaseSeconds: 0 } });
    await deliverQueuedMessages(ctx, { from: 'x@example.com', limit: 10 });
    await failFirstSentWrites(0);
    expect(sent).toEqual(['unknown@example.com']);
    const [m] = await t.query(`SELECT id, status, error FROM "Message" WHERE "projectId" = $1`, [projectId]);
    expect(m.status).toBe('SENDING');
    // Not sent again by any later pass: its fate is for an operator to decide.
    await deliverQueuedMessages(ctx, { from: 'x@example.com', limit: 10 });
    expect(sent).toHaveLength(1);
    const stuck = await listStuck(t.db, { projectId, graceSeconds: 0, limit: 10 });
    expect(stuck.items.map((i) => [i.reason, i.detail.messageId])).toEqual([['MESSAGE_UNCONFIRMED', m.id]]);
  });
});
