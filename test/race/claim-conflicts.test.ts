import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimStep, claimWait } from '../../server/engine/claims';
import { enroll } from '../../server/engine/enrollment';
import { metrics } from '../../server/metrics/registry';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createContact, createProject, waitWorkflow, workflowFrom } from '../support/fixtures';
import { runStepsOnly } from '../support/drive';
import { parsePrometheus, total } from '../support/prometheus';
import { fulfilled, racers, ROUNDS, type Racers } from '../support/race';

// waypost_claim_conflicts_total counts every compare-and-swap claim that answers Lost
// (server/engine/claims/result.ts, lost()). Real concurrency: claimers on separate
// PostgreSQL sessions, released together, race for one row; exactly one wins, and the
// counter, read from this process's /metrics exposition, moves by exactly the number
// that lost. Without the count in lost() the counter stays put and both scenarios fail.

let t: TestDatabase;
let r8: Racers;
let projectId = '';

beforeAll(async () => {
  t = await freshDatabase();
  r8 = await racers(t.url, 8);
  projectId = (await createProject(t.db)).id;
});
afterAll(async () => {
  await r8?.close();
  await t?.drop();
});

async function conflicts(claim: string): Promise<number> {
  return total(parsePrometheus(await metrics().registry.metrics()), 'waypost_claim_conflicts_total', { claim });
}

describe('the claim-conflict counter', () => {
  it('eight workers claiming the step of one execution: one wins, seven conflicts counted under claimStep', async () => {
    const wf = await workflowFrom(t.db, projectId, waitWorkflow({ allowReentry: true }));
    const start = await conflicts('claimStep');
    for (let round = 0; round < ROUNDS; round++) {
      const contact = await createContact(t.db, projectId, `cc1-${round}@example.com`);
      const enrolled = await enroll(t.db, { projectId, workflowId: wf.id, contactId: contact.id });
      const executionId = (enrolled as { executionId: string }).executionId;
      const before = await conflicts('claimStep');
      const results = fulfilled(await r8.race((db, i) => claimStep(db, { executionId, expectedVersion: 1, leaseSeconds: 30, owner: `racer-${i}` })));
      expect(results.filter((r) => r.won), `round ${round}`).toHaveLength(1);
      expect((await conflicts('claimStep')) - before, `round ${round}`).toBe(7);
    }
    expect((await conflicts('claimStep')) - start).toBe(7 * ROUNDS);
  });

  it('an event and a timeout resolving one wait: one wins, one conflict counted under claimWait', async () => {
    const wf = await workflowFrom(t.db, projectId, waitWorkflow({ allowReentry: true }, 3600));
    const r2 = r8.first(2);
    for (let round = 0; round < ROUNDS; round++) {
      const contact = await createContact(t.db, projectId, `cc2-${round}@example.com`);
      const enrolled = await enroll(t.db, { projectId, workflowId: wf.id, contactId: contact.id });
      const executionId = (enrolled as { executionId: string }).executionId;
      await runStepsOnly(t.db);
      const [wait] = await t.query<{ id: string }>(
        `UPDATE "StepExecution" SET "dueAt" = now() - interval '1 second' WHERE "executionId" = $1 AND status = 'WAITING' RETURNING id`,
        [executionId],
      );
      const before = await conflicts('claimWait');
      const results = fulfilled(
        await r2.race((db, i) =>
          claimWait(db, { stepExecutionId: wait!.id, resolvedBy: i === 0 ? 'EVENT' : 'TIMEOUT', branch: i === 0 ? 'EVENT' : 'TIMEOUT' }),
        ),
      );
      expect(results.filter((r) => r.won), `round ${round}`).toHaveLength(1);
      expect((await conflicts('claimWait')) - before, `round ${round}`).toBe(1);
    }
  });
});
