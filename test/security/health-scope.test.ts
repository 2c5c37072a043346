import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enroll } from '../../server/engine/enrollment';
import { freshDatabase, type TestDatabase } from '../support/database';
import { actorFor, callerFor } from '../support/callers';
import { createProject, delayWorkflow, workflowFrom } from '../support/fixtures';

// health.invariants counts the caller's project, not every tenant's.

let t: TestDatabase;
let alpha: string;
let beta: string;

beforeAll(async () => {
  t = await freshDatabase();
  alpha = (await createProject(t.db)).id;
  beta = (await createProject(t.db)).id;
  const wf = await workflowFrom(t.db, alpha, delayWorkflow(60));
  const e = await enroll(t.db, { projectId: alpha, workflowId: wf.id, email: 'a@example.com' });
  if (!e.ok) throw new Error(e.reason);
  // An I7 violation in alpha: a RUNNING execution no worker will ever wake.
  await t.query(`UPDATE "WorkflowExecution" SET "readyAt" = NULL WHERE id = $1`, [e.executionId]);
});
afterAll(async () => t?.drop());

const counts = (results: { id: string; violations: number }[]) => Object.fromEntries(results.filter((r) => r.violations).map((r) => [r.id, r.violations]));

describe('health.invariants', () => {
  it("shows a project its own violations and never another tenant's", async () => {
    expect(counts(await callerFor(t.db, actorFor(alpha, 'VIEWER')).health.invariants())).toEqual({ I7: 1 });
    expect(counts(await callerFor(t.db, actorFor(beta, 'VIEWER')).health.invariants())).toEqual({});
  });
});
