import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STUCK_REASONS } from '../../server/common/stuck-reasons';
import { countStuck } from '../../server/stuck/counts';
import { stuckGroupsQuery } from '../../server/stuck/groups';
import { listStuck, stuckPageQuery } from '../../server/stuck/list';
import { stuckQuery } from '../../server/stuck/predicates';
import { freshDatabase, type TestDatabase } from '../support/database';
import { explain, planNodes } from '../support/explain';
import { createProject, waitWorkflow, workflowFrom } from '../support/fixtures';

// The stuck predicates stay index scans as executions grow (docs/architecture.md, "Scale"):
// 100,000 executions in the shapes production leaves (mostly finished, a few thousand
// active, some of them stuck), then EXPLAIN every predicate and check that no big table
// is read by a sequential scan.

let t: TestDatabase;
let projectId: string;
const BIG_TABLES = ['WorkflowExecution', 'StepExecution', 'Event', 'Message'];

beforeAll(async () => {
  t = await freshDatabase();
  projectId = (await createProject(t.db, 'big')).id;
  // A second, noisy project: the predicates must not wade through it either.
  const noise = (await createProject(t.db, 'noise')).id;
  for (const p of [projectId, noise]) {
    for (let i = 0; i < 25; i++) await workflowFrom(t.db, p, waitWorkflow({ name: `wf-${i}`, allowReentry: true }));
    await t.query(
      `INSERT INTO "Contact"(id, "projectId", email) SELECT gen_random_uuid(), $1, 'c' || g || '@example.com' FROM generate_series(1, 2000) g`,
      [p],
    );
  }
  // 50,000 executions per project; g -> (workflow, contact) is one-to-one, so the active
  // ones never collide on I1. Statuses by range of g.
  for (const p of [projectId, noise]) {
    await t.query(
      `WITH w AS (SELECT array_agg(w.id ORDER BY w.id) ids, array_agg(v.id ORDER BY w.id) versions
                    FROM "Workflow" w JOIN "WorkflowVersion" v ON v."workflowId" = w.id AND v.number = 1 WHERE w."projectId" = $1),
            c AS (SELECT array_agg(id ORDER BY id) ids FROM "Contact" WHERE "projectId" = $1)
       INSERT INTO "WorkflowExecution"(id, "projectId", "workflowId", "workflowVersionId", "contactId", status, "startedAt", "updatedAt", "finishedAt", "readyAt")
       SELECT gen_random_uuid(), $1, w.ids[1 + g % 25], w.versions[1 + g % 25], c.ids[1 + (g / 25) % 2000],
              (CASE WHEN g < 46000 THEN 'COMPLETED' WHEN g < 48000 THEN 'WAITING' WHEN g < 49000 THEN 'RUNNING' ELSE 'FAILED' END)::"ExecutionStatus",
              now() - (g || ' seconds')::interval, now(),
              CASE WHEN g < 46000 OR g >= 49000 THEN now() END,
              CASE WHEN g >= 48000 AND g < 49000 THEN now() - interval '1 hour' END
         FROM generate_series(0, 49999) g, w, c`,
      [p],
    );
  }
  // Current steps and step rows as the engine leaves them.
  await t.query(`
    UPDATE "WorkflowExecution" e SET "currentStepId" = s.id
      FROM "WorkflowStep" s
     WHERE s."versionId" = e."workflowVersionId"
       AND s.key = CASE WHEN e.status IN ('WAITING') THEN 'wait' WHEN e.status = 'COMPLETED' THEN 'thanks' ELSE 'hello' END`);
  await t.query(`
    INSERT INTO "StepExecution"(id, "executionId", "stepId", status, "dueAt", "resolvedBy", "resolvedAt", "leaseExpiresAt", "startedAt", "finishedAt")
    SELECT gen_random_uuid(), e.id, e."currentStepId",
           (CASE e.status WHEN 'COMPLETED' THEN 'COMPLETED' WHEN 'WAITING' THEN 'WAITING' WHEN 'FAILED' THEN 'FAILED'
                          ELSE 'RUNNING' END)::"StepStatus",
           CASE WHEN e.status = 'WAITING' THEN now() + ((random() - 0.2) * interval '2 days') END,
           CASE WHEN e.status = 'WAITING' AND random() < 0.05 THEN 'EVENT'::"WaitResolver" END,
           CASE WHEN e.status = 'WAITING' THEN now() - interval '1 hour' END,
           CASE WHEN e.status = 'RUNNING' THEN now() - interval '1 hour' END,
           e."startedAt", CASE WHEN e.status IN ('COMPLETED', 'FAILED') THEN now() END
      FROM "WorkflowExecution" e
     WHERE e.status <> 'RUNNING' OR random() < 0.5`);
  await t.query(`UPDATE "StepExecution" SET "resolvedAt" = NULL WHERE "resolvedBy" IS NULL`);
  // 40,000 events: processed, a few pending, a few dead.
  await t.query(`
    INSERT INTO "Event"(id, "projectId", name, "createdAt", "processedAt", "deadAt", "dispatchAttempts")
    SELECT gen_random_uuid(), CASE WHEN g % 2 = 0 THEN $1::uuid ELSE $2::uuid END, 'purchase', now() - (g || ' seconds')::interval,
           CASE WHEN g % 100 NOT IN (0, 2) THEN now() END, CASE WHEN g % 100 = 0 THEN now() END, CASE WHEN g % 100 = 0 THEN 8 ELSE 1 END
      FROM generate_series(1, 40000) g`,
    [projectId, noise],
  );
  // An email for every finished execution's last step: nearly all SENT, a few left
  // SENDING by a sender that died (MESSAGE_UNCONFIRMED), a few FAILED, some QUEUED.
  await t.query(`
    INSERT INTO "Message"(id, "projectId", "executionId", "stepExecutionId", "to", subject, body, status, "leaseOwner", "leaseExpiresAt", "sentAt", "createdAt")
    SELECT gen_random_uuid(), e."projectId", e.id, s.id, 'c@example.com', 'Thanks', 'Thanks',
           (CASE WHEN n % 200 = 0 THEN 'SENDING' WHEN n % 200 = 1 THEN 'FAILED' WHEN n % 200 = 2 THEN 'QUEUED' ELSE 'SENT' END)::"MessageStatus",
           CASE WHEN n % 200 = 0 THEN 'worker:dead' END,
           CASE WHEN n % 200 = 0 THEN now() - interval '1 hour' END,
           CASE WHEN n % 200 > 2 THEN now() END, e."startedAt"
      FROM (SELECT s.*, row_number() OVER () AS n FROM "StepExecution" s) s
      JOIN "WorkflowExecution" e ON e.id = s."executionId" AND e.status = 'COMPLETED'`);
  await t.query('ANALYZE');
}, 300_000);
afterAll(async () => t?.drop());

