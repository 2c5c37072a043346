import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../server/db';
import { createEngineContext } from '../../server/engine/context';
import { enroll, enrollBatch, type EnrollResult } from '../../server/engine/enrollment';
import { dispatchEvent, storeEvent } from '../../server/engine/events';
import { totalViolations, checkInvariants } from '../../server/engine/invariants';
import { runWorkerOnce } from '../../server/engine/worker';
import { advanceExecution, claimStep } from '../../server/engine/claims';
import { continueRunning, resolveWait } from '../../server/engine/runner';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createContact, createProject, delayWorkflow, stepId, waitWorkflow, workflowFrom } from '../support/fixtures';
import { runStepsOnly } from '../support/drive';
import { expectNoViolations, fulfilled, racers, ROUNDS, type Racers } from '../support/race';

// The adversarial race suite. Every scenario runs ROUNDS times (default 50)
// with real concurrency: separate PostgreSQL sessions released together by a barrier.
// After every round the invariant queries must all answer zero.
//
// How each was shown to fail with its guard removed is written beside it. The guards
// that are database indexes are also proven here, automatically: the same race is run
// on a database without the index and must produce the violation ("control" tests).

let t: TestDatabase;
let r16: Racers;
let projectId: string;

beforeAll(async () => {
  t = await freshDatabase();
  r16 = await racers(t.url, 16);
  projectId = (await createProject(t.db)).id;
});
afterAll(async () => {
  await r16?.close();
  await t?.drop();
});

const ctxFor = (db: Db, owner?: string) => createEngineContext(db, owner ? { owner } : {});


async function enrollRace(racersSet: Racers, workflowId: string, contactId: string): Promise<EnrollResult[]> {
  const results = await racersSet.race((db) => enroll(db, { projectId, workflowId, contactId }));
  return fulfilled(results);
}

