import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../server/db';
import { insertEvent } from '../../server/engine/claims';
import { createEngineContext } from '../../server/engine/context';
import { processDueEvents } from '../../server/engine/events';
import { applyRepair, previewRepair, repairOptionsFor } from '../../server/repair/actions';
import { applyMany } from '../../server/repair/bulk';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createProject, parkedAtWait, stepId, waitWorkflow, workflowFrom } from '../support/fixtures';
import { runStepsOnly } from '../support/drive';
import { expectNoViolations, ROUNDS } from '../support/race';

// FORCE_TIMEOUT follows the timer's rule (docs/event-time.md): an event accepted inside the
// wait's window [startedAt, dueAt) and not consumed (its dispatch late, dead or pending)
// resumes the wait by EVENT; the preview names it; timing out past it is the operator's
// explicit, audited ignoreInWindowEvents. Before, the overdue group's bulk FORCE_TIMEOUT
// took the TIMEOUT branch and sent the reminder although the timer would have chosen EVENT.

let t: TestDatabase;
let projectId: string;
let workflowId: string;
const GRACE = { graceSeconds: 0 };

beforeAll(async () => {
  t = await freshDatabase();
  projectId = (await createProject(t.db)).id;
  workflowId = (await workflowFrom(t.db, projectId, waitWorkflow({ allowReentry: true }))).id;
});
afterAll(async () => {
  await t?.drop();
});

let n = 0;

/** An execution parked at "Wait for purchase", its window moved into the past: started 1 h ago, due 1 min ago (overdue). */
async function overdueWait() {
  const x = await parkedAtWait(t.db, projectId, workflowId, `overdue-${++n}-${Math.random().toString(36).slice(2, 6)}@example.com`);
  const startedAt = new Date(Date.now() - 3600_000);
  const dueAt = new Date(Date.now() - 60_000);
  await t.db.stepExecution.update({ where: { id: x.stepExecutionId }, data: { startedAt, dueAt } });
  const execution = await t.db.workflowExecution.findUniqueOrThrow({ where: { id: x.id } });
  return { ...x, contactId: execution.contactId, startedAt, dueAt };
}

/** A purchase of the contact accepted at `at` whose dispatch has not run (it is late: due in an hour). */
function pendingPurchase(contactId: string, at: Date, data: { sku: string } = { sku: 'late' }) {
  return t.db.event.create({ data: { projectId, contactId, name: 'purchase', data, createdAt: at, nextDispatchAt: new Date(Date.now() + 3600_000) } });
}

const apply = (db: Db, x: { id: string; version: number }, extra: { ignoreInWindowEvents?: boolean } = {}) =>
  applyRepair(
    db,
    {
      projectId,
      action: 'FORCE_TIMEOUT',
      executionId: x.id,
      actor: 'user:operator',
      reason: 'overdue group',
      expectedVersion: x.version,
      ...(extra.ignoreInWindowEvents !== undefined ? { choices: { ignoreInWindowEvents: extra.ignoreInWindowEvents } } : {}),
    },
    GRACE,
  );

async function outcomeOf(x: { id: string; stepExecutionId: string }) {
  const wait = await t.db.stepExecution.findUniqueOrThrow({ where: { id: x.stepExecutionId } });
  const execution = await t.db.workflowExecution.findUniqueOrThrow({ where: { id: x.id } });
  const subjects = (await t.db.message.findMany({ where: { executionId: x.id } })).map((m) => m.subject).sort();
  return { resolvedBy: wait.resolvedBy, branch: wait.resolvedBranch, resumeEventId: wait.resumeEventId, context: execution.context, subjects };
}

