import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedDemo } from '../../prisma/seed';
import { Prisma } from '../../server/db';
import { createEngineContext } from '../../server/engine/context';
import { runWorkerOnce } from '../../server/engine/worker';
import { EVENT_REASONS, STUCK_REASONS, type StuckReason } from '../../server/common/stuck-reasons';
import { stuckQuery } from '../../server/stuck/predicates';
import { stuckScope } from '../../server/trpc/scope';
import { actorFor, callerFor } from '../support/callers';
import { freshDatabase, type TestDatabase } from '../support/database';

// The console's stuck filter on the demo project, as e2e/browse.spec.ts reads it: the demo
// seed, 120 more contacts enrolled in the welcome series and run by a worker (more than a
// page of executions), then executions.list({ stuck }) through the router with the
// console's own input (no limit, the deployment's grace). Each reason's rows must be the
// executions the stuck predicates select read as a set, newest first, and the failed
// legacy import alone for FAILED.

let t: TestDatabase;
let projectId: string;

beforeAll(async () => {
  t = await freshDatabase();
  await seedDemo(t.db);
  projectId = (await t.db.project.findUniqueOrThrow({ where: { name: 'demo' } })).id;
  const marketer = callerFor(t.db, actorFor(projectId, 'MARKETER'));
  const welcome = (await marketer.workflows.list()).find((w) => w.name === 'Welcome series')!;
  const contacts = Array.from({ length: 120 }, (_, i) => ({ email: `pager-${String(i).padStart(3, '0')}@e2e.test` }));
  await marketer.enrollments.enrollMany({ workflowId: welcome.id, contacts });
  const ctx = createEngineContext(t.db, { owner: 'test:demo-worker' });
  for (let i = 0; i < 5; i++) await runWorkerOnce(ctx);
});
afterAll(async () => t?.drop());

describe("the demo's stuck filters, as the console asks for them", () => {
  it('has more than a page of executions, one of them FAILED', async () => {
    expect(await t.db.workflowExecution.count({ where: { projectId } })).toBeGreaterThan(50);
    expect(await t.db.workflowExecution.count({ where: { projectId, status: 'FAILED' } })).toBe(1);
  });

  const reasons = STUCK_REASONS.filter((r) => !EVENT_REASONS.includes(r));
  it.each([...reasons.map((r) => [r, [r]] as const), ['every reason', reasons] as const])('%s: the predicates read as a set', async (_, stuck) => {
    const scope = stuckScope(projectId);
    const set = Prisma.join(
      stuck.map((r: StuckReason) => Prisma.sql`(${stuckQuery(r, scope)})`),
      ' UNION ALL ',
    );
    const want = await t.db.$queryRaw<{ id: string }[]>`
      SELECT e.id FROM "WorkflowExecution" e
       WHERE e.id IN (SELECT x."executionId" FROM (${set}) x)
       ORDER BY e."startedAt" DESC, e.id DESC LIMIT 50`;
    const listed = await callerFor(t.db, actorFor(projectId, 'OPERATOR')).executions.list({ stuck: [...stuck] });
    expect(listed.items.map((e) => e.id)).toEqual(want.map((r) => r.id));
  });

  it('FAILED lists the legacy import alone', async () => {
    const listed = await callerFor(t.db, actorFor(projectId, 'OPERATOR')).executions.list({ stuck: ['FAILED'] });
    expect(listed.items.map((e) => [e.workflowName, e.status, e.stuck.map((s) => s.reason)])).toEqual([['Legacy newsletter import', 'FAILED', ['FAILED']]]);
  });
});
