import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../server/db';
import { createEngineContext } from '../../server/engine/context';
import { enroll } from '../../server/engine/enrollment';
import { dispatchEvent, storeEvent, trackEvent } from '../../server/engine/events';
import { checkInvariants } from '../../server/engine/invariants';
import { runWorkerOnce } from '../../server/engine/worker';
import { claimStep, failStep, retryStep, type StepClaim } from '../../server/engine/claims';
import { processDueWaits, runClaimedStep } from '../../server/engine/runner';
import { applyRepair, previewRepair } from '../../server/repair/actions';
import { seedDemo } from '../../prisma/seed';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createContact, createProject, stepId, waitWorkflow, workflowFrom } from '../support/fixtures';
import { expectNoViolations, fulfilled, racers, ROUNDS, type Racers } from '../support/race';

// Event delivery is two-sided, and event time decides
// (docs/event-time.md). An event resolves the waits already parked; a wait that parks looks back
// for an event accepted since it began; the timer takes an event accepted before the
// deadline; an event accepted after the deadline never resumes the wait. Every scenario
// here failed on 309b01c (see the note beside each), and the race scenarios were shown
// to fail with their lock removed (scripts/guard-mutations.ts).

let t: TestDatabase;
let r3: Racers;
let projectId: string;

beforeAll(async () => {
  t = await freshDatabase();
  r3 = await racers(t.url, 3);
  projectId = (await createProject(t.db)).id;
});
afterAll(async () => {
  await r3?.close();
  await t?.drop();
});

const ctxFor = (db: Db) => createEngineContext(db);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Enroll a new contact and run it up to its WAIT_FOR_EVENT step: RUNNING there, unclaimed. */
async function atWaitStep(workflowId: string, email: string) {
  const contact = await createContact(t.db, projectId, email);
  const enrolled = await enroll(t.db, { projectId, workflowId, contactId: contact.id });
  if (!enrolled.ok) throw new Error(`enroll failed: ${enrolled.reason}`);
  const executionId = enrolled.executionId;
  const ctx = ctxFor(t.db);
  let version = 1;
  for (let i = 0; i < 2; i++) {
    // start, then hello (SEND_EMAIL): each claimed and run as a worker does.
    const claimed = await claimStep(t.db, { executionId, expectedVersion: version, leaseSeconds: 30 });
    if (!claimed.won) throw new Error('could not claim a step on the way to the wait');
    version = (await runClaimedStep(ctx, claimed.claim)).continueAt!;
  }
  return { contactId: contact.id, executionId, version };
}

async function claimWaitStep(db: Db, executionId: string, version: number, leaseSeconds = 30): Promise<StepClaim> {
  const claimed = await claimStep(db, { executionId, expectedVersion: version, leaseSeconds });
  if (!claimed.won) throw new Error('could not claim the wait step');
  return claimed.claim;
}

async function waitRow(executionId: string, waitStepId: string) {
  const [row] = await t.query(
    `SELECT id, status, "resolvedBy", "resolvedBranch", "resumeEventId", "startedAt", "dueAt"
       FROM "StepExecution" WHERE "executionId" = $1 AND "stepId" = $2`,
    [executionId, waitStepId],
  );
  return row;
}


