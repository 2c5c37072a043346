import { TRPCError } from '@trpc/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngineContext } from '../../server/engine/context';
import { runWorkerOnce } from '../../server/engine/worker';
import { stuckCountsQuery } from '../../server/stuck/counts';
import type { Actor } from '../../server/auth/actor';
import { actorFor, callerFor } from '../support/callers';
import { freshDatabase, type TestDatabase } from '../support/database';
import { explain, planNodes, type PlanNode } from '../support/explain';
import { createProject, stepId, waitWorkflow, workflowFrom } from '../support/fixtures';

// The workflow graph's live counts (workflows.get: running, waiting and stuck at each
// step) and the definition checks the console's editor relies on: a bad graph is a
// BAD_REQUEST whose zod paths point into the JSON, and nothing is stored.

let t: TestDatabase;
let projectId: string;
let marketer: Actor;
let viewer: Actor;

beforeAll(async () => {
  // Stuck means "past its due time" at once, so tests need not wait out a grace period.
  process.env.STUCK_GRACE_SECONDS = '0';
  t = await freshDatabase();
  projectId = (await createProject(t.db)).id;
  marketer = actorFor(projectId, 'MARKETER');
  viewer = actorFor(projectId, 'VIEWER');
});
afterAll(async () => t?.drop());

const as = (actor: Actor | null) => callerFor(t.db, actor);

async function rejection(promise: Promise<unknown>): Promise<TRPCError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof TRPCError) return error;
    throw error;
  }
  throw new Error('expected the call to fail');
}

describe('workflows.get: what stands at each step', () => {
  it('counts running, waiting and stuck executions per step, stuck by the same predicates as /stuck', async () => {
    const { id } = await as(marketer).workflows.create(waitWorkflow({ name: 'graph counts' }));
    for (const email of ['w1@example.com', 'w2@example.com', 'w3@example.com']) {
      await as(marketer).enrollments.enroll({ workflowId: id, email });
    }
    await runWorkerOnce(createEngineContext(t.db)); // all three reach the wait and stay there
    await as(marketer).enrollments.enroll({ workflowId: id, email: 'w4@example.com' }); // stays at the trigger: MISSING_STEP with no grace
    // One wait's timer is long overdue and no worker took it: WAIT_OVERDUE.
    const wait = await stepId(t.db, id, 'wait');
    await t.query(
      `UPDATE "StepExecution" SET "dueAt" = now() - interval '1 hour'
        WHERE id = (SELECT id FROM "StepExecution" WHERE "stepId" = $1 AND status = 'WAITING' ORDER BY id LIMIT 1)`,
      [wait],
    );

    const wf = await as(viewer).workflows.get({ id });
    const byKey = Object.fromEntries(wf.steps.map((s) => [s.key, s]));
    expect(byKey.wait).toMatchObject({ live: 3, running: 0, waiting: 3, stuck: 1, stuckReasons: { WAIT_OVERDUE: 1 } });
    expect(byKey.start).toMatchObject({ live: 1, running: 1, waiting: 0, stuck: 1, stuckReasons: { MISSING_STEP: 1 } });
    expect(byKey.thanks).toMatchObject({ live: 0, running: 0, waiting: 0, stuck: 0, stuckReasons: {} });
    expect(wf.live).toBe(4);

    // The graph's stuck count is what the executions list filtered the same way shows.
    const listed = await as(viewer).executions.list({ workflowId: id, stepId: wait, stuck: ['WAIT_OVERDUE'] });
    expect(listed.items).toHaveLength(1);
  });
});

describe('workflows.create from the editor', () => {
  it('a bad transition is BAD_REQUEST with its zod path, and stores nothing', async () => {
    const before = await t.db.workflow.count();
    const bad = waitWorkflow({ name: 'editor bad' });
    bad.transitions = [...bad.transitions.slice(0, 3), { from: 'wait', to: 'foo', branch: 'TIMEOUT' }];
    const error = await rejection(as(marketer).workflows.create(bad));
    expect(error.code).toBe('BAD_REQUEST');
    const issues = (error.cause as unknown as { issues: { path: (string | number)[]; message: string }[] }).issues;
    expect(issues.map((i) => `${i.path.join('.')}: ${i.message}`)).toContain('transitions.3.to: unknown step "foo"');
    expect(await t.db.workflow.count()).toBe(before);
  });

  it('a viewer may neither create nor enable; the refusal is FORBIDDEN, never a 500', async () => {
    expect((await rejection(as(viewer).workflows.create(waitWorkflow()))).code).toBe('FORBIDDEN');
    const { id } = await workflowFrom(t.db, projectId, waitWorkflow());
    expect((await rejection(as(viewer).workflows.setEnabled({ id, enabled: false }))).code).toBe('FORBIDDEN');
    expect((await t.db.workflow.findUniqueOrThrow({ where: { id } })).enabled).toBe(true);
  });

  it("a duplicate (get's definition fed back to create under a new name) is the same graph", async () => {
    const { id } = await workflowFrom(t.db, projectId, waitWorkflow({ name: 'original' }));
    const wf = await as(viewer).workflows.get({ id });
    const copy = await as(marketer).workflows.create({
      name: 'original (copy)',
      trigger: wf.trigger,
      allowReentry: wf.allowReentry,
      steps: wf.steps.map((s) => ({ key: s.key, type: s.type, name: s.name, config: s.config as Record<string, unknown> })),
      transitions: wf.transitions.map((tr) => ({ from: tr.from, to: tr.to, branch: tr.branch as 'EVENT' | null })),
    });
    const again = await as(viewer).workflows.get({ id: copy.id });
    const shape = (w: typeof wf) => ({
      // Steps as a set: workflows.get orders them by creation time, then key, and a definition
      // created in one statement has one creation time (the graph is the transitions anyway).
      steps: w.steps.map((s) => [s.key, s.type, s.name, s.config]).sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
      transitions: w.transitions.map((tr) => [tr.from, tr.to, tr.branch]).sort(),
    });
    expect(shape(again)).toEqual(shape(wf));
  });
});