describe('race suite', () => {
  // Guard: the partial unique index for I1 (insertExecutions' ON CONFLICT DO NOTHING).
  // Removed (control test below), several of the 16 enroll and the check sees I1 > 0.
  it('1. sixteen concurrent enrollments of one contact: exactly one active execution, the rest told which', async () => {
    const wf = await workflowFrom(t.db, projectId, waitWorkflow({ allowReentry: true }));
    for (let round = 0; round < ROUNDS; round++) {
      const contact = await createContact(t.db, projectId, `s1-${round}@example.com`);
      const results = await enrollRace(r16, wf.id, contact.id);
      const winners = results.filter((r) => r.ok && r.created);
      expect(winners, `round ${round}`).toHaveLength(1);
      const winnerId = (winners[0] as { executionId: string }).executionId;
      for (const loser of results.filter((r) => !(r.ok && r.created))) {
        expect(loser).toEqual({ ok: false, reason: 'ACTIVE_EXECUTION', executionId: winnerId });
      }
      const active = await t.query(
        `SELECT count(*)::int AS n FROM "WorkflowExecution" WHERE "contactId" = $1 AND status IN ('RUNNING','WAITING')`,
        [contact.id],
      );
      expect(active[0].n).toBe(1);
      await expectNoViolations(t.db, `round ${round}`);
    }
  });

  // Guard: the same I1 index, for batches: a bulk import racing another over the same
  // contacts. Without it (control test 1 drops it) contacts end up enrolled twice.
  it('1b. four bulk enrollments of the same contacts at once: one active execution per contact', async () => {
    const wf = await workflowFrom(t.db, projectId, waitWorkflow({ allowReentry: true }));
    const r4 = r16.first(4);
    for (let round = 0; round < ROUNDS; round++) {
      const emails = Array.from({ length: 20 }, (_, i) => `bulk-${round}-${i}@example.com`);
      const batches = fulfilled(
        await r4.race((db, i) =>
          enrollBatch(db, projectId, wf.id, (i % 2 ? [...emails].reverse() : emails).map((email) => ({ email }))),
        ),
      );
      const created = batches.flat().filter((r) => r.ok && r.created);
      expect(created, `round ${round}`).toHaveLength(emails.length);
      const ids = new Set(created.map((r) => (r as { executionId: string }).executionId));
      for (const r of batches.flat()) {
        if (!(r.ok && r.created)) {
          expect(r).toMatchObject({ ok: false, reason: 'ACTIVE_EXECUTION' });
          expect(ids.has((r as { executionId: string }).executionId)).toBe(true);
        }
      }
      await expectNoViolations(t.db, `round ${round}`);
    }
  });

  // Guard: claimWait's `status = 'WAITING' AND "resolvedBy" IS NULL` (one CAS for both
  // paths). Removed, both callers are told they won (the assertion on exactly one
  // resumed fails) and the loser is not told who won.
  it('2. event delivery and timeout racing on one wait: one branch, one resolver, the loser told who won', async () => {
    const wf = await workflowFrom(t.db, projectId, waitWorkflow({ allowReentry: true }, 3600));
    const [thanks, reminder] = [await stepId(t.db, wf.id, 'thanks'), await stepId(t.db, wf.id, 'reminder')];
    const r2 = r16.first(2);
    for (let round = 0; round < ROUNDS; round++) {
      const contact = await createContact(t.db, projectId, `s2-${round}@example.com`);
      const enrolled = await enroll(t.db, { projectId, workflowId: wf.id, contactId: contact.id });
      const executionId = (enrolled as { executionId: string }).executionId;
      await runStepsOnly(t.db);
      // The timeout is now due: time passes for this wait only.
      const [wait] = await t.query(
        `UPDATE "StepExecution" SET "dueAt" = now() - interval '1 second'
          WHERE "executionId" = $1 AND status = 'WAITING' RETURNING id`,
        [executionId],
      );
      const event = await storeEvent(t.db, { projectId, name: 'purchase', contactId: contact.id }, 3600);
      const eventId = (event as { eventId: string }).eventId;

      const results = fulfilled(
        await r2.race((db, i) =>
          i === 0
            ? resolveWait(ctxFor(db), { stepExecutionId: wait.id, resolvedBy: 'EVENT', branch: 'EVENT', eventId })
            : resolveWait(ctxFor(db), { stepExecutionId: wait.id, resolvedBy: 'TIMEOUT', branch: 'TIMEOUT' }),
        ),
      );

      const won = results.filter((r) => r.resumed);
      expect(won, `round ${round}`).toHaveLength(1);
      const winner = results.indexOf(won[0]!) === 0 ? 'EVENT' : 'TIMEOUT';
      const loser = results.find((r) => !r.resumed)!;
      expect(loser).toMatchObject({ resumed: false, reason: 'WAIT_RESOLVED', resolvedBy: winner });

      await runWorkerOnce(ctxFor(t.db));
      const steps = await t.query(`SELECT "stepId" FROM "StepExecution" WHERE "executionId" = $1`, [executionId]);
      const taken = steps.map((s) => s.stepId);
      expect(taken.includes(thanks)).toBe(winner === 'EVENT');
      expect(taken.includes(reminder)).toBe(winner === 'TIMEOUT');
      const [row] = await t.query(`SELECT "resolvedBy", "resumeEventId" FROM "StepExecution" WHERE id = $1`, [wait.id]);
      expect(row.resolvedBy).toBe(winner);
      expect(row.resumeEventId).toBe(winner === 'EVENT' ? eventId : null);
      const [exec] = await t.query(`SELECT status FROM "WorkflowExecution" WHERE id = $1`, [executionId]);
      expect(exec.status).toBe('COMPLETED');
      await expectNoViolations(t.db, `round ${round}`);
    }
  });

  // Guards: claimWait (I4) lets one wake-up through; claimStep's version fence (I6) and
  // the unique (execution, step) index (I2) stop a duplicate step row; the message's
  // unique stepExecutionId (I5) stops a second email. Removing the version predicate in
  // claimStep and the I2 index made several wake-ups run the SEND_EMAIL step.
  it('3. eight duplicate wake-ups of one delayed continuation: one step row, one message', async () => {
    const wf = await workflowFrom(t.db, projectId, delayWorkflow(3600, { allowReentry: true }));
    const mail = await stepId(t.db, wf.id, 'mail');
    const r8 = r16.first(8);
    for (let round = 0; round < ROUNDS; round++) {
      const contact = await createContact(t.db, projectId, `s3-${round}@example.com`);
      const enrolled = await enroll(t.db, { projectId, workflowId: wf.id, contactId: contact.id });
      const executionId = (enrolled as { executionId: string }).executionId;
      await runStepsOnly(t.db);
      const [pause] = await t.query(
        `UPDATE "StepExecution" SET "dueAt" = now() - interval '1 second'
          WHERE "executionId" = $1 AND status = 'WAITING' RETURNING id`,
        [executionId],
      );
      const [seen] = await t.query(`SELECT version FROM "WorkflowExecution" WHERE id = $1`, [executionId]);

      // Each wake-up is a delayed job that knows the wait and the version it was scheduled with.
      await r8.race(async (db) => {
        const ctx = ctxFor(db);
        const woke = await resolveWait(ctx, { stepExecutionId: pause.id, resolvedBy: 'TIMEOUT', branch: null });
        if (woke.resumed) await continueRunning(ctx, woke.executionId, woke.version);
        // A stale job carries on regardless with what it knew.
        else await continueRunning(ctx, executionId, seen.version + 1);
      });

      const rows = await t.query(`SELECT id FROM "StepExecution" WHERE "executionId" = $1 AND "stepId" = $2`, [executionId, mail]);
      expect(rows, `round ${round}`).toHaveLength(1);
      const messages = await t.query(`SELECT id FROM "Message" WHERE "executionId" = $1`, [executionId]);
      expect(messages).toHaveLength(1);
      const [exec] = await t.query(`SELECT status FROM "WorkflowExecution" WHERE id = $1`, [executionId]);
      expect(exec.status).toBe('COMPLETED');
      await expectNoViolations(t.db, `round ${round}`);
    }
  });

  // Guard: "active" is RUNNING *or* WAITING, in both the I1 index predicate and the
  // read-side check. With WAITING left out of both (as a careless predicate would), all
  // 16 enrolled beside the waiting execution.
  it('4. re-entry while WAITING is blocked even with allowReentry=true', async () => {
    const wf = await workflowFrom(t.db, projectId, waitWorkflow({ allowReentry: true }));
    for (let round = 0; round < ROUNDS; round++) {
      const contact = await createContact(t.db, projectId, `s4-${round}@example.com`);
      const first = await enroll(t.db, { projectId, workflowId: wf.id, contactId: contact.id });
      const waitingId = (first as { executionId: string }).executionId;
      await runStepsOnly(t.db);
      const [before] = await t.query(`SELECT status FROM "WorkflowExecution" WHERE id = $1`, [waitingId]);
      expect(before.status).toBe('WAITING');

      const results = await enrollRace(r16, wf.id, contact.id);
      for (const r of results) expect(r).toEqual({ ok: false, reason: 'ACTIVE_EXECUTION', executionId: waitingId });
      const all = await t.query(`SELECT count(*)::int AS n FROM "WorkflowExecution" WHERE "contactId" = $1`, [contact.id]);
      expect(all[0].n).toBe(1);
      await expectNoViolations(t.db, `round ${round}`);
    }
  });

  // Guard: the version (and claim token) predicates of advanceExecution. Removed, the
  // stale writer's completion also applied: a second message row was attempted (stopped
  // only by I5) and the contact patch of a stale UPDATE_CONTACT applied after the
  // execution had moved on; the assertions on `won` fail.
  it('5. a stale next-step writer (old version) changes nothing', async () => {
    const wf = await workflowFrom(t.db, projectId, delayWorkflow(0, { allowReentry: true }));
    const r2 = r16.first(2);
    for (let round = 0; round < ROUNDS; round++) {
      const contact = await createContact(t.db, projectId, `s5-${round}@example.com`);
      const enrolled = await enroll(t.db, { projectId, workflowId: wf.id, contactId: contact.id });
      const executionId = (enrolled as { executionId: string }).executionId;
      // Worker A claims the TRIGGER step with a lease that has already run out ...
      const claimedA = await claimStep(t.db, { executionId, expectedVersion: 1, leaseSeconds: 0 });
      if (!claimedA.won) throw new Error('worker A could not claim a fresh execution');
      const a = claimedA.claim;
      // ... and races worker B, which re-claims it; each then completes what it holds.
      const results = fulfilled(
        await r2.race(async (db, i) => {
          if (i === 0) return advanceExecution(db, a, { nextStepId: (await stepId(db, wf.id, 'pause')), status: 'RUNNING', output: { by: 'A' } });
          const b = await claimStep(db, { executionId, expectedVersion: a.version, leaseSeconds: 30 });
          if (!b.won || !('claim' in b)) return b;
          return advanceExecution(db, b.claim, { nextStepId: (await stepId(db, wf.id, 'pause')), status: 'RUNNING', output: { by: 'B' } });
        }),
      );
      const wins = results.filter((r) => r && r.won);
      expect(wins, `round ${round}`).toHaveLength(1);
      const [step] = await t.query(`SELECT attempt, output FROM "StepExecution" WHERE "executionId" = $1`, [executionId]);
      expect(step.output.by).toBe(wins[0] === results[0] ? 'A' : 'B');

      // Afterwards, the stale claim of A tries once more: it changes nothing.
      const [beforeRow] = await t.query(`SELECT version, "currentStepId", status FROM "WorkflowExecution" WHERE id = $1`, [executionId]);
      const stale = await advanceExecution(t.db, a, {
        nextStepId: a.stepId,
        status: 'COMPLETED',
        output: { by: 'stale' },
        contactPatch: { hijacked: true },
        message: { to: 'x@example.com', subject: 'stale', body: 'stale' },
      });
      expect(stale.won).toBe(false);
      expect(stale).toMatchObject({ current: { version: beforeRow.version, status: beforeRow.status } });
      const [afterRow] = await t.query(`SELECT version, "currentStepId", status FROM "WorkflowExecution" WHERE id = $1`, [executionId]);
      expect(afterRow).toEqual(beforeRow);
      const [c] = await t.query(`SELECT data FROM "Contact" WHERE id = $1`, [contact.id]);
      expect(c.data.hijacked).toBeUndefined();
      expect(await t.query(`SELECT id FROM "Message" WHERE "executionId" = $1`, [executionId])).toHaveLength(0);
      await runWorkerOnce(ctxFor(t.db));
      expect(await t.query(`SELECT id FROM "Message" WHERE "executionId" = $1`, [executionId])).toHaveLength(1);
      await expectNoViolations(t.db, `round ${round}`);
    }
  });

  // Guards: the dispatch lease lets one sweeper through; when the lease is defeated
  // (lease 0: both sweepers hold it), the I3 unique index still allows one enrollment and
  // claimWait (I4) one resume. The control test below drops the I3 index: two enrollments.
  it('6. the same event dispatched concurrently by two sweepers: one enrollment, one resume', async () => {
    const triggered = await workflowFrom(t.db, projectId, {
      ...delayWorkflow(3600, { allowReentry: true }),
      trigger: 'EVENT',
      triggerEvent: 'purchase',
    });
    const waiting = await workflowFrom(t.db, projectId, waitWorkflow({ allowReentry: true }));
    const r2 = r16.first(2);
    for (let round = 0; round < ROUNDS; round++) {
      const contact = await createContact(t.db, projectId, `s6-${round}@example.com`);
      const enrolled = await enroll(t.db, { projectId, workflowId: waiting.id, contactId: contact.id });
      const waitingId = (enrolled as { executionId: string }).executionId;
      await runStepsOnly(t.db);
      const event = await storeEvent(t.db, { projectId, name: 'purchase', contactId: contact.id }, 0);
      const eventId = (event as { eventId: string }).eventId;
      const leaseSeconds = round % 2 === 0 ? 30 : 0;

      await r2.race((db, i) =>
        dispatchEvent(createEngineContext(db, { owner: `sweeper-${i}`, config: { leaseSeconds } }), eventId),
      );

      const fromEvent = await t.query(
        `SELECT id FROM "WorkflowExecution" WHERE "workflowId" = $1 AND "sourceEventId" = $2`,
        [triggered.id, eventId],
      );
      expect(fromEvent, `round ${round}`).toHaveLength(1);
      const resolved = await t.query(
        `SELECT "resolvedBy", "resumeEventId" FROM "StepExecution"
          WHERE "executionId" = $1 AND "resolvedBy" IS NOT NULL`,
        [waitingId],
      );
      expect(resolved).toEqual([{ resolvedBy: 'EVENT', resumeEventId: eventId }]);
      const [ev] = await t.query(`SELECT "processedAt" FROM "Event" WHERE id = $1`, [eventId]);
      expect(ev.processedAt).not.toBeNull();
      await expectNoViolations(t.db, `round ${round}`);
    }
  });
});

