import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../server/db';
import type { WorkflowInput } from '../../server/common/workflow-definition';
import type { VersionDefinition } from '../../server/common/version-definition';
import { createEngineContext } from '../../server/engine/context';
import { enroll } from '../../server/engine/enrollment';
import { dispatchEvent, trackEvent } from '../../server/engine/events';
import { claimDueWaits, claimReadySteps, lockDueWaits, migrateExecution } from '../../server/engine/claims';
import { processPendingContinuations } from '../../server/engine/continuations';
import { rawTransaction } from '../../server/db';
import { driveExecution, processDueWaits } from '../../server/engine/runner';
import { publishVersion, versionDefinitionOf } from '../../server/engine/versions';
import { applyRepair, previewRepair } from '../../server/repair/actions';
import type { RepairChoices } from '../../server/repair/planner';
import { freshDatabase, type TestDatabase } from '../support/database';
import { runStepsOnly } from '../support/drive';
import { createContact, createProject, workflowFrom } from '../support/fixtures';
import { expectNoViolations, racers, ROUNDS, type Racers } from '../support/race';

// MIGRATE (docs/versions.md, "Moving executions"): an operator moves executions from
// their version to a later one. Each race below names the guard it shows; the guard
// mutations (scripts/guard-mutations/versions.ts) remove them.

const OPTS = { graceSeconds: 0 };
const ACTOR = 'user:operator';

