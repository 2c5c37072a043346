import { TRPCError } from '@trpc/server';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import superjson from 'superjson';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../server/db';
import { writeAudit } from '../../server/engine/audit';
import { enroll } from '../../server/engine/enrollment';
import { checkInvariants } from '../../server/engine/invariants';
import { claimStep, failStep, retryStep, skipStep } from '../../server/engine/claims';
import { applyRepair, previewRepair } from '../../server/repair/actions';
import type { ApplyResult } from '../../server/repair/apply';
import { applyMany } from '../../server/repair/bulk';
import type { RepairAction } from '../../server/repair/planner';
import { appRouter } from '../../server/trpc/root';
import type { Actor } from '../../server/auth/actor';
import { ConflictError } from '../../server/trpc/trpc';
import { actorFor, callerFor, contextFor } from '../support/callers';
import { freshDatabase, type TestDatabase } from '../support/database';
import { driveFromStart } from '../support/drive';
import { createProject, delayWorkflow, stepId, workflowFrom } from '../support/fixtures';
import { fulfilled, racers, ROUNDS, type Racers } from '../support/race';

// A repair that would make a second active execution of a (workflow,
// contact) (I1) loses cleanly with ACTIVE_EXECUTION — in the preview, in repair.apply
// (PRECONDITION_FAILED, audited), in bulk (the row is reported, the run goes on), and in
// the claims themselves, even when the competing enrollment is in flight (no exception
// escapes from the unique index).

let t: TestDatabase;
let r: Racers;
let projectId: string;
let operator: Actor;
const GRACE = { graceSeconds: 0 };

beforeAll(async () => {
  t = await freshDatabase();
  r = await racers(t.url, 2);
  projectId = (await createProject(t.db)).id;
  operator = actorFor(projectId, 'OPERATOR');
});
afterAll(async () => {
  await r?.close();
  await t?.drop();
});

/** trigger -> delay (an hour) -> mail; re-entry allowed. */
async function reentryWorkflow(name: string) {
  return workflowFrom(t.db, projectId, delayWorkflow(3600, { name, allowReentry: true }));
}

/** An execution that FAILED at its first step (TRIGGER), as a worker records a last failed attempt. */
async function failedExecution(db: Db, workflowId: string, email: string): Promise<{ id: string; contactId: string; version: number }> {
  const enrolled = await enroll(db, { projectId, workflowId, email });
  if (!enrolled.ok) throw new Error(`enroll: ${enrolled.reason}`);
  const claimed = await claimStep(db, { executionId: enrolled.executionId, expectedVersion: 1, leaseSeconds: 30 });
  if (!claimed.won) throw new Error('claim');
  const failed = await failStep(db, claimed.claim, { error: 'boom', retryInSeconds: null });
  if (!failed.won) throw new Error('fail');
  const x = await db.workflowExecution.findUniqueOrThrow({ where: { id: enrolled.executionId } });
  expect(x.status).toBe('FAILED');
  return { id: x.id, contactId: x.contactId, version: x.version };
}

/** The same contact enrolled again (allowReentry) and parked WAITING at the delay. */
async function reenrolled(db: Db, workflowId: string, contactId: string): Promise<string> {
  const again = await enroll(db, { projectId, workflowId, contactId });
  if (!again.ok) throw new Error(`re-enroll: ${again.reason}`);
  await driveFromStart(db, again.executionId);
  expect((await db.workflowExecution.findUniqueOrThrow({ where: { id: again.executionId } })).status).toBe('WAITING');
  return again.executionId;
}

async function expectHealthy() {
  const bad = (await checkInvariants(t.db)).filter((x) => x.violations > 0);
  expect(bad).toEqual([]);
}