describe('FORCE_TIMEOUT applies the timer’s rule', () => {
  it('an event accepted inside the window, its dispatch late: the preview names it, and the wait takes the EVENT branch with its data', async () => {
    const x = await overdueWait();
    const event = await pendingPurchase(x.contactId, new Date(x.startedAt.getTime() + 60_000), { sku: 'in-window' });

    const preview = await previewRepair(t.db, { projectId, action: 'FORCE_TIMEOUT', executionId: x.id }, GRACE);
    expect(preview.plan).toMatchObject({ allowed: true, branch: 'EVENT', nextStep: { key: 'thanks' }, resumeEvent: { id: event.id, name: 'purchase' } });
    expect(preview.plan.change).toMatch(/"purchase" event accepted .* inside its window, as the timer would/);
    const options = await repairOptionsFor(t.db, projectId, x.id, GRACE);
    expect(options.target.inWindowEvents.map((e) => e.id)).toEqual([event.id]);

    const result = await apply(t.db, x);
    expect(result).toMatchObject({ ok: true, change: preview.plan.change });
    await runStepsOnly(t.db);
    expect(await outcomeOf(x)).toEqual({
      resolvedBy: 'EVENT',
      branch: 'EVENT',
      resumeEventId: event.id,
      context: expect.objectContaining({ lastEvent: expect.objectContaining({ name: 'purchase', data: { sku: 'in-window' } }) }),
      // "Hello …", then "Thanks" (EVENT); never "Reminder" (TIMEOUT).
      subjects: [expect.stringMatching(/^Hello /), 'Thanks'],
    });
    const audit = await t.db.auditEntry.findFirstOrThrow({ where: { targetId: x.id, action: 'repair.FORCE_TIMEOUT' } });
    expect(audit).toMatchObject({ outcome: 'APPLIED', after: expect.objectContaining({ branch: 'EVENT', resumeEvent: expect.objectContaining({ id: event.id }) }) });

    // The event's dispatch, when it finally runs, finds the wait resolved: nothing twice.
    await t.db.event.update({ where: { id: event.id }, data: { nextDispatchAt: new Date() } });
    await processDueEvents(createEngineContext(t.db), 10);
    expect((await outcomeOf(x)).subjects).toHaveLength(2);
    await expectNoViolations(t.db, 'after the late dispatch');
  });

  it('an event accepted after the deadline, or before the wait began, or of another name does not count: TIMEOUT', async () => {
    const x = await overdueWait();
    await pendingPurchase(x.contactId, new Date(x.dueAt.getTime() + 1_000));
    await pendingPurchase(x.contactId, new Date(x.startedAt.getTime() - 1_000));
    await t.db.event.create({ data: { projectId, contactId: x.contactId, name: 'browse', data: {}, createdAt: new Date(x.startedAt.getTime() + 1_000) } });
    const preview = await previewRepair(t.db, { projectId, action: 'FORCE_TIMEOUT', executionId: x.id }, GRACE);
    expect(preview.plan).toMatchObject({ allowed: true, branch: 'TIMEOUT', resumeEvent: null });
    expect(await apply(t.db, x)).toMatchObject({ ok: true });
    expect(await outcomeOf(x)).toMatchObject({ resolvedBy: 'OPERATOR', branch: 'TIMEOUT', resumeEventId: null });
  });

  it('an event another wait of the execution consumed does not count twice', async () => {
    const x = await overdueWait();
    const event = await pendingPurchase(x.contactId, new Date(x.startedAt.getTime() + 1_000));
    // Another step row of the same execution (as an earlier wait of it would) consumed this event.
    await t.db.stepExecution.updateMany({ where: { executionId: x.id, stepId: await stepId(t.db, workflowId, 'hello') }, data: { resumeEventId: event.id } });
    expect((await previewRepair(t.db, { projectId, action: 'FORCE_TIMEOUT', executionId: x.id }, GRACE)).plan).toMatchObject({ branch: 'TIMEOUT' });
  });

  it('"time out anyway" is an explicit choice: TIMEOUT, the ignored events named in the plan and the audit entry', async () => {
    const x = await overdueWait();
    const event = await pendingPurchase(x.contactId, new Date(x.startedAt.getTime() + 1_000));
    const preview = await previewRepair(t.db, { projectId, action: 'FORCE_TIMEOUT', executionId: x.id, choices: { ignoreInWindowEvents: true } }, GRACE);
    expect(preview.plan).toMatchObject({ branch: 'TIMEOUT', resumeEvent: null, ignoredEvents: [expect.objectContaining({ id: event.id })] });
    expect(preview.plan.change).toMatch(/as TIMEOUT \(by an operator\), ignoring the "purchase" event/);
    expect(await apply(t.db, x, { ignoreInWindowEvents: true })).toMatchObject({ ok: true });
    expect(await outcomeOf(x)).toMatchObject({ resolvedBy: 'OPERATOR', branch: 'TIMEOUT', resumeEventId: null });
    const audit = await t.db.auditEntry.findFirstOrThrow({ where: { targetId: x.id, action: 'repair.FORCE_TIMEOUT' } });
    expect(audit.after).toMatchObject({ choices: { ignoreInWindowEvents: true }, ignoredEvents: [expect.objectContaining({ id: event.id })] });
  });

  it('the overdue group’s bulk FORCE_TIMEOUT: the dry run counts the waits an event resumes, each row takes its own branch and says so', async () => {
    const ids: { id: string; stepExecutionId: string; withEvent: boolean }[] = [];
    for (let i = 0; i < 6; i++) {
      const x = await overdueWait();
      const withEvent = i % 2 === 0;
      if (withEvent) await pendingPurchase(x.contactId, new Date(x.startedAt.getTime() + 1_000));
      ids.push({ id: x.id, stepExecutionId: x.stepExecutionId, withEvent });
    }
    const filter = { executionIds: ids.map((x) => x.id) };
    const dry = await applyMany(t.db, { projectId, actor: 'user:operator', action: 'FORCE_TIMEOUT', reason: 'overdue', filter, dryRun: true }, GRACE);
    expect(dry).toMatchObject({ matched: 6, inWindowEvents: 3 });
    const run = await applyMany(t.db, { projectId, actor: 'user:operator', action: 'FORCE_TIMEOUT', reason: 'overdue', filter, dryRun: false, ratePerSecond: 1000 }, GRACE);
    expect(run.items.map((i) => i.outcome)).toEqual(Array(6).fill('APPLIED'));
    for (const x of ids) {
      const item = run.items.find((i) => i.executionId === x.id)!;
      expect(item.detail).toMatch(x.withEvent ? /by the "purchase" event .* EVENT branch/ : /as TIMEOUT \(by an operator\)/);
      expect(await outcomeOf(x)).toMatchObject(x.withEvent ? { resolvedBy: 'EVENT', branch: 'EVENT' } : { resolvedBy: 'OPERATOR', branch: 'TIMEOUT' });
    }
    await expectNoViolations(t.db, 'after the bulk run');
  });
});

