import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { advanceExecutions, claimStep, type Completion, type StepClaim } from '../../server/engine/claims';
import { enrollBatch } from '../../server/engine/enrollment';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createContact, createProject, delayWorkflow, stepId, workflowFrom } from '../support/fixtures';
import { expectNoViolations, fulfilled, racers, ROUNDS, type Racers } from '../support/race';

// A worker records the completions of a turn in one statement (advanceExecutions). Each
// row of that batch must be fenced on its own: a stale worker's batch and a fresh
// worker's batch over the same executions, racing, must advance each execution once,
// and a batch that mixes stale and fresh claims must apply exactly the fresh ones.
//
// Guard: the per-row fence of advanceExecutions (executionStillClaimed over the batch's
// columns). Removed (npm run test:mutations), the stale batch also applied after the
// fresh one: executions "won" by both workers, and the contact patched by the loser.

let t: TestDatabase;
let r2: Racers;
let projectId: string;

beforeAll(async () => {
  t = await freshDatabase();
  r2 = await racers(t.url, 2);
  projectId = (await createProject(t.db)).id;
});
afterAll(async () => {
  await r2?.close();
  await t?.drop();
});

const BATCH = 6;

/** Enroll `n` new contacts and claim each execution's TRIGGER step with a lease that has already run out. */
async function staleClaims(workflowId: string, label: string, n: number): Promise<StepClaim[]> {
  const contacts = await Promise.all(Array.from({ length: n }, (_, i) => createContact(t.db, projectId, `${label}-${i}@example.com`)));
  const enrolled = await enrollBatch(t.db, projectId, workflowId, contacts.map((c) => ({ contactId: c.id })));
  const claims: StepClaim[] = [];
  for (const row of enrolled) {
    if (!row.ok) throw new Error(`enrollment refused: ${row.reason}`);
    const claimed = await claimStep(t.db, { executionId: row.executionId, expectedVersion: 1, leaseSeconds: 0, owner: 'worker-a' });
    if (!claimed.won || !('claim' in claimed)) throw new Error('worker A could not claim a fresh execution');
    claims.push(claimed.claim);
  }
  return claims;
}

function completions(claims: StepClaim[], nextStepId: string, by: string): Completion[] {
  return claims.map((claim) => ({
    claim,
    advance: {
      nextStepId,
      status: 'RUNNING',
      output: { by },
      contactPatch: { by },
      message: { to: claim.contactEmail, subject: `from ${by}`, body: by },
    },
  }));
}