/** v1: start → hello → pause (DELAY 1 h) → wait (ping, 1 h) → EVENT: yay / TIMEOUT: meh. */
function v1(name: string): WorkflowInput {
  return {
    name,
    trigger: 'MANUAL',
    allowReentry: true,
    steps: [
      { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
      { key: 'hello', type: 'SEND_EMAIL', name: 'Hello', config: { subject: 'v1 hello', body: 'Hi' } },
      { key: 'pause', type: 'DELAY', name: 'Pause', config: { seconds: 3600 } },
      { key: 'wait', type: 'WAIT_FOR_EVENT', name: 'Wait for ping', config: { eventName: 'ping', timeoutSeconds: 3600 } },
      { key: 'yay', type: 'SEND_EMAIL', name: 'Yay', config: { subject: 'v1 yay', body: 'Pinged' } },
      { key: 'meh', type: 'SEND_EMAIL', name: 'Meh', config: { subject: 'v1 meh', body: 'Silent' } },
    ],
    transitions: [
      { from: 'start', to: 'hello', branch: null },
      { from: 'hello', to: 'pause', branch: null },
      { from: 'pause', to: 'wait', branch: null },
      { from: 'wait', to: 'yay', branch: 'EVENT' },
      { from: 'wait', to: 'meh', branch: 'TIMEOUT' },
    ],
  };
}

/** v2: the DELAY removed, the wait two hours, new copy; hello → wait directly. */
const V2: VersionDefinition = {
  steps: [
    { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
    { key: 'hello', type: 'SEND_EMAIL', name: 'Hello', config: { subject: 'v2 hello', body: 'Hi' } },
    { key: 'wait', type: 'WAIT_FOR_EVENT', name: 'Wait for ping', config: { eventName: 'ping', timeoutSeconds: 7200 } },
    { key: 'yay', type: 'SEND_EMAIL', name: 'Yay', config: { subject: 'v2 yay', body: 'Pinged' } },
    { key: 'meh', type: 'SEND_EMAIL', name: 'Meh', config: { subject: 'v2 meh', body: 'Silent' } },
  ],
  transitions: [
    { from: 'start', to: 'hello', branch: null },
    { from: 'hello', to: 'wait', branch: null },
    { from: 'wait', to: 'yay', branch: 'EVENT' },
    { from: 'wait', to: 'meh', branch: 'TIMEOUT' },
  ],
};

let t: TestDatabase;
let r: Racers;
let projectId: string;

beforeAll(async () => {
  t = await freshDatabase();
  r = await racers(t.url, 2);
  projectId = (await createProject(t.db)).id;
});
afterAll(async () => {
  await r?.close();
  await t?.drop();
});

let n = 0;

/** Enroll on version 1 (the workflow's latest must be 1), optionally driven to its first wait. */
async function onVersion1(workflowId: string, email: string, drive: boolean): Promise<string> {
  const contact = await createContact(t.db, projectId, email);
  const enrolled = await enroll(t.db, { projectId, workflowId, contactId: contact.id });
  if (!enrolled.ok) throw new Error(enrolled.reason);
  if (drive) await runStepsOnly(t.db);
  return enrolled.executionId;
}

/** A fresh workflow with `count` executions on v1 (driven to the DELAY when `drive`), then v2 published. */
async function parkedThenPublished(count: number, drive: boolean, prefix: string): Promise<{ workflowId: string; ids: string[] }> {
  const wf = await workflowFrom(t.db, projectId, v1(`migrate ${++n}`));
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push(await onVersion1(wf.id, `${prefix}-${n}-${i}@example.com`, false));
  if (drive) await runStepsOnly(t.db);
  const published = await publishVersion(t.db, { projectId, actor: 'user:marketer' }, { workflowId: wf.id, basedOnVersion: 1, definition: V2 });
  if (!published.ok) throw new Error(JSON.stringify(published));
  return { workflowId: wf.id, ids };
}

async function migrate(db: Db, executionId: string, choices: RepairChoices = {}) {
  const preview = await previewRepair(db, { projectId, action: 'MIGRATE', executionId, choices }, OPTS);
  const result = await applyRepair(db, { projectId, action: 'MIGRATE', executionId, choices, actor: ACTOR, reason: 'move to v2', expectedVersion: preview.expectedVersion }, OPTS);
  return { preview, result };
}

async function where(executionId: string) {
  const [row] = await t.query(
    `SELECT e.status, v.number AS version, ws.key AS step, e.version AS fence,
            (SELECT array_agg(m.subject ORDER BY m."createdAt") FROM "Message" m WHERE m."executionId" = e.id) AS subjects
       FROM "WorkflowExecution" e JOIN "WorkflowVersion" v ON v.id = e."workflowVersionId"
       LEFT JOIN "WorkflowStep" ws ON ws.id = e."currentStepId" WHERE e.id = $1`,
    [executionId],
  );
  return row as { status: string; version: number; step: string | null; fence: number; subjects: string[] | null };
}

async function waitRow(executionId: string) {
  const [row] = await t.query(
    `SELECT s."startedAt", s."dueAt", s.status, s."resolvedBy", ws.key, v.number AS version FROM "StepExecution" s
       JOIN "WorkflowStep" ws ON ws.id = s."stepId" JOIN "WorkflowVersion" v ON v.id = ws."versionId"
      WHERE s."executionId" = $1 AND ws.key = 'wait'`,
    [executionId],
  );
  return row;
}

describe('MIGRATE: planning and moving', () => {
  it('an execution at a removed step is refused until the operator names its step; then it runs on the new version', async () => {
    const { ids: [id] } = await parkedThenPublished(1, true, 'removed');
    expect(await where(id!)).toMatchObject({ status: 'WAITING', version: 1, step: 'pause', subjects: ['v1 hello'] });
    const refused = await migrate(t.db, id!);
    expect(refused.result).toMatchObject({ ok: false, code: 'NOT_ALLOWED' });
    expect(refused.preview.plan.refusal).toMatch(/version 2 has no step "pause".*stepMap/);
    const moved = await migrate(t.db, id!, { stepMap: { pause: 'wait' } });
    expect(moved.result).toMatchObject({ ok: true });
    expect(moved.preview.plan.migration).toMatchObject({ fromVersion: 1, toVersion: 2, fromStep: { key: 'pause' }, toStep: { key: 'wait' }, keepsWait: false, resends: [] });
    // The DELAY's row ended SKIPPED (migrated); the wait of v2 is parked by the worker, on v2.
    await runStepsOnly(t.db);
    expect(await where(id!)).toMatchObject({ status: 'WAITING', version: 2, step: 'wait' });
    expect((await waitRow(id!)).version).toBe(2);
    const [pause] = await t.query(`SELECT s.status, s.output->>'migrated' AS note FROM "StepExecution" s JOIN "WorkflowStep" ws ON ws.id = s."stepId" WHERE s."executionId" = $1 AND ws.key = 'pause'`, [id]);
    expect(pause.status).toBe('SKIPPED');
    expect(pause.note).toMatch(/moved to version 2 step "wait" by user:operator: move to v2/);
    const audit = await t.query(`SELECT outcome FROM "AuditEntry" WHERE action = 'repair.MIGRATE' AND "targetId" = $1 ORDER BY at`, [id]);
    expect(audit.map((a) => a.outcome)).toEqual(['REJECTED', 'APPLIED']);
    await expectNoViolations(t.db, 'removed step');
  });

  it('a pending wait moved to a wait on the same event keeps its window start and takes the new deadline', async () => {
    const { ids: [id] } = await parkedThenPublished(1, true, 'keep');
    // Past the DELAY on v1 (as the timer would), to its wait.
    await t.query(`UPDATE "StepExecution" SET "dueAt" = now() - interval '1 second' WHERE "executionId" = $1 AND status = 'WAITING'`, [id]);
    await processDueWaits(createEngineContext(t.db), 10);
    await runStepsOnly(t.db);
    const before = await waitRow(id!);
    expect(before).toMatchObject({ version: 1, status: 'WAITING', resolvedBy: null });
    const moved = await migrate(t.db, id!);
    expect(moved.result).toMatchObject({ ok: true });
    expect(moved.preview.plan.migration).toMatchObject({ keepsWait: true, toStep: { key: 'wait' } });
    expect(moved.preview.plan.migration!.lookBackFrom!.getTime()).toBe(before.startedAt.getTime());
    const after = await waitRow(id!);
    expect(after).toMatchObject({ version: 2, status: 'WAITING', resolvedBy: null });
    expect(after.startedAt.getTime()).toBe(before.startedAt.getTime());
    expect(after.dueAt.getTime()).toBe(before.startedAt.getTime() + 7200_000);
    // The event resumes it on v2's EVENT branch.
    const contact = (await t.query(`SELECT "contactId" FROM "WorkflowExecution" WHERE id = $1`, [id]))[0].contactId;
    await trackEvent(createEngineContext(t.db), { projectId, name: 'ping', contactId: contact });
    await runStepsOnly(t.db);
    expect(await where(id!)).toMatchObject({ status: 'COMPLETED', version: 2, subjects: ['v1 hello', 'v2 yay'] });
    await expectNoViolations(t.db, 'kept wait');
  });

  it('a move that would send an already-sent email again is refused unless the operator allows it', async () => {
    const { ids: [id] } = await parkedThenPublished(1, true, 'resend');
    const refused = await migrate(t.db, id!, { stepMap: { pause: 'hello' } });
    expect(refused.result).toMatchObject({ ok: false, code: 'NOT_ALLOWED' });
    expect(refused.preview.plan.refusal).toMatch(/would send again "hello"/);
    expect(refused.preview.plan.migration?.resends).toEqual(['hello']);
    const allowed = await migrate(t.db, id!, { stepMap: { pause: 'hello' }, allowResend: true });
    expect(allowed.result).toMatchObject({ ok: true });
    await runStepsOnly(t.db);
    expect((await where(id!)).subjects).toEqual(['v1 hello', 'v2 hello']);
  });

  it('refuses to move to the same or an earlier version, a finished execution, or a resolved wait', async () => {
    const { ids: [id] } = await parkedThenPublished(1, true, 'refuse');
    expect((await migrate(t.db, id!, { toVersion: 1, stepMap: { pause: 'wait' } })).preview.plan.refusal).toMatch(/only to a later version/);
    expect((await migrate(t.db, id!, { toVersion: 9 })).preview.plan.refusal).toMatch(/no version 9/);
    await t.query(`UPDATE "StepExecution" SET "resolvedBy" = 'TIMEOUT', "resolvedAt" = now() WHERE "executionId" = $1 AND status = 'WAITING'`, [id]);
    expect((await migrate(t.db, id!, { stepMap: { pause: 'wait' } })).preview.plan.refusal).toMatch(/already resolved by TIMEOUT/);
  });
});

describe('MIGRATE races', () => {
  // Guard: migrateExecution's fence (the version the operator saw, and the step and version
  // it planned from). Without it, a move planned before the worker ran "hello" lands after
  // it, and "hello" runs again on version 2: two hellos.
  it(`against a worker's claim: the execution runs each step once, on one version (${ROUNDS} rounds)`, async () => {
    const wf = await workflowFrom(t.db, projectId, v1(`migrate race worker ${++n}`));
    const graphs = await t.query(`SELECT v.number, s.key, s.id, v.id AS "versionId" FROM "WorkflowStep" s JOIN "WorkflowVersion" v ON v.id = s."versionId" WHERE s."workflowId" = $1`, [wf.id]);
    const ids: string[] = [];
    for (let round = 0; round < ROUNDS; round++) ids.push(await onVersion1(wf.id, `race-worker-${round}@example.com`, false));
    // Past the TRIGGER: each execution is RUNNING at "hello", due now.
    await t.query(`UPDATE "WorkflowExecution" SET "readyAt" = 'infinity' WHERE "workflowId" = $1`, [wf.id]);
    const published = await publishVersion(t.db, { projectId, actor: 'user:marketer' }, { workflowId: wf.id, basedOnVersion: 1, definition: V2 });
    expect(published.ok).toBe(true);
    const step = (v: number, key: string) => graphs.find((g) => g.number === v && g.key === key) ?? null;
    const v2 = (await t.query(`SELECT s.key, s.id, v.id AS "versionId" FROM "WorkflowStep" s JOIN "WorkflowVersion" v ON v.id = s."versionId" WHERE s."workflowId" = $1 AND v.number = 2`, [wf.id]));
    const v2hello = v2.find((s) => s.key === 'hello')!;
    const outcomes = { moved: 0, lost: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      const id = ids[round]!;
      await t.query(`UPDATE "WorkflowExecution" SET "readyAt" = now() WHERE id = $1`, [id]);
      const seen = await where(id);
      const results = await r.race(async (db, i) => {
        if (i === 0) {
          // The worker: claim what is due and run it, as a worker does.
          const { claims } = await claimReadySteps(db, { limit: 5, leaseSeconds: 30 });
          for (const claim of claims) await driveExecution(createEngineContext(db), claim);
          return 'worker';
        }
        // The operator's move, planned from what was seen before the worker ran.
        await new Promise((res) => setTimeout(res, (round * 7) % 25));
        const claim = await migrateExecution(db, {
          executionId: id,
          expectedVersion: seen.fence,
          fromVersionId: step(1, 'hello')!.versionId,
          fromStepId: step(1, 'hello')!.id,
          toVersionId: v2hello.versionId,
          toStepId: v2hello.id,
          keepWait: false,
          dueSeconds: null,
          note: `round ${round}`,
        });
        return claim.won ? 'moved' : 'lost';
      });
      const answer = results[1]!.status === 'fulfilled' ? results[1]!.value : 'threw';
      expect(['moved', 'lost'], String(results[1]!.status === 'rejected' ? results[1]!.reason : '')).toContain(answer);
      outcomes[answer as 'moved' | 'lost']++;
      await runStepsOnly(t.db);
      const after = await where(id);
      // One hello, of the version the execution ended on.
      expect(after.subjects, `round ${round}: ${answer}`).toEqual([`v${after.version} hello`]);
      expect(after.step, `round ${round}`).toBe(after.version === 1 ? 'pause' : 'wait');
    }
    expect(outcomes.moved + outcomes.lost).toBe(ROUNDS);
    await expectNoViolations(t.db, 'worker race');
  });

  // The repair against the timer, end to end: a timer that resolved the wait first wins
  // (the repair, re-planned under its lock, refuses a resolved wait); a move that lands
  // first keeps the wait, which the timer then finds not due (the new deadline is two hours
  // from its start). The move's own checks beneath are shown by the next test.
  it(`against the timer at the deadline: one of them, never both (${ROUNDS} rounds)`, async () => {
    const { ids } = await parkedThenPublished(ROUNDS, true, 'race-timer');
    const outcomes = { timer: 0, moved: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      const id = ids[round]!;
      // Each at v1's wait with its deadline passed: past the DELAY first.
      await t.query(`UPDATE "StepExecution" SET "dueAt" = now() - interval '1 second' WHERE "executionId" = $1 AND status = 'WAITING'`, [id]);
      await processDueWaits(createEngineContext(t.db), 100);
      await runStepsOnly(t.db);
      await t.query(`UPDATE "StepExecution" s SET "dueAt" = now() - interval '1 second' FROM "WorkflowStep" ws WHERE ws.id = s."stepId" AND ws.key = 'wait' AND s."executionId" = $1`, [id]);
      const preview = await previewRepair(t.db, { projectId, action: 'MIGRATE', executionId: id }, OPTS);
      expect(preview.plan.allowed, preview.plan.refusal ?? '').toBe(true);
      const results = await r.race(async (db, i) => {
        if (i === 0) return processDueWaits(createEngineContext(db), 100);
        return applyRepair(db, { projectId, action: 'MIGRATE', executionId: id, actor: ACTOR, reason: `round ${round}`, expectedVersion: preview.expectedVersion }, OPTS);
      });
      for (const x of results) if (x.status === 'rejected') throw x.reason;
      await processDueWaits(createEngineContext(t.db), 100);
      await runStepsOnly(t.db);
      const after = await where(id);
      const wait = await waitRow(id);
      if (after.version === 1) {
        outcomes.timer++;
        expect(after, `round ${round}`).toMatchObject({ status: 'COMPLETED', subjects: ['v1 hello', 'v1 meh'] });
        expect(wait.resolvedBy).toBe('TIMEOUT');
      } else {
        outcomes.moved++;
        expect(after, `round ${round}`).toMatchObject({ status: 'WAITING', step: 'wait', subjects: ['v1 hello'] });
        expect(wait).toMatchObject({ version: 2, status: 'WAITING', resolvedBy: null });
      }
    }
    expect(outcomes.timer + outcomes.moved).toBe(ROUNDS);
    await expectNoViolations(t.db, 'timer race');
  });

  // Guard: the same check, in the window that race cannot reach through a repair (the
  // repair re-plans under its lock, and its planner refuses a resolved wait first): the
  // timer resolved the wait (its claim committed) and has not advanced past it yet, as when
  // its worker died between its two statements. The move itself loses, whether it was
  // planned before the timer's claim (the version fence) or after it (the resolved wait);
  // so does the repair; the continuation sweeper then finishes the execution on v1.
  it('a wait the timer resolved but has not advanced past is not moved; the continuation finishes it on v1', async () => {
    const { workflowId, ids } = await parkedThenPublished(2, true, 'resolved-unadvanced');
    const steps = await t.query(`SELECT v.number, s.key, s.id, v.id AS "versionId" FROM "WorkflowStep" s JOIN "WorkflowVersion" v ON v.id = s."versionId" WHERE s."workflowId" = $1`, [workflowId]);
    const step = (v: number, key: string) => steps.find((g) => g.number === v && g.key === key)!;
    for (const [k, id] of ids.entries()) {
      await t.query(`UPDATE "StepExecution" SET "dueAt" = now() - interval '1 second' WHERE "executionId" = $1 AND status = 'WAITING'`, [id]);
      await processDueWaits(createEngineContext(t.db), 100);
      await runStepsOnly(t.db);
      await t.query(`UPDATE "StepExecution" s SET "dueAt" = now() - interval '1 second' FROM "WorkflowStep" ws WHERE ws.id = s."stepId" AND ws.key = 'wait' AND s."executionId" = $1`, [id]);
      const before = await where(id);
      const preview = await previewRepair(t.db, { projectId, action: 'MIGRATE', executionId: id }, OPTS);
      expect(preview.plan.allowed, preview.plan.refusal ?? '').toBe(true);
      // The timer's first transaction only: the wait is resolved by TIMEOUT, the execution not advanced.
      const claimed = await rawTransaction(t.db, 'ENGINE', async (tx) => claimDueWaits(tx, { stepExecutionIds: await lockDueWaits(tx, { limit: 100 }) }));
      expect(claimed.map((c) => c.executionId)).toEqual([id]);
      const label = k === 0 ? 'planned before the claim' : 'planned after the claim';
      const move = await migrateExecution(t.db, {
        executionId: id,
        expectedVersion: k === 0 ? before.fence : (await where(id)).fence,
        fromVersionId: step(1, 'wait').versionId,
        fromStepId: step(1, 'wait').id,
        toVersionId: step(2, 'wait').versionId,
        toStepId: step(2, 'wait').id,
        keepWait: true,
        dueSeconds: 7200,
        note: label,
      });
      expect(move.won, label).toBe(false);
      const repair = await applyRepair(t.db, { projectId, action: 'MIGRATE', executionId: id, actor: ACTOR, reason: 'after the timer', expectedVersion: preview.expectedVersion }, OPTS);
      expect(repair, label).toMatchObject({ ok: false });
      expect(await where(id), label).toMatchObject({ status: 'WAITING', version: 1, step: 'wait' });
      await processPendingContinuations(createEngineContext(t.db, { config: { continuationGraceSeconds: 0 } }), 100);
      await runStepsOnly(t.db);
      expect(await where(id)).toMatchObject({ status: 'COMPLETED', version: 1, subjects: ['v1 hello', 'v1 meh'] });
      expect(await waitRow(id)).toMatchObject({ version: 1, status: 'COMPLETED', resolvedBy: 'TIMEOUT' });
    }
    await expectNoViolations(t.db, 'resolved, not advanced');
  });

  // Guard: the event channel lock MIGRATE takes before moving a wait on an event, and its
  // fence. An event accepted while the move runs resolves exactly one wait, once.
  it(`against an event: it resumes the wait once, on whichever version the wait is on (${ROUNDS} rounds)`, async () => {
    const { ids } = await parkedThenPublished(ROUNDS, true, 'race-event');
    const ctx = createEngineContext(t.db);
    for (const id of ids) await t.query(`UPDATE "StepExecution" SET "dueAt" = now() - interval '1 second' WHERE "executionId" = $1 AND status = 'WAITING'`, [id]);
    await processDueWaits(ctx, 1000);
    await runStepsOnly(t.db);
    for (let round = 0; round < ROUNDS; round++) {
      const id = ids[round]!;
      const contactId = (await t.query(`SELECT "contactId" FROM "WorkflowExecution" WHERE id = $1`, [id]))[0].contactId;
      const preview = await previewRepair(t.db, { projectId, action: 'MIGRATE', executionId: id }, OPTS);
      expect(preview.plan.allowed, preview.plan.refusal ?? '').toBe(true);
      const results = await r.race(async (db, i) => {
        if (i === 0) return trackEvent(createEngineContext(db), { projectId, name: 'ping', contactId });
        return applyRepair(db, { projectId, action: 'MIGRATE', executionId: id, actor: ACTOR, reason: `round ${round}`, expectedVersion: preview.expectedVersion }, OPTS);
      });
      for (const x of results) if (x.status === 'rejected') throw x.reason;
      await runStepsOnly(t.db);
      const after = await where(id);
      expect(after, `round ${round}`).toMatchObject({ status: 'COMPLETED', subjects: ['v1 hello', `v${after.version} yay`] });
      const [resolved] = await t.query(`SELECT count(*)::int AS n FROM "StepExecution" WHERE "executionId" = $1 AND "resolvedBy" = 'EVENT'`, [id]);
      expect(resolved.n).toBe(1);
    }
    await expectNoViolations(t.db, 'event race');
  });

  it('an event accepted on the old version and not yet dispatched resumes the moved wait, once (the move looks back as a parking wait does)', async () => {
    const { ids: [id, id2] } = await parkedThenPublished(2, true, 'lookback');
    const ctx = createEngineContext(t.db);
    for (const x of [id, id2]) await t.query(`UPDATE "StepExecution" SET "dueAt" = now() - interval '1 second' WHERE "executionId" = $1 AND status = 'WAITING'`, [x]);
    await processDueWaits(ctx, 10);
    await runStepsOnly(t.db);
    for (const x of [id!, id2!]) {
      const contactId = (await t.query(`SELECT "contactId" FROM "WorkflowExecution" WHERE id = $1`, [x]))[0].contactId;
      // Accepted inside v1's wait window, its dispatch not run yet.
      const stored = await trackEvent(ctx, { projectId, name: 'ping', contactId }, { dispatch: false });
      if (!stored.ok) throw new Error('track');
      const moved = await migrate(t.db, x);
      expect(moved.result).toMatchObject({ ok: true });
      if (x === id) {
        // The move looked back and took it (a parking wait's rule); its late dispatch resumes nothing more.
        const [row] = await t.query(`SELECT "resumeEventId" FROM "StepExecution" WHERE "resumeEventId" = $1`, [stored.eventId]);
        expect(row).toBeTruthy();
        await dispatchEvent(ctx, stored.eventId);
      } else {
        // The timer, had the move not taken it, finds it resolved and does nothing.
        await processDueWaits(ctx, 10);
      }
      await runStepsOnly(t.db);
      expect(await where(x), x === id ? 'late dispatch' : 'timer look-back').toMatchObject({ status: 'COMPLETED', version: 2, subjects: ['v1 hello', 'v2 yay'] });
    }
    await expectNoViolations(t.db, 'look-back');
  });
});