describe('controls: the same races without the database guard produce the violation', () => {
  // Each control runs on its own database with one index dropped, and stops at the first
  // round that shows the violation. If a control never sees it, the race above could
  // not have failed either, and the control fails.
  let c: TestDatabase;
  let rc: Racers;
  beforeAll(async () => {
    c = await freshDatabase();
    rc = await racers(c.url, 16);
  });
  afterAll(async () => {
    await rc?.close();
    await c?.drop();
  });

  it('without the I1 index, sixteen concurrent enrollments create more than one active execution', async () => {
    await c.query(`DROP INDEX "WorkflowExecution_active_workflowId_contactId_key"`);
    const project = await createProject(c.db);
    const wf = await workflowFrom(c.db, project.id, waitWorkflow({ allowReentry: true }));
    let violated = false;
    for (let round = 0; round < ROUNDS && !violated; round++) {
      const contact = await createContact(c.db, project.id, `c1-${round}@example.com`);
      await rc.race((db) => enroll(db, { projectId: project.id, workflowId: wf.id, contactId: contact.id }));
      violated = (await checkInvariants(c.db)).find((r) => r.id === 'I1')!.violations > 0;
    }
    expect(violated).toBe(true);
  });

  it('without the I3 index and with the dispatch lease defeated, one event enrolls twice', async () => {
    await c.query(`DROP INDEX "WorkflowExecution_workflowId_sourceEventId_key"`);
    // The I1 index would also refuse the second enrollment; this control is about I3.
    await c.query(`DROP INDEX IF EXISTS "WorkflowExecution_active_workflowId_contactId_key"`);
    const project = await createProject(c.db);
    await workflowFrom(c.db, project.id, {
      ...delayWorkflow(3600, { allowReentry: true }),
      trigger: 'EVENT',
      triggerEvent: 'purchase',
    });
    let violated = false;
    for (let round = 0; round < ROUNDS && !violated; round++) {
      const contact = await createContact(c.db, project.id, `c3-${round}@example.com`);
      const event = await storeEvent(c.db, { projectId: project.id, name: 'purchase', contactId: contact.id }, 0);
      const eventId = (event as { eventId: string }).eventId;
      await rc.race((db, i) =>
        i < 2 ? dispatchEvent(createEngineContext(db, { owner: `s-${i}`, config: { leaseSeconds: 0 } }), eventId) : Promise.resolve(null),
      );
      violated = (await checkInvariants(c.db)).find((r) => r.id === 'I3')!.violations > 0;
    }
    expect(violated).toBe(true);
  });

  it('the invariant queries see nothing wrong on a healthy run (they are not always-positive)', async () => {
    const healthy = await freshDatabase();
    try {
      expect(await totalViolations(healthy.db)).toBe(0);
    } finally {
      await healthy.drop();
    }
  });
});