interface AnalyzedNode {
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  Plans?: AnalyzedNode[];
}
const analyzedNodes = (n: AnalyzedNode): AnalyzedNode[] => [n, ...(n.Plans ?? []).flatMap(analyzedNodes)];

describe('stuck predicates at 100,000 executions', () => {
  it('the data looks like production: every reason has cases', async () => {
    const [count] = await t.query(`SELECT count(*)::int AS n FROM "WorkflowExecution"`);
    expect(count.n).toBe(100_000);
    const counts = await countStuck(t.db, { projectId, graceSeconds: 60 });
    for (const reason of STUCK_REASONS) expect(counts[reason], reason).toBeGreaterThan(0);
  });

  it.each(STUCK_REASONS.map((r) => [r]))('%s is answered from indexes, no sequential scan of a big table', async (reason) => {
    const query = stuckQuery(reason, { projectId, graceSeconds: 60 });
    const plan = await explain(t.db, query);
    const all = planNodes(plan);
    const seqScans = all.filter((n) => n['Node Type'] === 'Seq Scan' && BIG_TABLES.includes(n['Relation Name'] ?? ''));
    expect(seqScans, JSON.stringify(all.map((n) => [n['Node Type'], n['Relation Name'], n['Index Name']]))).toEqual([]);
    const indexes = all.map((n) => n['Index Name']).filter(Boolean);
    expect(indexes.length).toBeGreaterThan(0);
  });

  it('grouping every stuck item by cause reads the same partial indexes, no sequential scan of a big table', async () => {
    const plan = await explain(t.db, stuckGroupsQuery({ projectId, graceSeconds: 60 }));
    const all = planNodes(plan);
    const seqScans = all.filter((n) => n['Node Type'] === 'Seq Scan' && BIG_TABLES.includes(n['Relation Name'] ?? ''));
    expect(seqScans, JSON.stringify(all.map((n) => [n['Node Type'], n['Relation Name'], n['Index Name']]))).toEqual([]);
    const indexes = new Set(all.map((n) => n['Index Name']).filter(Boolean));
    // One partial index per predicate at least (the union), not one big scan.
    expect(indexes.size).toBeGreaterThanOrEqual(STUCK_REASONS.length - 2);
  });

  it('the first page of the stuck list is one index-driven query too', async () => {
    const page = await listStuck(t.db, { projectId, graceSeconds: 60, limit: 50 });
    expect(page.items).toHaveLength(50);
    expect(page.nextCursor).not.toBeNull();
  });
});


