import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enroll } from '../../server/engine/enrollment';
import { claimStep, renewLease, type StepClaim } from '../../server/engine/claims';
import { applyRepair } from '../../server/repair/actions';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createContact, createProject, delayWorkflow, workflowFrom } from '../support/fixtures';

// A lease renewal must never revive a lease that already ran out. A
// worker that stalled past its lease has lost its step: an operator's RETRY_STEP (or
// another worker) may take it, and a late renewal must not quietly put it back.

let t: TestDatabase;
let projectId: string;
let workflowId: string;

beforeAll(async () => {
  t = await freshDatabase();
  projectId = (await createProject(t.db)).id;
  workflowId = (await workflowFrom(t.db, projectId, delayWorkflow(3600, { allowReentry: true }))).id;
});
afterAll(async () => t?.drop());

/** Enroll a contact and claim its first step with a lease of `leaseSeconds`. */
async function claimed(email: string, leaseSeconds: number): Promise<StepClaim> {
  const contact = await createContact(t.db, projectId, email);
  const enrolled = await enroll(t.db, { projectId, workflowId, contactId: contact.id });
  if (!enrolled.ok) throw new Error('enrollment failed');
  const c = await claimStep(t.db, { executionId: enrolled.executionId, expectedVersion: 1, leaseSeconds });
  if (!c.won || !('claim' in c)) throw new Error('claim failed');
  return c.claim;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function stepRow(claim: StepClaim) {
  const [row] = await t.query(`SELECT status, "claimToken", "leaseExpiresAt" FROM "StepExecution" WHERE id = $1`, [claim.stepExecutionId]);
  return row as { status: string; claimToken: string | null; leaseExpiresAt: Date | null };
}

describe('renewLease', () => {
  it('extends a live lease held with the same claim token', async () => {
    const claim = await claimed('live@example.com', 5);
    const before = await stepRow(claim);
    expect(await renewLease(t.db, claim, 60)).toBe(true);
    const after = await stepRow(claim);
    expect(after.leaseExpiresAt!.getTime()).toBeGreaterThan(before.leaseExpiresAt!.getTime() + 30_000);
    // Another claim token (a stale holder) renews nothing.
    expect(await renewLease(t.db, { ...claim, claimToken: crypto.randomUUID() }, 600)).toBe(false);
  });

  it('does not revive a lease that already ran out', async () => {
    const claim = await claimed('expired@example.com', 0);
    await sleep(20);
    const before = await stepRow(claim);
    expect(await renewLease(t.db, claim, 60)).toBe(false);
    const after = await stepRow(claim);
    expect(after.leaseExpiresAt).toEqual(before.leaseExpiresAt);
    const [exec] = await t.query(`SELECT "readyAt" < now() AS due FROM "WorkflowExecution" WHERE id = $1`, [claim.executionId]);
    expect(exec.due).toBe(true);
  });

  it('a stalled worker renewing while RETRY_STEP applies: the retry never reports APPLIED over a step left RUNNING', async () => {
    const claim = await claimed('stalled@example.com', 0);
    await sleep(20);
    // The stalled worker wakes up and renews, in a transaction still open when the
    // operator's retry arrives (its renewal committing in the middle of the retry).
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let renewed: boolean | null = null;
    let renewing!: () => void;
    const renewStarted = new Promise<void>((r) => (renewing = r));
    const worker = t.db.$transaction(async (tx) => {
      renewed = await renewLease(tx, claim, 60);
      renewing();
      await gate;
    });
    await renewStarted;
    const retry = applyRepair(
      t.db,
      { projectId, action: 'RETRY_STEP', executionId: claim.executionId, actor: 'user:op', expectedVersion: claim.version, reason: 'worker died' },
      { graceSeconds: 0 },
    );
    await sleep(300);
    release();
    await worker;
    const result = await retry;

    const row = await stepRow(claim);
    if (result.ok) {
      // The retry won: the step is free for a new attempt, not still held by the old token.
      expect(row.status, `renewed=${renewed}, retry applied`).toBe('PENDING');
      expect(row.claimToken).toBeNull();
    } else {
      // The renewal won: the worker still holds its step, and the retry says so.
      expect(row.status).toBe('RUNNING');
      expect(row.claimToken).toBe(claim.claimToken);
    }
    // A lease that had run out is the operator's to take.
    expect(renewed).toBe(false);
    expect(result.ok).toBe(true);
    const [audit] = await t.query(
      `SELECT outcome FROM "AuditEntry" WHERE "targetId" = $1 AND action = 'repair.RETRY_STEP'`,
      [claim.executionId],
    );
    expect(audit.outcome).toBe('APPLIED');
  });

  it('a renewal that began while the lease was live and commits after RETRY_STEP began: one of them wins, consistently', async () => {
    const claim = await claimed('late-commit@example.com', 1);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let renewed: boolean | null = null;
    let renewing!: () => void;
    const renewStarted = new Promise<void>((r) => (renewing = r));
    const worker = t.db.$transaction(
      async (tx) => {
        renewed = await renewLease(tx, claim, 60);
        renewing();
        await gate;
      },
      { timeout: 20_000 },
    );
    await renewStarted;
    expect(renewed).toBe(true);
    // The lease, as committed, runs out while the renewal is still in flight; the
    // operator sees an expired lease and retries.
    await sleep(1_500);
    const retry = applyRepair(
      t.db,
      { projectId, action: 'RETRY_STEP', executionId: claim.executionId, actor: 'user:op', expectedVersion: claim.version, reason: 'looks dead' },
      { graceSeconds: 0 },
    );
    await sleep(300);
    release();
    await worker;
    const result = await retry;
    const row = await stepRow(claim);
    if (result.ok) {
      expect(row.status).toBe('PENDING');
      expect(row.claimToken).toBeNull();
    } else {
      expect(row).toMatchObject({ status: 'RUNNING', claimToken: claim.claimToken });
    }
  });
});