describe('batched completions', () => {
  it('a stale worker batch racing a fresh one: each execution advanced once, its contact patched and mailed by the winner only', async () => {
    const wf = await workflowFrom(t.db, projectId, delayWorkflow(3600, { allowReentry: true }));
    const pause = await stepId(t.db, wf.id, 'pause');
    for (let round = 0; round < ROUNDS; round++) {
      const a = await staleClaims(wf.id, `batch-race-${round}`, BATCH);
      const [fromA, fromB] = fulfilled(
        await r2.race(async (db, i) => {
          // Worker A completes all it holds, in one batch, though its leases ran out ...
          if (i === 0) return advanceExecutions(db, completions(a, pause, 'A'));
          // ... while worker B re-claims each (a lease that ran out belongs to whoever takes it) and completes those it got.
          const mine: StepClaim[] = [];
          for (const claim of a) {
            const b = await claimStep(db, { executionId: claim.executionId, expectedVersion: claim.version, leaseSeconds: 30, owner: 'worker-b' });
            if (b.won && 'claim' in b) mine.push(b.claim);
          }
          const results = await advanceExecutions(db, completions(mine, pause, 'B'));
          return a.map((claim) => {
            const k = mine.findIndex((m) => m.executionId === claim.executionId);
            return k === -1 ? null : results[k]!;
          });
        }),
      );
      for (let k = 0; k < a.length; k++) {
        const wonA = fromA![k]!.won;
        const wonB = fromB![k]?.won ?? false;
        expect([wonA, wonB].filter(Boolean), `round ${round}, execution ${k}: exactly one worker advanced it`).toHaveLength(1);
        const winner = wonA ? 'A' : 'B';
        const [row] = await t.query(
          `SELECT e.version, e."currentStepId", s.output, s.status, c.data,
                  (SELECT count(*)::int FROM "Message" m WHERE m."executionId" = e.id) AS messages,
                  (SELECT m.body FROM "Message" m WHERE m."executionId" = e.id LIMIT 1) AS body
             FROM "WorkflowExecution" e
             JOIN "StepExecution" s ON s."executionId" = e.id AND s."stepId" = $2
             JOIN "Contact" c ON c.id = e."contactId"
            WHERE e.id = $1`,
          [a[k]!.executionId, a[k]!.stepId],
        );
        expect(row.currentStepId).toBe(pause);
        expect(row.status).toBe('COMPLETED');
        expect(row.output.by, `round ${round}: the step's output is the winner's`).toBe(winner);
        expect(row.data.by, `round ${round}: the contact is patched by the winner only`).toBe(winner);
        expect(row.messages).toBe(1);
        expect(row.body).toBe(winner);
      }
      await expectNoViolations(t.db, `round ${round}`);
    }
  });

  it('a batch mixing stale and fresh claims applies the fresh rows and reports each stale row lost with the current state', async () => {
    const wf = await workflowFrom(t.db, projectId, delayWorkflow(3600, { allowReentry: true }));
    const pause = await stepId(t.db, wf.id, 'pause');
    const a = await staleClaims(wf.id, 'batch-mixed', BATCH);
    // Worker B takes over every other execution (A's leases ran out) and moves it on.
    const takenOver = a.filter((_, k) => k % 2 === 0);
    for (const claim of takenOver) {
      const b = await claimStep(t.db, { executionId: claim.executionId, expectedVersion: claim.version, leaseSeconds: 30, owner: 'worker-b' });
      if (!b.won || !('claim' in b)) throw new Error('worker B could not re-claim');
    }
    const before = await t.query(`SELECT id, version FROM "WorkflowExecution" WHERE "workflowId" = $1`, [wf.id]);
    const results = await advanceExecutions(t.db, completions(a, pause, 'A'));
    for (let k = 0; k < a.length; k++) {
      const stale = k % 2 === 0;
      const result = results[k]!;
      const version = before.find((r: { id: string }) => r.id === a[k]!.executionId).version;
      if (stale) {
        expect(result, `execution ${k} was taken over: A loses it`).toMatchObject({ won: false, current: { status: 'RUNNING', version } });
      } else {
        expect(result, `execution ${k} is still A's`).toMatchObject({ won: true, version: version + 1, messageQueued: true });
      }
      const [row] = await t.query(
        `SELECT e."currentStepId", c.data, (SELECT count(*)::int FROM "Message" m WHERE m."executionId" = e.id) AS messages
           FROM "WorkflowExecution" e JOIN "Contact" c ON c.id = e."contactId" WHERE e.id = $1`,
        [a[k]!.executionId],
      );
      expect(row.currentStepId).toBe(stale ? a[k]!.stepId : pause);
      expect(row.data.by).toBe(stale ? undefined : 'A');
      expect(row.messages).toBe(stale ? 0 : 1);
    }
    await expectNoViolations(t.db, 'mixed batch');
  });

  it('refuses a batch that patches one contact twice, before sending anything', async () => {
    const wf = await workflowFrom(t.db, projectId, delayWorkflow(3600, { allowReentry: true }));
    const [claim] = await staleClaims(wf.id, 'batch-twice', 1);
    const twin = { ...claim!, executionId: '00000000-0000-4000-8000-000000000001' };
    await expect(advanceExecutions(t.db, completions([claim!, twin], claim!.stepId, 'A'))).rejects.toThrow(/patched twice/);
  });
});