describe('a page of stuck items in a backlog of 30,000', () => {
  // An incident: one project with 12,000 overdue waits, 8,000 expired leases and 10,000
  // failed executions, the newest of their kind (the timer and lease indexes are shared by
  // every project), their deadlines half a second apart. A page of 20 must read about 20
  // rows of the driving index, not the whole backlog and a sort (what PostgreSQL chose
  // when the lookup of each item's execution could be flattened into a join).
  let backlog: string;
  const DRIVERS = ['StepExecution_timer_idx', 'StepExecution_lease_idx', 'WorkflowExecution_failed_since_idx'];
  beforeAll(async () => {
    backlog = (await createProject(t.db, 'backlog')).id;
    const wf = (await workflowFrom(t.db, backlog, waitWorkflow({ name: 'backlog', allowReentry: true }))).id;
    await t.query(
      `INSERT INTO "Contact"(id, "projectId", email) SELECT gen_random_uuid(), $1, 'b' || g || '@example.com' FROM generate_series(1, 30000) g`,
      [backlog],
    );
    await t.query(
      `WITH c AS (SELECT id, row_number() OVER (ORDER BY id) AS n FROM "Contact" WHERE "projectId" = $1),
            v AS (SELECT id FROM "WorkflowVersion" WHERE "workflowId" = $2 AND number = 1),
            st AS (SELECT v.id AS version,
                          (SELECT id FROM "WorkflowStep" WHERE "versionId" = v.id AND key = 'wait') AS wait,
                          (SELECT id FROM "WorkflowStep" WHERE "versionId" = v.id AND key = 'hello') AS hello FROM v)
       INSERT INTO "WorkflowExecution"(id, "projectId", "workflowId", "workflowVersionId", "contactId", status, "currentStepId", "startedAt", "updatedAt", "finishedAt", "readyAt")
       SELECT gen_random_uuid(), $1, $2, st.version, c.id,
              (CASE WHEN c.n <= 12000 THEN 'WAITING' WHEN c.n <= 20000 THEN 'RUNNING' ELSE 'FAILED' END)::"ExecutionStatus",
              CASE WHEN c.n <= 12000 THEN st.wait ELSE st.hello END,
              now() - c.n * interval '3 seconds', now(),
              CASE WHEN c.n > 20000 THEN now() - c.n * interval '2 seconds' END,
              CASE WHEN c.n > 12000 AND c.n <= 20000 THEN now() + interval '1 day' END
         FROM c, st`,
      [backlog, wf],
    );
    await t.query(
      `INSERT INTO "StepExecution"(id, "executionId", "stepId", status, "dueAt", "leaseExpiresAt", "startedAt")
       SELECT gen_random_uuid(), e.id, e."currentStepId",
              (CASE e.status WHEN 'WAITING' THEN 'WAITING' WHEN 'RUNNING' THEN 'RUNNING' ELSE 'FAILED' END)::"StepStatus",
              CASE WHEN e.status = 'WAITING' THEN now() - interval '61 seconds' - e.k * interval '0.5 seconds' END,
              CASE WHEN e.status = 'RUNNING' THEN now() - interval '61 seconds' - e.k * interval '0.5 seconds' END,
              e."startedAt"
         FROM (SELECT *, row_number() OVER (PARTITION BY status ORDER BY "startedAt" DESC) AS k
                 FROM "WorkflowExecution" WHERE "projectId" = $1) e`,
      [backlog],
    );
    await t.query('ANALYZE');
  }, 120_000);

  it.each([['WAIT_OVERDUE'], ['LEASE_EXPIRED'], ['FAILED'], ['all reasons']] as const)(
    '%s: a page reads about a page of rows, and so does the next',
    async (which) => {
      const counts = await countStuck(t.db, { projectId: backlog, graceSeconds: 60 });
      expect(counts).toMatchObject({ WAIT_OVERDUE: 12000, LEASE_EXPIRED: 8000, FAILED: 10000 });
      const reasons = which === 'all reasons' ? undefined : [which];
      let scope: Parameters<typeof stuckPageQuery>[0] = { projectId: backlog, graceSeconds: 60, limit: 20, reasons };
      for (const page of ['first', 'second']) {
        const [row] = await t.db.$queryRaw<{ 'QUERY PLAN': [{ Plan: AnalyzedNode }] }[]>`EXPLAIN (ANALYZE, FORMAT JSON) ${stuckPageQuery(scope)}`;
        // The driving indexes of the backlog's reasons (a reason this project has none of
        // walks its index to the end: other projects' items, here a few hundred).
        const nodes = analyzedNodes(row!['QUERY PLAN'][0].Plan).filter((n) => DRIVERS.includes(n['Index Name'] ?? ''));
        expect(nodes.length, which).toBe(which === 'all reasons' ? 3 : 1);
        const read = Math.max(...nodes.map((n) => n['Actual Rows'] * n['Actual Loops']));
        expect(read, `${which}, ${page} page`).toBeLessThanOrEqual(2 * 21);
        const listed = await listStuck(t.db, scope);
        expect(listed.items).toHaveLength(20);
        scope = { ...scope, cursor: listed.nextCursor };
      }
    },
  );
});