describe('the graph\'s stuck counts stay index scans as executions grow', () => {
  let big: TestDatabase;
  let workflowId: string;
  let projects: string[];
  const BIG_TABLES = ['WorkflowExecution', 'StepExecution', 'Message', 'Event'];

  beforeAll(async () => {
    big = await freshDatabase();
    projects = [(await createProject(big.db, 'big')).id, (await createProject(big.db, 'noise')).id];
    for (const p of projects) {
      for (let i = 0; i < 10; i++) await workflowFrom(big.db, p, waitWorkflow({ name: `wf-${i}`, allowReentry: true }));
      await big.query(
        `INSERT INTO "Contact"(id, "projectId", email) SELECT gen_random_uuid(), $1, 'c' || g || '@example.com' FROM generate_series(1, 2000) g`,
        [p],
      );
      // 20,000 executions a project: mostly finished, a few thousand waiting, some running or failed.
      await big.query(
        `WITH w AS (SELECT array_agg(w.id ORDER BY w.id) ids, array_agg(v.id ORDER BY w.id) versions
                      FROM "Workflow" w JOIN "WorkflowVersion" v ON v."workflowId" = w.id AND v.number = 1 WHERE w."projectId" = $1),
              c AS (SELECT array_agg(id ORDER BY id) ids FROM "Contact" WHERE "projectId" = $1)
         INSERT INTO "WorkflowExecution"(id, "projectId", "workflowId", "workflowVersionId", "contactId", status, "startedAt", "updatedAt", "finishedAt", "readyAt")
         SELECT gen_random_uuid(), $1, w.ids[1 + g % 10], w.versions[1 + g % 10], c.ids[1 + (g / 10) % 2000],
                (CASE WHEN g < 18000 THEN 'COMPLETED' WHEN g < 19500 THEN 'WAITING' WHEN g < 19800 THEN 'RUNNING' ELSE 'FAILED' END)::"ExecutionStatus",
                now() - (g || ' seconds')::interval, now(),
                CASE WHEN g < 18000 OR g >= 19800 THEN now() END,
                CASE WHEN g >= 19500 AND g < 19800 THEN now() - interval '1 hour' END
           FROM generate_series(0, 19999) g, w, c`,
        [p],
      );
    }
    await big.query(`
      UPDATE "WorkflowExecution" e SET "currentStepId" = s.id
        FROM "WorkflowStep" s
       WHERE s."versionId" = e."workflowVersionId"
         AND s.key = CASE WHEN e.status = 'WAITING' THEN 'wait' WHEN e.status = 'COMPLETED' THEN 'thanks' ELSE 'hello' END`);
    await big.query(`
      INSERT INTO "StepExecution"(id, "executionId", "stepId", status, "dueAt", "leaseExpiresAt", "startedAt", "finishedAt")
      SELECT gen_random_uuid(), e.id, e."currentStepId",
             (CASE e.status WHEN 'COMPLETED' THEN 'COMPLETED' WHEN 'WAITING' THEN 'WAITING' WHEN 'FAILED' THEN 'FAILED' ELSE 'RUNNING' END)::"StepStatus",
             CASE WHEN e.status = 'WAITING' THEN now() + ((random() - 0.2) * interval '2 days') END,
             CASE WHEN e.status = 'RUNNING' THEN now() - interval '1 hour' END,
             e."startedAt", CASE WHEN e.status IN ('COMPLETED', 'FAILED') THEN now() END
        FROM "WorkflowExecution" e`);
    await big.query('ANALYZE');
    workflowId = (await big.db.workflow.findFirstOrThrow({ where: { projectId: projects[0], name: 'wf-3' } })).id;
    // The counts come out as the data says.
    const wf = await callerFor(big.db, actorFor(projects[0]!, 'VIEWER')).workflows.get({ id: workflowId });
    expect(wf.steps.find((s) => s.key === 'wait')).toMatchObject({ waiting: 150 });
    expect(wf.steps.find((s) => s.key === 'hello')).toMatchObject({ running: 30, stuckReasons: { LEASE_EXPIRED: 30, FAILED: 20 } });
  }, 300_000);
  afterAll(async () => big?.drop());

  const shapeOf = (plan: PlanNode) => JSON.stringify(planNodes(plan).map((n) => [n['Node Type'], n['Relation Name'], n['Index Name']]));
  function expectIndexDriven(plan: PlanNode) {
    const all = planNodes(plan);
    expect(all.filter((n) => n['Node Type'] === 'Seq Scan' && BIG_TABLES.includes(n['Relation Name'] ?? '')), shapeOf(plan)).toEqual([]);
    expect(all.some((n) => n['Index Name']), shapeOf(plan)).toBe(true);
  }

  it("stuck items per (reason, workflow, step): each stuck predicate's own index", async () => {
    const plan = await explain(big.db, stuckCountsQuery({ projectId: projects[0]!, graceSeconds: 0 }));
    // This fixture has no events or emails: PostgreSQL reads their empty tables whole
    // (test/repair/stuck-explain.test.ts covers those predicates with rows in them).
    const scanned = planNodes(plan).filter((n) => n['Node Type'] === 'Seq Scan' && ['WorkflowExecution', 'StepExecution'].includes(n['Relation Name'] ?? ''));
    expect(scanned, shapeOf(plan)).toEqual([]);
  });
});