describe('an event accepted before its wait is parked is not lost (point 1)', () => {
  // On 309b01c: the wait parked unresolved (resolvedBy null) although the event had been
  // accepted after the wait began; the dispatch had found no parked wait and marked the
  // event processed. Same for the FAILED and PENDING rows below.
  it('the wait step is claimed (RUNNING) when the event is dispatched: the wait resolves by EVENT as it parks', async () => {
    const wf = await workflowFrom(t.db, projectId, waitWorkflow({ allowReentry: true }));
    const wait = await stepId(t.db, wf.id, 'wait');
    const x = await atWaitStep(wf.id, 'p1-running@example.com');
    const claim = await claimWaitStep(t.db, x.executionId, x.version);
    const tracked = await trackEvent(ctxFor(t.db), { projectId, name: 'purchase', contactId: x.contactId });
    const eventId = (tracked as { eventId: string }).eventId;
    await runClaimedStep(ctxFor(t.db), claim);
    expect(await waitRow(x.executionId, wait)).toMatchObject({ resolvedBy: 'EVENT', resolvedBranch: 'EVENT', resumeEventId: eventId });
    const [exec] = await t.query(`SELECT status, "currentStepId" FROM "WorkflowExecution" WHERE id = $1`, [x.executionId]);
    expect(exec).toEqual({ status: 'RUNNING', currentStepId: await stepId(t.db, wf.id, 'thanks') });
    await expectNoViolations(t.db, 'running');
  });

  it('the wait step FAILED and waits for its retry when the event is dispatched: the retry resolves it by EVENT', async () => {
    const wf = await workflowFrom(t.db, projectId, waitWorkflow({ allowReentry: true }));
    const wait = await stepId(t.db, wf.id, 'wait');
    const x = await atWaitStep(wf.id, 'p1-failed@example.com');
    const claim = await claimWaitStep(t.db, x.executionId, x.version);
    const failed = await failStep(t.db, claim, { error: 'worker lost its connection', retryInSeconds: 0 });
    expect(failed.won).toBe(true);
    const tracked = await trackEvent(ctxFor(t.db), { projectId, name: 'purchase', contactId: x.contactId });
    const eventId = (tracked as { eventId: string }).eventId;
    await runWorkerOnce(ctxFor(t.db));
    expect(await waitRow(x.executionId, wait)).toMatchObject({ resolvedBy: 'EVENT', resumeEventId: eventId });
    const [exec] = await t.query(`SELECT status FROM "WorkflowExecution" WHERE id = $1`, [x.executionId]);
    expect(exec.status).toBe('COMPLETED');
    await expectNoViolations(t.db, 'failed');
  });

  it('an operator reset the wait step (PENDING) when the event is dispatched: the next claim resolves it by EVENT', async () => {
    const wf = await workflowFrom(t.db, projectId, waitWorkflow({ allowReentry: true }));
    const wait = await stepId(t.db, wf.id, 'wait');
    const x = await atWaitStep(wf.id, 'p1-pending@example.com');
    // A worker claimed the wait and died (its lease is already over); an operator retries it.
    const claim = await claimWaitStep(t.db, x.executionId, x.version, 0);
    const retried = await retryStep(t.db, { executionId: x.executionId, expectedVersion: claim.version });
    expect(retried.won).toBe(true);
    expect(await waitRow(x.executionId, wait)).toMatchObject({ status: 'PENDING' });
    const tracked = await trackEvent(ctxFor(t.db), { projectId, name: 'purchase', contactId: x.contactId });
    const eventId = (tracked as { eventId: string }).eventId;
    const [ev] = await t.query(`SELECT "processedAt" FROM "Event" WHERE id = $1`, [eventId]);
    expect(ev.processedAt).not.toBeNull();
    await runWorkerOnce(ctxFor(t.db));
    expect(await waitRow(x.executionId, wait)).toMatchObject({ resolvedBy: 'EVENT', resumeEventId: eventId });
    await expectNoViolations(t.db, 'pending');
  });

  // The incident the demo seed leaves, repaired as an operator would in the console.
  it('the seeded incident: RETRY_STEP on the poison wait, then REDRIVE_EVENT on its dead purchase, ends resolved by that purchase', async () => {
    const demo = await freshDatabase();
    try {
      await seedDemo(demo.db);
      const [x] = await demo.query(
        `SELECT e.id, e."projectId", e."contactId", e."workflowId" FROM "WorkflowExecution" e
           JOIN "Workflow" w ON w.id = e."workflowId" WHERE w.name = 'Win-back campaign'`,
      );
      const [dead] = await demo.query(`SELECT id FROM "Event" WHERE "deadAt" IS NOT NULL AND name = 'purchase'`);
      const opts = { graceSeconds: 0 };
      const actor = 'user:operator-test';
      const retry = await previewRepair(demo.db, { projectId: x.projectId, action: 'RETRY_STEP', executionId: x.id }, opts);
      expect(retry.plan.allowed).toBe(true);
      const retried = await applyRepair(
        demo.db,
        { projectId: x.projectId, action: 'RETRY_STEP', executionId: x.id, actor, expectedVersion: retry.expectedVersion, reason: 'poison step fixed' },
        opts,
      );
      expect(retried.ok).toBe(true);
      const redrive = await previewRepair(demo.db, { projectId: x.projectId, action: 'REDRIVE_EVENT', eventId: dead.id }, opts);
      const redriven = await applyRepair(
        demo.db,
        { projectId: x.projectId, action: 'REDRIVE_EVENT', eventId: dead.id, actor, expectedVersion: redrive.expectedVersion, reason: 'deliver the purchase' },
        opts,
      );
      expect(redriven.ok).toBe(true);
      // Now the workers run: the wait parks and finds the purchase.
      await runWorkerOnce(createEngineContext(demo.db));
      const [row] = await demo.query(
        `SELECT s."resolvedBy", s."resumeEventId" FROM "StepExecution" s JOIN "WorkflowStep" ws ON ws.id = s."stepId"
          WHERE s."executionId" = $1 AND ws.key = 'purchase'`,
        [x.id],
      );
      expect(row).toEqual({ resolvedBy: 'EVENT', resumeEventId: dead.id });
      const [welcome] = await demo.query(
        `SELECT s.status FROM "StepExecution" s JOIN "WorkflowStep" ws ON ws.id = s."stepId"
          WHERE s."executionId" = $1 AND ws.key = 'welcome_back'`,
        [x.id],
      );
      expect(welcome?.status).toBe('COMPLETED');
      const bad = (await checkInvariants(demo.db)).filter((r) => r.violations > 0);
      expect(bad).toEqual([]);
    } finally {
      await demo.drop();
    }
  });

  // Real concurrency, the window widened by a third session holding the execution row:
  // even rounds, the wait step's *claim* is in flight when the event is accepted and
  // dispatched (on 309b01c the event was consumed and the wait parked unresolved); odd
  // rounds, the *park* statement is in flight (its snapshot taken, blocked on the row).
  // Guard: lockEventChannel before parkExecution's look-back, and insertEvent's lock.
  // Without them, odd rounds park unresolved: the look-back's snapshot predates the event
  // and the dispatch found the wait not parked yet.
  it('a wait being claimed or parked while its event is accepted: resolved by that event, every round', async () => {
    const wf = await workflowFrom(t.db, projectId, waitWorkflow({ allowReentry: true }));
    const wait = await stepId(t.db, wf.id, 'wait');
    for (let round = 0; round < ROUNDS; round++) {
      const x = await atWaitStep(wf.id, `p1-race-${round}@example.com`);
      const claimInFlight = round % 2 === 0;
      const preclaimed = claimInFlight ? null : await claimWaitStep(t.db, x.executionId, x.version);
      let eventId = '';
      fulfilled(
        await r3.race(async (db, i) => {
          if (i === 0) {
            // Someone holds the execution row for a moment (an operator's repair, say).
            await db.$transaction(async (tx) => {
              await tx.$queryRaw`SELECT id FROM "WorkflowExecution" WHERE id = ${x.executionId}::uuid FOR UPDATE`;
              await tx.$executeRaw`SELECT pg_sleep(0.15)`;
            });
          } else if (i === 1) {
            await sleep(30);
            const claim = preclaimed ?? (await claimWaitStep(db, x.executionId, x.version));
            await runClaimedStep(ctxFor(db), claim);
          } else {
            await sleep(70);
            const tracked = await trackEvent(ctxFor(db), { projectId, name: 'purchase', contactId: x.contactId });
            eventId = (tracked as { eventId: string }).eventId;
          }
        }),
      );
      const row = await waitRow(x.executionId, wait);
      const [ev] = await t.query(`SELECT "createdAt" FROM "Event" WHERE id = $1`, [eventId]);
      expect(ev.createdAt.getTime(), `round ${round}: the event was accepted after the wait began`).toBeGreaterThanOrEqual(row.startedAt.getTime());
      expect(row, `round ${round} (${claimInFlight ? 'claim' : 'park'} in flight)`).toMatchObject({ resolvedBy: 'EVENT', resumeEventId: eventId });
      await expectNoViolations(t.db, `round ${round}`);
    }
  });
});