describe('FORCE_TIMEOUT racing an event being accepted', () => {
  // Guard: the applier takes the event channel's lock before it looks back (apply.ts,
  // lockEventChannel). An event whose acceptance is in flight (its createdAt stamped, its
  // transaction not yet committed) is then waited for and taken; without the lock the
  // look-back misses it, the wait times out, and an event accepted before the operator's
  // resolution is lost to it (event time decides).
  it('an event accepted while the operator times the wait out is never lost: EVENT, or the event came after the resolution', async () => {
    const rounds = Math.max(5, Math.round(ROUNDS / 5));
    for (let round = 0; round < rounds; round++) {
      const x = await overdueWait();
      // The dueAt is past, so the event must fall inside the window to count: move the deadline ahead.
      await t.db.stepExecution.update({ where: { id: x.stepExecutionId }, data: { dueAt: new Date(Date.now() + 3600_000) } });
      let inserted!: () => void;
      const accepted = new Promise<void>((r) => (inserted = r));
      const acceptance = t.db.$transaction(
        async (tx) => {
          await insertEvent(tx, { projectId, contactId: x.contactId, name: 'purchase', data: { round }, idempotencyKey: null, dispatchInSeconds: 3600 });
          inserted();
          await new Promise((r) => setTimeout(r, 150 + (round % 3) * 50));
        },
        { timeout: 10_000 },
      );
      await accepted;
      const [result] = await Promise.all([apply(t.db, x), acceptance]);
      expect(result, `round ${round}`).toMatchObject({ ok: true });
      const wait = await t.db.stepExecution.findUniqueOrThrow({ where: { id: x.stepExecutionId } });
      const event = await t.db.event.findFirstOrThrow({ where: { contactId: x.contactId, name: 'purchase' } });
      if (wait.resolvedBy !== 'EVENT') {
        // Timing out is right only if the event was accepted after the wait was resolved.
        expect(event.createdAt.getTime(), `round ${round}: timed out past an event accepted before it (${JSON.stringify(wait)})`).toBeGreaterThanOrEqual(wait.resolvedAt!.getTime());
      } else {
        expect(wait.resumeEventId).toBe(event.id);
      }
    }
    await expectNoViolations(t.db, 'after the race');
  });
});
