import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../server/db';
import { createEngineContext } from '../../server/engine/context';
import { enroll } from '../../server/engine/enrollment';
import { storeEvent } from '../../server/engine/events';
import { checkInvariants } from '../../server/engine/invariants';
import { notifyWorkers } from '../../server/engine/wakeup';
import { runWorkerOnce } from '../../server/engine/worker';
import { claimStep, advanceExecution } from '../../server/engine/claims';
import { resolveWait, runClaimedStep } from '../../server/engine/runner';
import { applyRepair, previewRepair } from '../../server/repair/actions';
import type { ApplyResult } from '../../server/repair/apply';
import { applyMany } from '../../server/repair/bulk';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createProject, waitWorkflow, workflowFrom, stepId } from '../support/fixtures';
import { driveFromStart, runStepsOnly } from '../support/drive';
import { startWorkerProcess, waitFor, type WorkerProcess } from '../support/processes';
import { expectNoViolations, fulfilled, racers, ROUNDS, type Racers } from '../support/race';

// Operators racing the engine and each other: real concurrency on separate
// PostgreSQL sessions, ROUNDS rounds each, the invariants checked after every round.

let t: TestDatabase;
let r: Racers;
let projectId: string;
const GRACE = { graceSeconds: 0 };

beforeAll(async () => {
  t = await freshDatabase();
  r = await racers(t.url, 2);
  projectId = (await createProject(t.db)).id;
});
afterAll(async () => {
  await r?.close();
  await t?.drop();
});


/** Enroll and run an execution up to its wait (no timers run). */
async function waitingExecution(workflowId: string, email: string): Promise<{ id: string; waitRowId: string; version: number }> {
  const enrolled = await enroll(t.db, { projectId, workflowId, email });
  const id = (enrolled as { executionId: string }).executionId;
  await driveFromStart(t.db, id);
  const row = await t.db.stepExecution.findFirstOrThrow({ where: { executionId: id, status: 'WAITING' } });
  const exec = await t.db.workflowExecution.findUniqueOrThrow({ where: { id } });
  return { id, waitRowId: row.id, version: exec.version };
}

