import type { Prisma } from '../../server/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deadEventsQuery, failedExecutionsQuery, failedMessagesQuery, throughput, throughputQuery } from '../../server/read/overview';
import { actorFor, callerFor } from '../support/callers';
import { freshDatabase, type TestDatabase } from '../support/database';
import { explain, planNodes, type PlanNode } from '../support/explain';
import { createProject, waitWorkflow, workflowFrom } from '../support/fixtures';

// The overview's reads stay index range scans as the tables grow (docs/architecture.md, "Scale").
// Two projects, each with 30,000 executions over the last ten hours (two finished step
// rows each), 30,000 events and an email per execution; some failed, some dead-lettered.
// Every plan reads each big table through the index named here, never by a sequential scan.

const BIG_TABLES = ['WorkflowExecution', 'StepExecution', 'Message', 'Event', 'Contact'];

let t: TestDatabase;
let projectId: string;

beforeAll(async () => {
  t = await freshDatabase();
  projectId = (await createProject(t.db, 'big')).id;
  const noise = (await createProject(t.db, 'noise')).id;
  for (const [n, p] of [projectId, noise].entries()) {
    for (let i = 0; i < 10; i++) await workflowFrom(t.db, p, waitWorkflow({ name: `wf-${i}`, allowReentry: true }));
    await t.query(
      `INSERT INTO "Contact"(id, "projectId", email) SELECT gen_random_uuid(), $1, 'c' || g || '@example.com' FROM generate_series(1, 2000) g`,
      [p],
    );
    await t.query(
      `WITH c AS (SELECT array_agg(id ORDER BY id) ids FROM "Contact" WHERE "projectId" = $1)
       INSERT INTO "Event"(id, "projectId", "contactId", name, "createdAt", "processedAt", "deadAt", "dispatchAttempts", "lastError")
       SELECT gen_random_uuid(), $1, c.ids[1 + g % 2000], 'purchase', now() - (g * 1.2 || ' seconds')::interval,
              CASE WHEN g % 200 <> 0 THEN now() END, CASE WHEN g % 200 = 0 THEN now() - (g || ' seconds')::interval END,
              1, CASE WHEN g % 200 = 0 THEN 'boom' END
         FROM generate_series(0, 29999) g, c`,
      [p],
    );
    await t.query(
      `WITH w AS (SELECT array_agg(w.id ORDER BY w.id) ids, array_agg(v.id ORDER BY w.id) versions
                    FROM "Workflow" w JOIN "WorkflowVersion" v ON v."workflowId" = w.id AND v.number = 1 WHERE w."projectId" = $1),
            c AS (SELECT array_agg(id ORDER BY id) ids FROM "Contact" WHERE "projectId" = $1)
       INSERT INTO "WorkflowExecution"(id, "projectId", "workflowId", "workflowVersionId", "contactId", status, "startedAt", "updatedAt", "finishedAt", "lastError")
       SELECT md5($2 || 'ex' || g)::uuid, $1, w.ids[1 + g % 10], w.versions[1 + g % 10], c.ids[1 + (g / 10) % 2000],
              (CASE WHEN g % 60 = 0 THEN 'FAILED' ELSE 'COMPLETED' END)::"ExecutionStatus",
              now() - (g * 1.2 || ' seconds')::interval, now(), now() - (g * 1.2 - 1 || ' seconds')::interval,
              CASE WHEN g % 60 = 0 THEN 'boom' END
         FROM generate_series(0, 29999) g, w, c`,
      [p, String(n)],
    );
    for (const key of ['hello', 'wait']) {
      await t.query(
        `INSERT INTO "StepExecution"(id, "executionId", "stepId", status, "startedAt", "finishedAt")
         SELECT md5($1 || $2 || g)::uuid, e.id, ws.id, 'COMPLETED', e."startedAt", e."finishedAt"
           FROM generate_series(0, 29999) g
           JOIN "WorkflowExecution" e ON e.id = md5($1 || 'ex' || g)::uuid
           JOIN "WorkflowStep" ws ON ws."versionId" = e."workflowVersionId" AND ws.key = $2`,
        [String(n), key],
      );
    }
    await t.query(
      `UPDATE "WorkflowExecution" e SET "currentStepId" = ws.id
         FROM "WorkflowStep" ws WHERE ws."versionId" = e."workflowVersionId" AND ws.key = 'hello' AND e."projectId" = $1`,
      [p],
    );
    await t.query(
      `INSERT INTO "Message"(id, "projectId", "executionId", "stepExecutionId", "to", subject, body, status, error, "createdAt")
       SELECT gen_random_uuid(), $1, s."executionId", s.id, 'c@example.com', 'Hello', 'Hi',
              (CASE WHEN g % 500 = 0 THEN 'FAILED' ELSE 'SENT' END)::"MessageStatus", CASE WHEN g % 500 = 0 THEN 'SMTP 550' END, s."startedAt"
         FROM generate_series(0, 29999) g JOIN "StepExecution" s ON s.id = md5($2 || 'hello' || g)::uuid`,
      [p, String(n)],
    );
  }
  // VACUUM too: the currentStepId update left a dead index entry per execution.
  await t.query('VACUUM ANALYZE');
}, 300_000);
afterAll(async () => t?.drop());

/** The plan of a query as it ran, with each node's actual rows and loops. */
type RunNode = PlanNode & { 'Actual Rows'?: number; 'Actual Loops'?: number };
async function explainAnalyze(query: Prisma.Sql): Promise<PlanNode> {
  const [row] = await t.db.$queryRaw<{ 'QUERY PLAN': [{ Plan: PlanNode }] }[]>`EXPLAIN (ANALYZE, FORMAT JSON) ${query}`;
  return row!['QUERY PLAN'][0].Plan;
}