describe('event time decides, not arrival order (point 2)', () => {
  /** Let time pass for one wait and its event: move them `seconds` into the past together. */
  async function timePasses(stepExecutionId: string, eventIds: string[], seconds: number) {
    await t.query(
      `UPDATE "StepExecution" SET "startedAt" = "startedAt" - $2 * interval '1 second', "dueAt" = "dueAt" - $2 * interval '1 second' WHERE id = $1`,
      [stepExecutionId, seconds],
    );
    if (eventIds.length) {
      await t.query(`UPDATE "Event" SET "createdAt" = "createdAt" - $2 * interval '1 second' WHERE id = ANY($1::uuid[])`, [eventIds, seconds]);
    }
  }

  // On 309b01c: resolvedBy TIMEOUT and the reminder sent, although the purchase came
  // inside the window (its dispatch had failed and was waiting for its retry).
  it('an event accepted before the deadline wins even when the timer fires before its dispatch', async () => {
    const wf = await workflowFrom(t.db, projectId, waitWorkflow({ allowReentry: true }, 3600));
    const [wait, thanks] = [await stepId(t.db, wf.id, 'wait'), await stepId(t.db, wf.id, 'thanks')];
    const x = await atWaitStep(wf.id, 'p2-late-dispatch@example.com');
    await runClaimedStep(ctxFor(t.db), await claimWaitStep(t.db, x.executionId, x.version));
    const stored = await storeEvent(t.db, { projectId, name: 'purchase', contactId: x.contactId }, 600);
    const eventId = (stored as { eventId: string }).eventId;
    const row = await waitRow(x.executionId, wait);
    await timePasses(row.id, [eventId], 7200); // the deadline is an hour ago; the purchase came an hour before it
    expect(await processDueWaits(ctxFor(t.db), 10)).toBe(1);
    expect(await waitRow(x.executionId, wait)).toMatchObject({ resolvedBy: 'EVENT', resolvedBranch: 'EVENT', resumeEventId: eventId });
    // The late dispatch then finds nothing left to resolve.
    await t.query(`UPDATE "Event" SET "nextDispatchAt" = now() WHERE id = $1`, [eventId]);
    await runWorkerOnce(ctxFor(t.db));
    const steps = (await t.query(`SELECT "stepId" FROM "StepExecution" WHERE "executionId" = $1`, [x.executionId])).map((s) => s.stepId);
    expect(steps).toContain(thanks);
    expect(steps).not.toContain(await stepId(t.db, wf.id, 'reminder'));
    const [ctx] = await t.query(`SELECT context FROM "WorkflowExecution" WHERE id = $1`, [x.executionId]);
    expect(ctx.context.lastEvent.name).toBe('purchase');
    await expectNoViolations(t.db, 'late dispatch');
  });

  // On 309b01c: the dispatch resumed the wait by EVENT (the timer had not fired yet).
  it('an event accepted after the deadline never resumes the wait, even while the timer lags', async () => {
    const wf = await workflowFrom(t.db, projectId, waitWorkflow({ allowReentry: true }, 3600));
    const [wait, reminder] = [await stepId(t.db, wf.id, 'wait'), await stepId(t.db, wf.id, 'reminder')];
    const x = await atWaitStep(wf.id, 'p2-after-deadline@example.com');
    await runClaimedStep(ctxFor(t.db), await claimWaitStep(t.db, x.executionId, x.version));
    const row = await waitRow(x.executionId, wait);
    await timePasses(row.id, [], 7200); // the deadline passed an hour ago; no timer ran
    const tracked = await trackEvent(ctxFor(t.db), { projectId, name: 'purchase', contactId: x.contactId });
    expect(tracked.ok).toBe(true);
    expect(await waitRow(x.executionId, wait)).toMatchObject({ status: 'WAITING', resolvedBy: null });
    expect(await processDueWaits(ctxFor(t.db), 10)).toBe(1);
    expect(await waitRow(x.executionId, wait)).toMatchObject({ resolvedBy: 'TIMEOUT', resolvedBranch: 'TIMEOUT', resumeEventId: null });
    await runWorkerOnce(ctxFor(t.db));
    const steps = (await t.query(`SELECT "stepId" FROM "StepExecution" WHERE "executionId" = $1`, [x.executionId])).map((s) => s.stepId);
    expect(steps).toContain(reminder);
    await expectNoViolations(t.db, 'after deadline');
  });

  // The production timer path (lockDueWaits + claimDueWaits) raced against an event being
  // accepted around the deadline, on distinct waits: exactly one resolution per wait, by
  // the branch the event's acceptance time says, and exactly one email on that branch.
  // The event is accepted inside a transaction that lasts 50 ms (as events.track's, with
  // its audit entry). Guard: the timer's try-lock on the event channel. Without it the
  // timer resolves TIMEOUT while an event accepted before the deadline is still committing.
  it('the timer racing events accepted around the deadline: one branch per wait, the one its event time says, one email', async () => {
    const wf = await workflowFrom(t.db, projectId, waitWorkflow({ allowReentry: true }, 3600));
    const [wait, thanks, reminder] = [
      await stepId(t.db, wf.id, 'wait'),
      await stepId(t.db, wf.id, 'thanks'),
      await stepId(t.db, wf.id, 'reminder'),
    ];
    const rounds = Math.max(ROUNDS, 40);
    const seen = { EVENT: 0, TIMEOUT: 0 };
    for (let round = 0; round < rounds; round++) {
      const x = await atWaitStep(wf.id, `p2-race-${round}@example.com`);
      await runClaimedStep(ctxFor(t.db), await claimWaitStep(t.db, x.executionId, x.version));
      const row = await waitRow(x.executionId, wait);
      await t.query(`UPDATE "StepExecution" SET "dueAt" = now() + interval '60 milliseconds' WHERE id = $1`, [row.id]);
      const eventDelay = (round * 37) % 110; // accepted from well before to well after the deadline
      let eventId = '';
      fulfilled(
        await r3.race(async (db, i) => {
          if (i === 0) {
            // The timer: a worker's pass, again and again, from just after the deadline.
            await sleep(70);
            const until = Date.now() + 3000;
            while (Date.now() < until) {
              await processDueWaits(ctxFor(db), 10);
              const [r] = await db.$queryRaw<{ resolved: boolean }[]>`
                SELECT "resolvedBy" IS NOT NULL AS resolved FROM "StepExecution" WHERE id = ${row.id}::uuid`;
              if (r?.resolved) break;
              await sleep(5);
            }
          } else if (i === 1) {
            await sleep(eventDelay);
            await db.$transaction(async (tx) => {
              const stored = await storeEvent(tx, { projectId, name: 'purchase', contactId: x.contactId }, 600);
              eventId = (stored as { eventId: string }).eventId;
              await tx.$executeRaw`SELECT pg_sleep(0.05)`;
            });
            await dispatchEvent(ctxFor(db), eventId);
          }
        }),
      );
      await runWorkerOnce(ctxFor(t.db));
      const final = await waitRow(x.executionId, wait);
      const [ev] = await t.query(`SELECT "createdAt" FROM "Event" WHERE id = $1`, [eventId]);
      const inTime = ev.createdAt.getTime() < final.dueAt.getTime();
      const label = `round ${round}: event at ${ev.createdAt.toISOString()}, deadline ${final.dueAt.toISOString()}`;
      expect(final, label).toMatchObject(
        inTime
          ? { resolvedBy: 'EVENT', resolvedBranch: 'EVENT', resumeEventId: eventId }
          : { resolvedBy: 'TIMEOUT', resolvedBranch: 'TIMEOUT', resumeEventId: null },
      );
      seen[inTime ? 'EVENT' : 'TIMEOUT']++;
      const steps = (await t.query(`SELECT "stepId" FROM "StepExecution" WHERE "executionId" = $1`, [x.executionId])).map((s) => s.stepId);
      expect(steps.includes(thanks), label).toBe(inTime);
      expect(steps.includes(reminder), label).toBe(!inTime);
      const messages = await t.query(`SELECT subject FROM "Message" WHERE "executionId" = $1 ORDER BY "createdAt"`, [x.executionId]);
      expect(messages.map((m) => m.subject), label).toEqual([`Hello p2-race-${round}@example.com`, inTime ? 'Thanks' : 'Reminder']);
      await expectNoViolations(t.db, label);
    }
    // Both sides of the deadline were exercised.
    expect(seen.EVENT, JSON.stringify(seen)).toBeGreaterThan(0);
    expect(seen.TIMEOUT, JSON.stringify(seen)).toBeGreaterThan(0);
  });
});