describe('repair races', () => {
  // Guard: every repair carries the version the operator saw (claimWait/cancel CAS).
  // Without the expectedVersion predicate in claimWait, the DELIVER_EVENT operator also
  // "won" after the CANCEL and both were told APPLIED.
  it('two operators applying conflicting repairs to one execution: one wins, the other gets CONFLICT naming the winner', async () => {
    const wf = await workflowFrom(t.db, projectId, waitWorkflow({ allowReentry: true }));
    for (let round = 0; round < ROUNDS; round++) {
      const x = await waitingExecution(wf.id, `ops-${round}@example.com`);
      const actions = round % 2 === 0 ? (['FORCE_TIMEOUT', 'DELIVER_EVENT'] as const) : (['CANCEL', 'FORCE_TIMEOUT'] as const);
      const results = fulfilled(
        await r.race((db: Db, i) =>
          applyRepair(
            db,
            { projectId, action: actions[i]!, executionId: x.id, actor: `user:operator-${i}`, reason: `round ${round}`, expectedVersion: x.version },
            GRACE,
          ),
        ),
      ) as ApplyResult[];
      const winners = results.filter((res) => res.ok);
      expect(winners, `round ${round}: ${JSON.stringify(results)}`).toHaveLength(1);
      const w = results.indexOf(winners[0]!);
      const loser = results[1 - w]!;
      expect(loser).toMatchObject({ ok: false, code: 'CONFLICT', conflict: { winner: { kind: 'operator', actor: `user:operator-${w}` } } });
      // Both attempts are audited: one APPLIED, one LOST.
      const audit = await t.db.auditEntry.findMany({ where: { targetId: x.id } });
      expect(audit.map((a) => a.outcome).sort()).toEqual(['APPLIED', 'LOST']);
      await runWorkerOnce(createEngineContext(t.db));
      await expectNoViolations(t.db, `round ${round}`);
    }
  });

  // Guard: FORCE_TIMEOUT and event delivery call the same claimWait (I4). Removing the
  // `"resolvedBy" IS NULL` predicate let both take their branch (I4 count > 0).
  it('an operator’s FORCE_TIMEOUT against an arriving event: one branch', async () => {
    const wf = await workflowFrom(t.db, projectId, waitWorkflow({ allowReentry: true }));
    const [thanks, reminder] = [await stepId(t.db, wf.id, 'thanks'), await stepId(t.db, wf.id, 'reminder')];
    for (let round = 0; round < ROUNDS; round++) {
      const x = await waitingExecution(wf.id, `ev-${round}@example.com`);
      const contactId = (await t.db.workflowExecution.findUniqueOrThrow({ where: { id: x.id } })).contactId;
      const ev = await storeEvent(t.db, { projectId, name: 'purchase', contactId }, 3600);
      const eventId = (ev as { eventId: string }).eventId;
      const [operator, event] = fulfilled(
        await r.race((db: Db, i): Promise<unknown> =>
          i === 0
            ? applyRepair(db, { projectId, action: 'FORCE_TIMEOUT', executionId: x.id, actor: 'user:op', reason: 'r', expectedVersion: x.version }, GRACE)
            : resolveWait(createEngineContext(db), { stepExecutionId: x.waitRowId, resolvedBy: 'EVENT', branch: 'EVENT', eventId }),
        ),
      ) as unknown as [ApplyResult, Awaited<ReturnType<typeof resolveWait>>];
      expect(operator.ok !== event.resumed, `round ${round}: exactly one wins`).toBe(true);
      if (!operator.ok) expect(operator).toMatchObject({ code: 'CONFLICT', conflict: { reason: 'WAIT_RESOLVED', resolvedBy: 'EVENT', winner: { kind: 'event' } } });
      else expect(event).toMatchObject({ resumed: false, reason: 'WAIT_RESOLVED', resolvedBy: 'OPERATOR' });
      await runWorkerOnce(createEngineContext(t.db));
      const taken = (await t.db.stepExecution.findMany({ where: { executionId: x.id } })).map((s) => s.stepId);
      expect(taken.includes(thanks) !== taken.includes(reminder)).toBe(true);
      await expectNoViolations(t.db, `round ${round}`);
    }
  });

  // Guards: retryStep refuses a step whose lease has not run out, and a worker's
  // completion is fenced by the version the retry bumps. Removing the lease condition
  // from retryStep let an operator retry a step its worker was finishing: two claims,
  // and without I5 two messages.
  it('an operator’s RETRY_STEP against a worker whose lease is about to expire: one message at most', async () => {
    const wf = await workflowFrom(t.db, projectId, {
      name: 'retry-race',
      trigger: 'MANUAL',
      allowReentry: true,
      steps: [
        { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
        { key: 'mail', type: 'SEND_EMAIL', name: 'Mail', config: { subject: 'Once', body: 'b' } },
      ],
      transitions: [{ from: 'start', to: 'mail', branch: null }],
    });
    const mail = await stepId(t.db, wf.id, 'mail');
    for (let round = 0; round < ROUNDS; round++) {
      const enrolled = await enroll(t.db, { projectId, workflowId: wf.id, email: `retry-${round}@example.com` });
      const id = (enrolled as { executionId: string }).executionId;
      const ctx = createEngineContext(t.db);
      const first = await claimStep(t.db, { executionId: id, expectedVersion: 1, leaseSeconds: 30 });
      if (!first.won) throw new Error('claim');
      const run = await runClaimedStep(ctx, first.claim);
      // The worker holds SEND_EMAIL with a lease that runs out right about now.
      const held = await claimStep(t.db, { executionId: id, expectedVersion: run.continueAt!, leaseSeconds: 0.05 });
      if (!held.won) throw new Error('claim');
      const claim = held.claim;
      await new Promise((res) => setTimeout(res, 30 + (round % 5) * 10));
      const preview = await previewRepair(t.db, { projectId, action: 'RETRY_STEP', executionId: id }, GRACE);
      await r.race(async (db: Db, i) => {
        if (i === 0) {
          return advanceExecution(db, claim, {
            nextStepId: mail,
            status: 'COMPLETED',
            output: {},
            message: { to: 'x@example.com', subject: 'Once', body: 'b' },
          });
        }
        return applyRepair(db, { projectId, action: 'RETRY_STEP', executionId: id, actor: 'user:op', reason: 'r', expectedVersion: preview.expectedVersion }, GRACE);
      });
      await runWorkerOnce(createEngineContext(t.db));
      expect(await t.db.message.count({ where: { executionId: id } }), `round ${round}`).toBeLessThanOrEqual(1);
      const exec = await t.db.workflowExecution.findUniqueOrThrow({ where: { id } });
      expect(exec.status).toBe('COMPLETED');
      expect(await t.db.message.count({ where: { executionId: id } })).toBe(1);
      await expectNoViolations(t.db, `round ${round}`);
    }
  });
});

describe('bulk repair', () => {
  it('FORCE_TIMEOUT over 500 overdue executions while workers run: each applied or skipped, zero violations', async () => {
    const bulk = await freshDatabase();
    const workers: WorkerProcess[] = [];
    try {
      const project = await createProject(bulk.db);
      const wf = await workflowFrom(bulk.db, project.id, waitWorkflow({ allowReentry: true }, 1));
      const ids: string[] = [];
      for (let i = 0; i < 500; i++) {
        const e = await enroll(bulk.db, { projectId: project.id, workflowId: wf.id, email: `bulk-${i}@example.com` });
        ids.push((e as { executionId: string }).executionId);
      }
      // Run them up to their waits with no timer running, and let the timeouts pass.
      await runStepsOnly(bulk.db);
      await new Promise((res) => setTimeout(res, 1100));
      const dry = await applyMany(
        bulk.db,
        { projectId: project.id, actor: 'user:op', action: 'FORCE_TIMEOUT', reason: 'timer outage', filter: { reason: 'WAIT_OVERDUE' }, dryRun: true },
        GRACE,
      );
      expect(dry).toMatchObject({ matched: 500, dryRun: true, items: [] });

      const progress: number[] = [];
      const result = await applyMany(
        bulk.db,
        {
          projectId: project.id,
          actor: 'user:op',
          action: 'FORCE_TIMEOUT',
          reason: 'timer outage',
          filter: { reason: 'WAIT_OVERDUE' },
          dryRun: false,
          ratePerSecond: 500,
          // The workers come back as the bulk repair starts: they race it for the same waits.
          onSelected: async () => {
            for (let i = 0; i < 2; i++) workers.push(await startWorkerProcess(bulk.url, { concurrency: 8 }));
          },
          onProgress: (done) => progress.push(done),
        },
        GRACE,
      );
      expect(result.items).toHaveLength(result.matched);
      expect(result.matched).toBe(500);
      const applied = result.items.filter((i) => i.outcome === 'APPLIED').length;
      const skipped = result.items.filter((i) => i.outcome !== 'APPLIED');
      expect(applied + skipped.length).toBe(500);
      // A row the workers' timer resolved first moved on from what was selected: it is
      // reported as changed and left alone, never repaired in its new state.
      for (const s of skipped) expect(s, JSON.stringify(s)).toMatchObject({ outcome: 'SKIPPED_CHANGED', detail: expect.stringMatching(/changed since selection/) });
      expect(progress.at(-1)).toBe(500);
      await notifyWorkers(bulk.db);
      await waitFor('all to finish', async () => (await bulk.db.workflowExecution.count({ where: { status: { in: ['RUNNING', 'WAITING'] } } })) === 0);
      const bad = (await checkInvariants(bulk.db)).filter((x) => x.violations > 0);
      expect(bad).toEqual([]);
      const byOperator = await bulk.db.stepExecution.count({ where: { resolvedBy: 'OPERATOR' } });
      expect(byOperator).toBe(applied);
      expect(await bulk.db.auditEntry.count({ where: { outcome: 'APPLIED' } })).toBe(applied);
    } finally {
      for (const w of workers) w.kill('SIGTERM');
      await Promise.all(workers.map((w) => w.exited));
      await bulk.drop();
    }
  }, 300_000);
});

describe('bulk repair, interrupted', () => {
  it('stopping a bulk FORCE_TIMEOUT half-way leaves every execution repaired or untouched', async () => {
    const db2 = await freshDatabase();
    try {
      const project = await createProject(db2.db);
      const wf = await workflowFrom(db2.db, project.id, waitWorkflow({ allowReentry: true }, 1));
      const ids: string[] = [];
      for (let i = 0; i < 40; i++) {
        const e = await enroll(db2.db, { projectId: project.id, workflowId: wf.id, email: `stop-${i}@example.com` });
        ids.push((e as { executionId: string }).executionId);
      }
      await runStepsOnly(db2.db);
      await new Promise((res) => setTimeout(res, 1100));
      const stop = new AbortController();
      const result = await applyMany(
        db2.db,
        {
          projectId: project.id,
          actor: 'user:op',
          action: 'FORCE_TIMEOUT',
          reason: 'incident',
          filter: { reason: 'WAIT_OVERDUE' },
          dryRun: false,
          ratePerSecond: 200,
          signal: stop.signal,
          onProgress: (done) => {
            if (done === 15) stop.abort();
          },
        },
        GRACE,
      );
      expect(result).toMatchObject({ matched: 40, interrupted: true });
      expect(result.items).toHaveLength(15);
      // Exactly the reported ones were repaired; the rest are waiting as they were.
      expect(await db2.db.stepExecution.count({ where: { resolvedBy: 'OPERATOR' } })).toBe(15);
      expect(await db2.db.workflowExecution.count({ where: { status: 'WAITING' } })).toBe(25);
      const bad = (await checkInvariants(db2.db)).filter((x) => x.violations > 0);
      expect(bad).toEqual([]);
    } finally {
      await db2.drop();
    }
  }, 120_000);
});

