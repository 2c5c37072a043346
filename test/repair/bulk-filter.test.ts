import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enroll } from '../../server/engine/enrollment';
import { checkInvariants } from '../../server/engine/invariants';
import { executionIdsMatching } from '../../server/read/executions';
import { freshDatabase, type TestDatabase } from '../support/database';
import { actorFor, callerFor } from '../support/callers';
import { runStepsOnly } from '../support/drive';
import { createProject, waitWorkflow, workflowFrom } from '../support/fixtures';

// Bulk repair from a filter of the Executions page (repair.applyMany's
// `filter.executions`): exactly what the list shows for those filters is counted and
// repaired, nothing else; a filter too wide is refused, not cut short.

let t: TestDatabase;
let projectId: string;
let workflowId: string;
let operator: ReturnType<typeof callerFor>;
const overdue: Record<'alpha' | 'beta', string[]> = { alpha: [], beta: [] };

beforeAll(async () => {
  t = await freshDatabase();
  projectId = (await createProject(t.db)).id;
  workflowId = (await workflowFrom(t.db, projectId, waitWorkflow({ allowReentry: true }))).id;
  for (const prefix of ['alpha', 'beta'] as const) {
    for (let i = 0; i < 3; i++) {
      const e = await enroll(t.db, { projectId, workflowId, email: `${prefix}-${i}@example.com` });
      if (!e.ok) throw new Error(e.reason);
      overdue[prefix].push(e.executionId);
    }
  }
  await runStepsOnly(t.db);
  // Every wait is past its deadline (and past the stuck grace): WAIT_OVERDUE.
  await t.query(`UPDATE "StepExecution" SET "dueAt" = now() - interval '1 hour' WHERE status = 'WAITING'`);
  operator = callerFor(t.db, actorFor(projectId, 'OPERATOR'));
});
afterAll(async () => t?.drop());

const byAlpha = () => ({ executions: { workflowId, stuck: ['WAIT_OVERDUE' as const], contact: 'alpha-' } });

describe('bulk repair over an executions filter', () => {
  it('counts exactly what the list selects, and repairs only those', async () => {
    const listed = await operator.executions.list({ workflowId, stuck: ['WAIT_OVERDUE'], contact: 'alpha-', limit: 50 });
    expect(listed.items.map((i) => i.id).sort()).toEqual([...overdue.alpha].sort());

    const dry = await operator.repair.applyMany({ filter: byAlpha(), action: 'FORCE_TIMEOUT', reason: 'count', dryRun: true });
    expect(dry.matched).toBe(3);

    const run = await operator.repair.applyMany({ filter: byAlpha(), action: 'FORCE_TIMEOUT', reason: 'campaign over' });
    expect(run.items.map((i) => [i.executionId, i.outcome]).sort()).toEqual(overdue.alpha.map((id) => [id, 'APPLIED']).sort());
    const beta = await t.query<{ resolvedBy: string | null }>(
      `SELECT s."resolvedBy" FROM "StepExecution" s WHERE s."executionId" = ANY($1::uuid[]) AND s.status = 'WAITING'`,
      [overdue.beta],
    );
    expect(beta).toHaveLength(3);
    expect(beta.every((r) => r.resolvedBy === null)).toBe(true);
    expect((await checkInvariants(t.db)).filter((x) => x.violations > 0)).toEqual([]);

    // The same filter again selects nothing now: a count of 0, not an error.
    expect((await operator.repair.applyMany({ filter: byAlpha(), action: 'FORCE_TIMEOUT', reason: 'count', dryRun: true })).matched).toBe(0);
    // The run as a whole is audited with the filter the operator gave.
    const [entry] = await t.query<{ targetId: string }>(`SELECT "targetId" FROM "AuditEntry" WHERE action = 'repair.applyMany' ORDER BY at DESC LIMIT 1`);
    expect(JSON.parse(entry!.targetId)).toMatchObject({ executions: { contact: 'alpha-' } });
  });

  it('refuses a mixed selection, a foreign workflow, and a marketer, changing nothing', async () => {
    await expect(
      operator.repair.applyMany({ filter: { ...byAlpha(), workflowId }, action: 'FORCE_TIMEOUT', reason: 'tidy up', dryRun: true }),
    ).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    await expect(
      operator.repair.applyMany({
        filter: { executions: { workflowId: '00000000-0000-4000-8000-000000000000' } },
        action: 'CANCEL',
        reason: 'tidy up',
        dryRun: true,
      }),
    ).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const marketer = callerFor(t.db, actorFor(projectId, 'MARKETER'));
    await expect(marketer.repair.applyMany({ filter: byAlpha(), action: 'CANCEL', reason: 'tidy up' })).rejects.toMatchObject({ code: 'FORBIDDEN' });
    const cancelled = await t.query(`SELECT 1 FROM "WorkflowExecution" WHERE status = 'CANCELLED'`);
    expect(cancelled).toHaveLength(0);
  });

  it('answers null (refused) when a filter selects more than the bound', async () => {
    const f = { projectId, workflowId, contact: { emailPrefix: 'beta-' }, graceSeconds: 0 };
    expect(await executionIdsMatching(t.db, f, 2)).toBeNull();
    expect((await executionIdsMatching(t.db, f, 3))?.sort()).toEqual([...overdue.beta].sort());
  });
});