function shapeOf(plan: PlanNode): string {
  return JSON.stringify(planNodes(plan).map((n) => [n['Node Type'], n['Relation Name'], n['Index Name']]));
}

/** No sequential scan of a big table, and each of `indexes` read by an index (only) scan. */
function expectIndexRanges(plan: PlanNode, indexes: string[]) {
  const all = planNodes(plan);
  const shape = shapeOf(plan);
  expect(all.filter((n) => n['Node Type'] === 'Seq Scan' && BIG_TABLES.includes(n['Relation Name'] ?? '')), shape).toEqual([]);
  for (const index of indexes) {
    expect(
      all.some((n) => ['Index Scan', 'Index Only Scan', 'Bitmap Index Scan'].includes(n['Node Type']) && n['Index Name'] === index),
      `${index} in ${shape}`,
    ).toBe(true);
  }
}

describe('overview.throughput at 30,000 executions, 60,000 steps and 30,000 events a project', () => {
  it('each count is an index range on its time column over the window; steps find their project by primary key', async () => {
    const plan = await explain(t.db, throughputQuery({ projectId, minutes: 60 }));
    expectIndexRanges(plan, [
      'WorkflowExecution_projectId_startedAt_id_idx',
      'StepExecution_finished_idx',
      'WorkflowExecution_pkey',
      'Event_projectId_createdAt_id_idx',
    ]);
  });

  it('reads the window, not the table: each range returns about an hour of rows (run, not estimated)', async () => {
    const plan = await explainAnalyze(throughputQuery({ projectId, minutes: 60 }));
    const rowsOf = (index: string) =>
      (planNodes(plan) as RunNode[])
        .filter((n) => n['Index Name'] === index)
        .reduce((sum, n) => sum + (n['Actual Rows'] ?? 0) * (n['Actual Loops'] ?? 1), 0);
    // About 3,000 executions and events of this project in the hour (of 30,000 each), and
    // 12,000 steps finished in it across both projects (of 120,000), each looked up once.
    expect(rowsOf('WorkflowExecution_projectId_startedAt_id_idx'), shapeOf(plan)).toBeLessThan(3_100);
    expect(rowsOf('Event_projectId_createdAt_id_idx'), shapeOf(plan)).toBeLessThan(3_100);
    expect(rowsOf('StepExecution_finished_idx'), shapeOf(plan)).toBeLessThan(12_100);
    expect(rowsOf('WorkflowExecution_pkey'), shapeOf(plan)).toBeLessThan(12_100);
  });

  it('the widest window (180 minutes) stays on the same indexes', async () => {
    expectIndexRanges(await explain(t.db, throughputQuery({ projectId, minutes: 180 })), [
      'WorkflowExecution_projectId_startedAt_id_idx',
      'StepExecution_finished_idx',
      'Event_projectId_createdAt_id_idx',
    ]);
  });

  it('the counts are right at this size: each equals a plain count of its project over the same window', async () => {
    const [{ now }] = (await t.query<{ now: Date }>('SELECT now() AS now')) as [{ now: Date }];
    const result = await throughput(t.db, { projectId, minutes: 60, now });
    const window = [projectId, result.since, result.until];
    const [oracle] = await t.query(
      `SELECT (SELECT count(*)::int FROM "WorkflowExecution" WHERE "projectId" = $1 AND "startedAt" >= $2 AND "startedAt" < $3) AS enrollments,
              (SELECT count(*)::int FROM "StepExecution" s JOIN "WorkflowExecution" e ON e.id = s."executionId"
                WHERE e."projectId" = $1 AND s."finishedAt" >= $2 AND s."finishedAt" < $3) AS "stepsRun",
              (SELECT count(*)::int FROM "Event" WHERE "projectId" = $1 AND "createdAt" >= $2 AND "createdAt" < $3) AS "eventsTracked"`,
      window,
    );
    expect(result.totals).toEqual(oracle);
    // One execution (and event) every 1.2 s: about 3,000 in an hour; two steps each.
    expect(result.totals.enrollments).toBeGreaterThan(2_400);
    expect(result.totals.stepsRun).toBeGreaterThan(4_800);
  });
});

describe('overview.recentFailures at the same size', () => {
  it.each([
    ['FAILED executions', () => failedExecutionsQuery(projectId, 10), 'WorkflowExecution_failed_idx'],
    ['dead events', () => deadEventsQuery(projectId, 10), 'Event_dead_idx'],
    ['failed emails', () => failedMessagesQuery(projectId, 10), 'Message_failed_idx'],
  ])('%s: an index range in the order wanted, under a LIMIT', async (_, query, index) => {
    const plan = await explain(t.db, query());
    expect(plan['Node Type'], shapeOf(plan)).toBe('Limit');
    expectIndexRanges(plan, [index]);
    expect(planNodes(plan).some((n) => n['Node Type'] === 'Sort'), shapeOf(plan)).toBe(false);
    expect(plan['Total Cost'], shapeOf(plan)).toBeLessThan(500);
  });

  it('lists the latest ten, latest first', async () => {
    const items = await callerFor(t.db, actorFor(projectId, 'VIEWER')).overview.recentFailures();
    expect(items).toHaveLength(10);
    expect(items.map((i) => i.at.getTime())).toEqual([...items.map((i) => i.at.getTime())].sort((a, b) => b - a));
    expect(new Set(items.map((i) => i.kind)).size).toBeGreaterThan(1);
  });
});
