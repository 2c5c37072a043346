import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executionListQuery, type ExecutionFilter } from '../../server/read/executions';
import { actorFor, callerFor } from '../support/callers';
import { freshDatabase, type TestDatabase } from '../support/database';
import { explain, planNodes, type PlanNode } from '../support/explain';
import { createProject, stepId, waitWorkflow, workflowFrom } from '../support/fixtures';

// executions.list stays a short index range scan as executions grow (docs/architecture.md, "Scale"):
// 100,000 executions over two projects, then EXPLAIN the list's one statement for each
// filter and check that the executions table is never read sequentially, and that deep
// pages (keyset, not OFFSET) cost what the first page costs.

let t: TestDatabase;
let projectId: string;
let workflowId: string;
let waitStepId: string;

beforeAll(async () => {
  t = await freshDatabase();
  projectId = (await createProject(t.db, 'big')).id;
  const noise = (await createProject(t.db, 'noise')).id;
  for (const p of [projectId, noise]) {
    for (let i = 0; i < 20; i++) await workflowFrom(t.db, p, waitWorkflow({ name: `wf-${i}`, allowReentry: true }));
    await t.query(
      `INSERT INTO "Contact"(id, "projectId", email) SELECT gen_random_uuid(), $1, 'c' || g || '@example.com' FROM generate_series(1, 2500) g`,
      [p],
    );
    // 50,000 executions per project; g -> (workflow, contact) is one-to-one, so active ones never collide on I1.
    await t.query(
      `WITH w AS (SELECT array_agg(w.id ORDER BY w.id) ids, array_agg(v.id ORDER BY w.id) versions
                    FROM "Workflow" w JOIN "WorkflowVersion" v ON v."workflowId" = w.id AND v.number = 1 WHERE w."projectId" = $1),
            c AS (SELECT array_agg(id ORDER BY id) ids FROM "Contact" WHERE "projectId" = $1)
       INSERT INTO "WorkflowExecution"(id, "projectId", "workflowId", "workflowVersionId", "contactId", status, "startedAt", "updatedAt", "finishedAt")
       SELECT gen_random_uuid(), $1, w.ids[1 + g % 20], w.versions[1 + g % 20], c.ids[1 + (g / 20) % 2500],
              (CASE WHEN g < 46000 THEN 'COMPLETED' WHEN g < 49000 THEN 'WAITING' ELSE 'FAILED' END)::"ExecutionStatus",
              now() - (g || ' seconds')::interval, now(), CASE WHEN g < 46000 OR g >= 49000 THEN now() END
         FROM generate_series(0, 49999) g, w, c`,
      [p],
    );
  }
  workflowId = (await t.db.workflow.findFirstOrThrow({ where: { projectId, name: 'wf-3' } })).id;
  // The waiting ones wait at their workflow's wait step (the console's "current step" filter).
  await t.query(
    `UPDATE "WorkflowExecution" e SET "currentStepId" = ws.id
       FROM "WorkflowStep" ws WHERE ws."versionId" = e."workflowVersionId" AND ws.key = 'wait' AND e.status = 'WAITING'`,
  );
  waitStepId = await stepId(t.db, workflowId, 'wait');
  await t.query('ANALYZE');
}, 300_000);
afterAll(async () => t?.drop());

async function planOf(filter: Partial<ExecutionFilter>): Promise<PlanNode> {
  const query = executionListQuery({ projectId, contact: null, limit: 50, ...filter });
  return explain(t.db, query);
}