describe('a repair that would make a second active execution', () => {
  it.each(['RETRY_STEP', 'SKIP_STEP'] as const)('%s: the preview refuses it up front, naming the active execution', async (action) => {
    const wf = await reentryWorkflow(`preview-${action}`);
    const failed = await failedExecution(t.db, wf.id, `preview-${action}@example.com`);
    const active = await reenrolled(t.db, wf.id, failed.contactId);
    const preview = await previewRepair(t.db, { projectId, action, executionId: failed.id }, GRACE);
    expect(preview.plan).toMatchObject({ allowed: false, conflict: { reason: 'ACTIVE_EXECUTION', executionId: active } });
    expect(preview.plan.refusal).toContain(active);
  });

  it.each(['RETRY_STEP', 'SKIP_STEP'] as const)('%s: apply answers ACTIVE_EXECUTION (no exception) and audits the attempt', async (action) => {
    const wf = await reentryWorkflow(`apply-${action}`);
    const failed = await failedExecution(t.db, wf.id, `apply-${action}@example.com`);
    const active = await reenrolled(t.db, wf.id, failed.contactId);
    const result = await applyRepair(
      t.db,
      { projectId, action, executionId: failed.id, actor: operator.id, reason: 'customer asked', expectedVersion: failed.version },
      GRACE,
    );
    expect(result).toMatchObject({ ok: false, code: 'ACTIVE_EXECUTION', conflict: { reason: 'ACTIVE_EXECUTION', executionId: active } });
    const entries = await t.db.auditEntry.findMany({ where: { targetId: failed.id, action: `repair.${action}` } });
    expect(entries.map((e) => e.outcome)).toEqual(['REJECTED']);
    expect(entries[0]!.after).toMatchObject({ conflict: { reason: 'ACTIVE_EXECUTION', executionId: active } });
    expect((await t.db.workflowExecution.findUniqueOrThrow({ where: { id: failed.id } })).status).toBe('FAILED');
    await expectHealthy();
  });

  it('the claims themselves return a typed ACTIVE_EXECUTION result instead of throwing, in and out of a transaction', async () => {
    const wf = await reentryWorkflow('claims');
    const failed = await failedExecution(t.db, wf.id, 'claims@example.com');
    const active = await reenrolled(t.db, wf.id, failed.contactId);
    const [start, pause] = [await stepId(t.db, wf.id, 'start'), await stepId(t.db, wf.id, 'pause')];
    const skip = { executionId: failed.id, expectedVersion: failed.version, stepId: start, nextStepId: pause, status: 'RUNNING' as const, note: 'n' };
    const lost = { won: false, reason: 'ACTIVE_EXECUTION', executionId: active };
    expect(await retryStep(t.db, { executionId: failed.id, expectedVersion: failed.version })).toMatchObject(lost);
    expect(await skipStep(t.db, skip)).toMatchObject(lost);
    expect(await t.db.$transaction((tx) => retryStep(tx, { executionId: failed.id, expectedVersion: failed.version }))).toMatchObject(lost);
    expect(await t.db.$transaction((tx) => skipStep(tx, skip))).toMatchObject(lost);
    expect(await t.db.workflowExecution.findUniqueOrThrow({ where: { id: failed.id } })).toMatchObject({ status: 'FAILED', version: failed.version });
    // A skip that completes the execution makes no second active one: it may. (Called
    // here without the repair layer, so its audit entry is written by hand, as I8 wants.)
    expect(await skipStep(t.db, { ...skip, nextStepId: start, status: 'COMPLETED' })).toMatchObject({ won: true });
    await writeAudit(t.db, { projectId, actor: operator.id, action: 'repair.SKIP_STEP', targetType: 'execution', targetId: failed.id, before: { step: 'start' }, outcome: 'APPLIED' });
    await expectHealthy();
  });

  // Both writers in flight at once: the re-enrollment's INSERT and the repair's UPDATE
  // race for the I1 index itself (the read-side check sees neither). Exactly one becomes
  // active; the repair never throws, and is audited either way.
  it.each(['RETRY_STEP', 'SKIP_STEP'] as const)('%s racing a re-enrollment of the same contact: one active execution, no exception', async (action) => {
    const wf = await reentryWorkflow(`race-${action}`);
    let repairsWon = 0;
    let enrollsWon = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const failed = await failedExecution(t.db, wf.id, `race-${action}-${round}@example.com`);
      const [repair, enrolled] = fulfilled(
        await r.race((db: Db, i): Promise<unknown> =>
          i === 0
            ? applyRepair(db, { projectId, action, executionId: failed.id, actor: operator.id, reason: `round ${round}`, expectedVersion: failed.version }, GRACE)
            : enroll(db, { projectId, workflowId: wf.id, contactId: failed.contactId }),
        ),
      ) as [ApplyResult, Awaited<ReturnType<typeof enroll>>];
      const active = await t.db.workflowExecution.findMany({ where: { workflowId: wf.id, contactId: failed.contactId, status: { in: ['RUNNING', 'WAITING'] } } });
      expect(active, `round ${round}`).toHaveLength(1);
      if (repair.ok) {
        repairsWon++;
        expect(enrolled).toMatchObject({ ok: false, reason: 'ACTIVE_EXECUTION', executionId: failed.id });
      } else {
        enrollsWon++;
        expect(enrolled.ok, `round ${round}: ${JSON.stringify(repair)}`).toBe(true);
        const sibling = (enrolled as { executionId: string }).executionId;
        expect(repair).toMatchObject({ ok: false, code: 'ACTIVE_EXECUTION', conflict: { reason: 'ACTIVE_EXECUTION', executionId: sibling } });
      }
      const outcomes = (await t.db.auditEntry.findMany({ where: { targetId: failed.id, action: `repair.${action}` } })).map((e) => e.outcome);
      expect(outcomes, `round ${round}`).toHaveLength(1);
      expect(['APPLIED', 'LOST', 'REJECTED']).toContain(outcomes[0]);
    }
    expect(repairsWon + enrollsWon).toBe(ROUNDS);
    await expectHealthy();
  }, 120_000);

  // The widest form of the race, made deterministic: the re-enrollment's INSERT is still
  // uncommitted (its transaction lasts 150 ms) when the repair previews and claims, so
  // neither the preview nor the claim's own sibling check can see it, and the I1 index
  // decides inside the repair's UPDATE. Guard: the claim's catch of that unique violation
  // (without it every round throws PrismaClientKnownRequestError).
  it.each(['RETRY_STEP', 'SKIP_STEP'] as const)('%s while a re-enrollment of the contact is still committing: the index decides, ACTIVE_EXECUTION, no exception', async (action) => {
    const wf = await reentryWorkflow(`committing-${action}`);
    for (let round = 0; round < Math.min(ROUNDS, 10); round++) {
      const failed = await failedExecution(t.db, wf.id, `committing-${action}-${round}@example.com`);
      let sibling = '';
      const [repair] = fulfilled(
        await r.race(async (db: Db, i): Promise<unknown> => {
          if (i === 0) {
            await new Promise((res) => setTimeout(res, 50));
            return applyRepair(db, { projectId, action, executionId: failed.id, actor: operator.id, reason: `round ${round}`, expectedVersion: failed.version }, GRACE);
          }
          return db.$transaction(async (tx) => {
            const enrolled = await enroll(tx, { projectId, workflowId: wf.id, contactId: failed.contactId });
            if (!enrolled.ok) throw new Error(`round ${round}: the re-enrollment was refused (${enrolled.reason})`);
            sibling = enrolled.executionId;
            await tx.$executeRaw`SELECT pg_sleep(0.15)`;
          });
        }),
      ) as [ApplyResult, unknown];
      expect(repair, `round ${round}`).toMatchObject({ ok: false, code: 'ACTIVE_EXECUTION', conflict: { reason: 'ACTIVE_EXECUTION', executionId: sibling } });
      expect(await t.db.workflowExecution.findUniqueOrThrow({ where: { id: failed.id } })).toMatchObject({ status: 'FAILED', version: failed.version });
      const outcomes = (await t.db.auditEntry.findMany({ where: { targetId: failed.id, action: `repair.${action}` } })).map((e) => e.outcome);
      expect(outcomes, `round ${round}`).toEqual(['LOST']);
    }
    await expectHealthy();
  }, 120_000);

  // Two FAILED executions of one contact, each retried by its own operator at once: both
  // claims are in flight and neither sees the other, so the I1 index decides. One wins;
  // the other is told ACTIVE_EXECUTION naming the winner, audited, with no exception.
  it('two operators retrying two FAILED executions of one contact at once: one active execution, no exception', async () => {
    const wf = await reentryWorkflow('race-two-retries');
    for (let round = 0; round < ROUNDS; round++) {
      const a = await failedExecution(t.db, wf.id, `two-retries-${round}@example.com`);
      const b = await failedExecution(t.db, wf.id, `two-retries-${round}@example.com`);
      const results = fulfilled(
        await r.race((db: Db, i) => {
          const x = i === 0 ? a : b;
          return applyRepair(db, { projectId, action: 'RETRY_STEP', executionId: x.id, actor: `user:op-${i}`, reason: `round ${round}`, expectedVersion: x.version }, GRACE);
        }),
      );
      const winners = results.filter((res) => res.ok);
      expect(winners, `round ${round}: ${JSON.stringify(results)}`).toHaveLength(1);
      const w = results.indexOf(winners[0]!);
      expect(results[1 - w]).toMatchObject({ ok: false, code: 'ACTIVE_EXECUTION', conflict: { reason: 'ACTIVE_EXECUTION', executionId: [a, b][w]!.id } });
      const loser = [a, b][1 - w]!;
      expect(await t.db.workflowExecution.findUniqueOrThrow({ where: { id: loser.id } })).toMatchObject({ status: 'FAILED', version: loser.version });
      expect(await t.db.auditEntry.count({ where: { targetId: loser.id, action: 'repair.RETRY_STEP', outcome: { in: ['LOST', 'REJECTED'] } } })).toBe(1);
    }
    await expectHealthy();
  }, 120_000);

  it('bulk RETRY_STEP over FAILED executions reports the one with an active sibling and goes on', async () => {
    const wf = await reentryWorkflow('bulk');
    const blocked = await failedExecution(t.db, wf.id, 'bulk-blocked@example.com');
    const free = await failedExecution(t.db, wf.id, 'bulk-free@example.com');
    const active = await reenrolled(t.db, wf.id, blocked.contactId);
    const result = await applyMany(
      t.db,
      { projectId, actor: operator.id, action: 'RETRY_STEP', reason: 'incident', filter: { status: 'FAILED', workflowId: wf.id }, dryRun: false, ratePerSecond: 1000 },
      GRACE,
    );
    expect(result.matched).toBe(2);
    const byId = new Map(result.items.map((i) => [i.executionId, i]));
    expect(byId.get(free.id)).toMatchObject({ outcome: 'APPLIED' });
    expect(byId.get(blocked.id)).toMatchObject({ outcome: 'SKIPPED', conflict: { reason: 'ACTIVE_EXECUTION', executionId: active } });
    expect(byId.get(blocked.id)!.detail).toContain(active);
    expect((await t.db.auditEntry.findMany({ where: { targetId: blocked.id } })).map((e) => e.outcome)).toEqual(['REJECTED']);
    await expectHealthy();
  });
});

