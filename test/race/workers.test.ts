import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngineContext } from '../../server/engine/context';
import { enroll } from '../../server/engine/enrollment';
import { trackEvent } from '../../server/engine/events';
import { notifyWorkers } from '../../server/engine/wakeup';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createContact, createProject, workflowFrom } from '../support/fixtures';
import { startWorkerProcess, waitFor, type WorkerProcess } from '../support/processes';
import { expectNoViolations, ROUNDS } from '../support/race';

// Worker scenarios of the race suite, with separate OS processes running the real
// worker entry point (the one `npm run worker` starts).


/** SEND_EMAIL step executions with a message count other than one. */
async function messageMismatches(t: TestDatabase): Promise<number> {
  const [row] = await t.query(`
    SELECT count(*)::int AS n FROM (
      SELECT se.id, count(m.id) AS messages
        FROM "StepExecution" se
        JOIN "WorkflowStep" ws ON ws.id = se."stepId" AND ws.type = 'SEND_EMAIL'
        LEFT JOIN "Message" m ON m."stepExecutionId" = se.id
       WHERE se.status = 'COMPLETED'
       GROUP BY se.id HAVING count(m.id) <> 1) v`);
  return row.n;
}

describe('worker processes', () => {
  // Guards: FOR UPDATE SKIP LOCKED + the version fence of every claim (I6), the I2
  // index, the I5 index. With the version predicate removed from advanceExecution and
  // claimReadySteps picking without SKIP LOCKED/status re-check, four processes ran
  // steps twice and messageMismatches() went above zero.
  it(
    '7. four worker processes drain 2,000 executions through SEND_EMAIL, DELAY 0 and WAIT_FOR_EVENT while events arrive',
    async () => {
      const t = await freshDatabase();
      const workers: WorkerProcess[] = [];
      try {
        const project = await createProject(t.db);
        const wf = await workflowFrom(t.db, project.id, {
          name: 'drain',
          trigger: 'MANUAL',
          allowReentry: true,
          steps: [
            { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
            { key: 'hello', type: 'SEND_EMAIL', name: 'Hello', config: { subject: 'Hello', body: 'Hi {{contact.email}}' } },
            { key: 'pause', type: 'DELAY', name: 'No pause', config: { seconds: 0 } },
            { key: 'wait', type: 'WAIT_FOR_EVENT', name: 'Wait for ping', config: { eventName: 'ping', timeoutSeconds: 1 } },
            { key: 'pinged', type: 'SEND_EMAIL', name: 'Pinged', config: { subject: 'Pinged', body: 'You pinged' } },
            { key: 'silent', type: 'SEND_EMAIL', name: 'Silent', config: { subject: 'Silent', body: 'No ping' } },
          ],
          transitions: [
            { from: 'start', to: 'hello', branch: null },
            { from: 'hello', to: 'pause', branch: null },
            { from: 'pause', to: 'wait', branch: null },
            { from: 'wait', to: 'pinged', branch: 'EVENT' },
            { from: 'wait', to: 'silent', branch: 'TIMEOUT' },
          ],
        });
        for (let i = 0; i < 4; i++) workers.push(await startWorkerProcess(t.url, { concurrency: 8 }));
        const ctx = createEngineContext(t.db);
        const perRound = Math.ceil(2000 / ROUNDS);
        let total = 0;
        for (let round = 0; round < ROUNDS; round++) {
          const ids: string[] = [];
          const contacts = [];
          for (let i = 0; i < perRound; i++) {
            const contact = await createContact(t.db, project.id, `w7-${round}-${i}@example.com`);
            contacts.push(contact);
            const r = await enroll(t.db, { projectId: project.id, workflowId: wf.id, contactId: contact.id });
            ids.push((r as { executionId: string }).executionId);
          }
          await notifyWorkers(t.db);
          total += ids.length;
          // Events arrive while the workers run: some before the wait is parked, some
          // during it, some racing its one-second timeout.
          await Promise.all(
            contacts
              .filter((_, i) => i % 2 === 0)
              .map(async (contact, i) => {
                await new Promise((r) => setTimeout(r, (i * 37) % 1100));
                await trackEvent(ctx, { projectId: project.id, name: 'ping', contactId: contact.id });
              }),
          );
          await waitFor(
            `round ${round} to finish`,
            async () => {
              const [row] = await t.query(
                `SELECT count(*)::int AS n FROM "WorkflowExecution" WHERE id = ANY($1::uuid[]) AND status IN ('RUNNING','WAITING')`,
                [ids],
              );
              return row.n === 0;
            },
            60_000,
          );
          const statuses = await t.query(
            `SELECT status, count(*)::int AS n FROM "WorkflowExecution" WHERE id = ANY($1::uuid[]) GROUP BY status`,
            [ids],
          );
          expect(statuses, `round ${round}`).toEqual([{ status: 'COMPLETED', n: ids.length }]);
          const [messages] = await t.query(
            `SELECT count(*)::int AS n FROM "Message" WHERE "executionId" = ANY($1::uuid[])`,
            [ids],
          );
          expect(messages.n).toBe(ids.length * 2);
          expect(await messageMismatches(t)).toBe(0);
          await expectNoViolations(t.db, `round ${round}`);
        }
        expect(total).toBeGreaterThanOrEqual(2000);
        // Let the senders finish, then every message of every execution is SENT once.
        await waitFor('all messages sent', async () => {
          const [row] = await t.query(`SELECT count(*)::int AS n FROM "Message" WHERE status <> 'SENT'`);
          return row.n === 0;
        });
        const [pinged] = await t.query(`SELECT count(*)::int AS n FROM "StepExecution" WHERE "resolvedBy" = 'EVENT'`);
        const [timedOut] = await t.query(`SELECT count(*)::int AS n FROM "StepExecution" WHERE "resolvedBy" = 'TIMEOUT' AND "resolvedBranch" = 'TIMEOUT'`);
        expect(pinged.n + timedOut.n).toBe(total);
        expect(pinged.n).toBeGreaterThan(0);
        expect(timedOut.n).toBeGreaterThan(0);
      } finally {
        for (const w of workers) w.kill('SIGTERM');
        const codes = await Promise.all(workers.map((w) => w.exited));
        await t.drop();
        // Drained on SIGTERM: each worker exits 0 on its own.
        expect(codes).toEqual(workers.map(() => 0));
      }
    },
    600_000,
  );

  // Guard: leases that expire (the step row's leaseExpiresAt and the execution's
  // readyAt), re-claim with a new token and version (I6), the message's unique step
  // execution (I5). With re-claim of expired leases removed from claimReadySteps, the
  // killed worker's execution stayed RUNNING forever and the rescue wait timed out.
  describe('8. a worker process killed with SIGKILL mid-step', () => {
    let t: TestDatabase;
    let rescuer: WorkerProcess;
    beforeAll(async () => {
      t = await freshDatabase();
      rescuer = await startWorkerProcess(t.url, { concurrency: 4, env: { LEASE_SECONDS: '1' } });
    });
    afterAll(async () => {
      rescuer?.kill('SIGTERM');
      await rescuer?.exited;
      await t?.drop();
    });

    it(
      'its lease expires and the step is picked up by another worker: never lost, no duplicate message',
      async () => {
        const project = await createProject(t.db);
        const wf = await workflowFrom(t.db, project.id, {
          name: 'killed',
          trigger: 'MANUAL',
          allowReentry: true,
          steps: [
            { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
            { key: 'mail', type: 'SEND_EMAIL', name: 'Mail', config: { subject: 'Once', body: 'Only once' } },
          ],
          transitions: [{ from: 'start', to: 'mail', branch: null }],
        });
        const perRound = 2; // executions held by each killed worker
        for (let round = 0; round < ROUNDS; round++) {
          // The rescuer shares the queue: freeze it (SIGSTOP) until the victim holds the work.
          rescuer.kill('SIGSTOP');
          const ids: string[] = [];
          for (let i = 0; i < perRound; i++) {
            const contact = await createContact(t.db, project.id, `k-${round}-${i}@example.com`);
            const r = await enroll(t.db, { projectId: project.id, workflowId: wf.id, contactId: contact.id });
            ids.push((r as { executionId: string }).executionId);
          }
          // The victim claims the SEND_EMAIL steps, then hangs holding them (fault injection).
          // Started once all of them are enrolled: its one pass hangs on what it claims, so a
          // pass that ran between two enrollments would hold only the first.
          const victim = await startWorkerProcess(t.url, {
            concurrency: perRound,
            env: {
              LEASE_SECONDS: '1',
              WAYPOST_FAULT_PAUSE_AFTER_CLAIM_MS: '600000',
              WAYPOST_FAULT_PAUSE_STEP_TYPE: 'SEND_EMAIL',
            },
          });
          const claimedByVictim = await waitFor(`round ${round}: victim claims`, async () => {
            const rows = await t.query(
              `SELECT s."executionId" FROM "StepExecution" s JOIN "WorkflowStep" ws ON ws.id = s."stepId"
                WHERE ws.type = 'SEND_EMAIL' AND s.status = 'RUNNING' AND s."executionId" = ANY($1::uuid[])`,
              [ids],
            );
            return rows.length === ids.length ? rows.map((r) => r.executionId as string) : null;
          });
          victim.kill('SIGKILL');
          expect(await victim.exited).toBeNull();
          // Right after the kill the work is held by a dead process: RUNNING, lease not yet run out.
          const [held] = await t.query(
            `SELECT count(*)::int AS n FROM "WorkflowExecution" WHERE id = ANY($1::uuid[]) AND status = 'RUNNING'`,
            [ids],
          );
          expect(held.n).toBe(ids.length);
          rescuer.kill('SIGCONT');

          // Never lost: everything finishes, each held step on a second attempt.
          await waitFor(`round ${round}: rescue`, async () => {
            const [row] = await t.query(
              `SELECT count(*)::int AS n FROM "WorkflowExecution" WHERE id = ANY($1::uuid[]) AND status = 'COMPLETED'`,
              [ids],
            );
            return row.n === ids.length;
          }, 30_000);
          const attempts = await t.query(
            `SELECT s.attempt FROM "StepExecution" s JOIN "WorkflowStep" ws ON ws.id = s."stepId"
              WHERE ws.type = 'SEND_EMAIL' AND s."executionId" = ANY($1::uuid[])`,
            [claimedByVictim],
          );
          expect(attempts.every((a) => a.attempt >= 2)).toBe(true);
          const messages = await t.query(
            `SELECT "executionId", count(*)::int AS n FROM "Message" WHERE "executionId" = ANY($1::uuid[]) GROUP BY 1`,
            [ids],
          );
          expect(messages.map((m) => m.n)).toEqual(ids.map(() => 1));
          await expectNoViolations(t.db, `round ${round}`);
        }
      },
      600_000,
    );
  });
});