const FILTERS: [string, () => Partial<ExecutionFilter>][] = [
  ['the project', () => ({})],
  ['one status', () => ({ status: ['WAITING'] })],
  ['two statuses', () => ({ status: ['WAITING', 'FAILED'] })],
  ['a workflow', () => ({ workflowId })],
  ['a workflow and a status', () => ({ workflowId, status: ['COMPLETED'] })],
  ['a time window', () => ({ since: new Date(Date.now() - 3_600_000), until: new Date(Date.now() - 600_000) })],
  ['a stuck reason', () => ({ stuck: ['FAILED'] })],
  ['a stuck reason of a step', () => ({ stuck: ['LEASE_EXPIRED'] })],
  ["an email's stuck reason", () => ({ stuck: ['MESSAGE_FAILED'] })],
  ['stuck reasons of two statuses and an email', () => ({ stuck: ['WAIT_OVERDUE', 'MISSING_STEP', 'MESSAGE_UNCONFIRMED'] })],
  ['a stuck reason, deep', () => ({ stuck: ['CONTINUATION_PENDING'], cursor: { at: new Date(Date.now() - 40_000_000), id: 'ffffffff-ffff-ffff-ffff-ffffffffffff' } })],
  ['a stuck reason, the previous page', () => ({ stuck: ['MESSAGE_FAILED', 'FAILED'], before: { at: new Date(Date.now() - 40_000_000), id: '00000000-0000-0000-0000-000000000000' } })],
  ['a deep page', () => ({ cursor: { at: new Date(Date.now() - 40_000_000), id: 'ffffffff-ffff-ffff-ffff-ffffffffffff' } })],
  ['a current step', () => ({ workflowId, stepId: waitStepId })],
  ['a current step alone', () => ({ stepId: waitStepId })],
  ['a contact email prefix', () => ({ contact: { emailPrefix: 'c12' } })],
  ['a contact email prefix and a status', () => ({ contact: { emailPrefix: 'c1234@' }, status: ['WAITING'] })],
  ['a previous page', () => ({ before: { at: new Date(Date.now() - 40_000_000), id: '00000000-0000-0000-0000-000000000000' } })],
  ['a previous page of one status', () => ({ status: ['FAILED'], before: { at: new Date(Date.now() - 40_000_000), id: '00000000-0000-0000-0000-000000000000' } })],
];

describe('executions.list at 100,000 executions', () => {
  it.each(FILTERS)('filtered by %s: an index scan under a LIMIT, no sequential scan of the executions', async (_, filter) => {
    const plan = await planOf(filter());
    const all = planNodes(plan);
    const shape = JSON.stringify(all.map((n) => [n['Node Type'], n['Relation Name'], n['Index Name']]));
    expect(plan['Node Type'], shape).toBe('Limit');
    expect(all.filter((n) => n['Node Type'] === 'Seq Scan' && n['Relation Name'] === 'WorkflowExecution'), shape).toEqual([]);
    // An index of the executions gives the rows: in order, or (a narrow step) as a bitmap sorted under the LIMIT.
    expect(all.some((n) => n['Index Name']?.startsWith('WorkflowExecution_')), shape).toBe(true);
  });

  it('the previous page reads the same rows the next page had (keyset both ways)', async () => {
    const caller = callerFor(t.db, actorFor(projectId, 'VIEWER'));
    const first = await caller.executions.list({ limit: 50, status: ['WAITING'] });
    const second = await caller.executions.list({ limit: 50, status: ['WAITING'], cursor: first.nextCursor! });
    expect(first.prevCursor).toBeNull();
    const back = await caller.executions.list({ limit: 50, status: ['WAITING'], before: second.prevCursor! });
    expect(back.items.map((e) => e.id)).toEqual(first.items.map((e) => e.id));
    expect(back.prevCursor).toBeNull();
    const forward = await caller.executions.list({ limit: 50, status: ['WAITING'], cursor: back.nextCursor! });
    expect(forward.items.map((e) => e.id)).toEqual(second.items.map((e) => e.id));
  });

  it('a deep page costs about what the first page costs (keyset, not OFFSET)', async () => {
    const first = await planOf({});
    const deep = await planOf(FILTERS.find(([name]) => name === 'a deep page')![1]());
    // Estimates from ANALYZE's sample: a keyset page 11 h deep estimates at about 3x the
    // first (the range's start); an OFFSET to that depth would be thousands of times it.
    expect(deep['Total Cost']).toBeLessThan(first['Total Cost'] * 5);
  });

  it('pages through a project of 50,000 executions without repeats, newest first', async () => {
    const caller = callerFor(t.db, actorFor(projectId, 'VIEWER'));
    let cursor: string | undefined;
    let previous: Date | null = null;
    const seen = new Set<string>();
    for (let i = 0; i < 5; i++) {
      const result = await caller.executions.list({ limit: 200, cursor, status: ['COMPLETED'] });
      for (const e of result.items) {
        expect(seen.has(e.id)).toBe(false);
        seen.add(e.id);
        if (previous) expect(e.startedAt.getTime()).toBeLessThanOrEqual(previous.getTime());
        previous = e.startedAt;
      }
      cursor = result.nextCursor!;
    }
    expect(seen.size).toBe(1000);
  });
});