describe('over tRPC and HTTP', () => {
  /** A mutation (POST) or, with method GET, a query, as a browser sends them. */
  async function post(actor: Actor, path: string, input: unknown, method: 'GET' | 'POST' = 'POST') {
    const encoded = JSON.stringify(superjson.serialize(input));
    const response = await fetchRequestHandler({
      endpoint: '/api/trpc',
      router: appRouter,
      createContext: () => contextFor(t.db, actor),
      req:
        method === 'GET'
          ? new Request(`http://localhost/api/trpc/${path}?input=${encodeURIComponent(encoded)}`)
          : new Request(`http://localhost/api/trpc/${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: encoded }),
    });
    const body = (await response.json()) as { result?: { data: unknown }; error?: unknown };
    return {
      status: response.status,
      result: body.result ? (superjson.deserialize(body.result.data as never) as Record<string, unknown>) : null,
      error: body.error ? (superjson.deserialize(body.error as never) as { message: string; data: Record<string, unknown> }) : null,
    };
  }

  it.each(['RETRY_STEP', 'SKIP_STEP'] as const)('repair.applyOne %s: 412 with data.conflict = ACTIVE_EXECUTION, audited; never a 500', async (action: RepairAction) => {
    const wf = await reentryWorkflow(`http-${action}`);
    const failed = await failedExecution(t.db, wf.id, `http-${action}@example.com`);
    const active = await reenrolled(t.db, wf.id, failed.contactId);

    const preview = await post(operator, 'repair.preview', { executionId: failed.id, action }, 'GET');
    expect(preview.status).toBe(200);
    expect(preview.result).toMatchObject({ plan: { allowed: false, conflict: { reason: 'ACTIVE_EXECUTION', executionId: active } } });

    const applied = await post(operator, 'repair.applyOne', { executionId: failed.id, action, expectedVersion: failed.version, reason: 'try again' });
    expect(applied.status).toBe(412);
    expect(applied.error!.data.conflict).toEqual({ reason: 'ACTIVE_EXECUTION', executionId: active });
    expect(await t.db.auditEntry.count({ where: { targetId: failed.id, action: `repair.${action}`, outcome: 'REJECTED', actor: operator.id } })).toBe(1);

    // In-process caller: the same typed error.
    const error = await callerFor(t.db, operator)
      .repair.applyOne({ executionId: failed.id, action, expectedVersion: failed.version, reason: 'try again' })
      .then(() => null, (e: unknown) => e);
    expect(error).toBeInstanceOf(TRPCError);
    expect((error as TRPCError).code).toBe('PRECONDITION_FAILED');
    expect(((error as TRPCError).cause as ConflictError).conflict).toEqual({ reason: 'ACTIVE_EXECUTION', executionId: active });
  });

  it('repair.applyMany over the same filter answers 200, reports the row and repairs the others', async () => {
    const wf = await reentryWorkflow('http-bulk');
    const blocked = await failedExecution(t.db, wf.id, 'http-bulk-blocked@example.com');
    const free = await failedExecution(t.db, wf.id, 'http-bulk-free@example.com');
    const active = await reenrolled(t.db, wf.id, blocked.contactId);
    const run = await post(operator, 'repair.applyMany', { filter: { status: 'FAILED', workflowId: wf.id }, action: 'RETRY_STEP', reason: 'incident' });
    expect(run.status).toBe(200);
    const items = (run.result as { items: { executionId: string; outcome: string; conflict?: unknown }[] }).items;
    expect(items.find((i) => i.executionId === free.id)).toMatchObject({ outcome: 'APPLIED' });
    expect(items.find((i) => i.executionId === blocked.id)).toMatchObject({ outcome: 'SKIPPED', conflict: { reason: 'ACTIVE_EXECUTION', executionId: active } });
    expect(await t.db.auditEntry.count({ where: { targetId: blocked.id, action: 'repair.RETRY_STEP', outcome: 'REJECTED' } })).toBe(1);
    await expectHealthy();
  });
});
