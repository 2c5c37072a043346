import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Prisma } from '../../server/db';
import { auditListQuery, type AuditFilter } from '../../server/read/audit';
import { eventListQuery, resumedByEventsQuery, startedByEventsQuery, type EventFilter } from '../../server/read/events';
import { stuckOfExecutionsQuery } from '../../server/read/executions';
import { deliverableEventsQuery } from '../../server/repair/actions';
import { awaitingMessagesQuery } from '../../server/repair/messages';
import { actorFor, callerFor } from '../support/callers';
import { freshDatabase, type TestDatabase } from '../support/database';
import { explain, planNodes, type PlanNode } from '../support/explain';
import { createProject, waitWorkflow, workflowFrom } from '../support/fixtures';

// The console's other reads stay index range scans as the tables grow (docs/architecture.md, "Scale"):
// the events page (and what each event started or resumed), the audit log with each of its
// filters, and the stuck reasons of one page of executions. Two projects of 30,000
// executions (each with its step rows and an email), 30,000 events and 30,000 audit
// entries; every plan is checked for sequential scans of those tables.

const BIG_TABLES = ['WorkflowExecution', 'StepExecution', 'Message', 'Event', 'AuditEntry', 'Contact'];

let t: TestDatabase;
let projectId: string;
let contactId: string;
let eventIds: string[];
let executionIds: string[];

beforeAll(async () => {
  t = await freshDatabase();
  projectId = (await createProject(t.db, 'big')).id;
  const noise = (await createProject(t.db, 'noise')).id;
  for (const [n, p] of [projectId, noise].entries()) {
    for (let i = 0; i < 20; i++) await workflowFrom(t.db, p, waitWorkflow({ name: `wf-${i}`, allowReentry: true }));
    await t.query(
      `INSERT INTO "Contact"(id, "projectId", email) SELECT gen_random_uuid(), $1, 'c' || g || '@example.com' FROM generate_series(1, 2500) g`,
      [p],
    );
    // Ids derived from g and the project, so the rows can point at each other.
    await t.query(
      `WITH c AS (SELECT array_agg(id ORDER BY id) ids FROM "Contact" WHERE "projectId" = $1)
       INSERT INTO "Event"(id, "projectId", "contactId", name, "createdAt", "processedAt", "deadAt", "dispatchAttempts", "lastError")
       SELECT md5($2 || 'ev' || g)::uuid, $1, c.ids[1 + g % 2500],
              CASE WHEN g % 1000 = 0 THEN 'rare_event' ELSE (ARRAY['purchase', 'cart_abandoned', 'order_placed', 'signup'])[1 + g % 4] END,
              now() - (g || ' seconds')::interval,
              CASE WHEN g % 100 <> 0 THEN now() - (g || ' seconds')::interval END,
              CASE WHEN g % 200 = 0 THEN now() END,
              CASE WHEN g % 100 = 0 THEN 3 ELSE 1 END,
              CASE WHEN g % 100 = 0 THEN 'boom' END
         FROM generate_series(0, 29999) g, c`,
      [p, String(n)],
    );
    await t.query(
      `WITH w AS (SELECT array_agg(w.id ORDER BY w.id) ids, array_agg(v.id ORDER BY w.id) versions
                    FROM "Workflow" w JOIN "WorkflowVersion" v ON v."workflowId" = w.id AND v.number = 1 WHERE w."projectId" = $1),
            c AS (SELECT array_agg(id ORDER BY id) ids FROM "Contact" WHERE "projectId" = $1)
       INSERT INTO "WorkflowExecution"(id, "projectId", "workflowId", "workflowVersionId", "contactId", status, "sourceEventId", "startedAt", "updatedAt", "finishedAt")
       SELECT md5($2 || 'ex' || g)::uuid, $1, w.ids[1 + g % 20], w.versions[1 + g % 20], c.ids[1 + (g / 20) % 2500],
              (CASE WHEN g < 27000 THEN 'COMPLETED' WHEN g < 29500 THEN 'WAITING' ELSE 'FAILED' END)::"ExecutionStatus",
              CASE WHEN g % 3 = 0 THEN md5($2 || 'ev' || g)::uuid END,
              now() - (g || ' seconds')::interval, now(), CASE WHEN g < 27000 OR g >= 29500 THEN now() END
         FROM generate_series(0, 29999) g, w, c`,
      [p, String(n)],
    );
    // Every execution sent its hello email; the waiting ones wait, the completed ones were resumed by an event.
    await t.query(
      `INSERT INTO "StepExecution"(id, "executionId", "stepId", status, "startedAt", "finishedAt")
       SELECT md5($1 || 'sh' || g)::uuid, e.id, ws.id, 'COMPLETED', e."startedAt", e."startedAt"
         FROM generate_series(0, 29999) g
         JOIN "WorkflowExecution" e ON e.id = md5($1 || 'ex' || g)::uuid
         JOIN "WorkflowStep" ws ON ws."versionId" = e."workflowVersionId" AND ws.key = 'hello'`,
      [String(n)],
    );
    await t.query(
      `INSERT INTO "StepExecution"(id, "executionId", "stepId", status, "dueAt", "resolvedBy", "resolvedAt", "resolvedBranch", "resumeEventId", "startedAt")
       SELECT md5($1 || 'sw' || g)::uuid, e.id, ws.id,
              (CASE WHEN e.status = 'WAITING' THEN 'WAITING' ELSE 'COMPLETED' END)::"StepStatus",
              now() + interval '1 hour',
              CASE WHEN e.status = 'COMPLETED' THEN 'EVENT'::"WaitResolver" END,
              CASE WHEN e.status = 'COMPLETED' THEN now() END,
              CASE WHEN e.status = 'COMPLETED' THEN 'EVENT' END,
              CASE WHEN e.status = 'COMPLETED' AND g % 3 = 1 THEN md5($1 || 'ev' || g)::uuid END,
              e."startedAt"
         FROM generate_series(0, 29999) g
         JOIN "WorkflowExecution" e ON e.id = md5($1 || 'ex' || g)::uuid
         JOIN "WorkflowStep" ws ON ws."versionId" = e."workflowVersionId" AND ws.key = 'wait'
        WHERE e.status <> 'FAILED'`,
      [String(n)],
    );
    await t.query(
      `UPDATE "WorkflowExecution" e SET "currentStepId" = ws.id
         FROM "WorkflowStep" ws WHERE ws."versionId" = e."workflowVersionId" AND ws.key = 'wait' AND e.status = 'WAITING' AND e."projectId" = $1`,
      [p],
    );
    await t.query(
      `INSERT INTO "Message"(id, "projectId", "executionId", "stepExecutionId", "to", subject, body, status, "createdAt")
       SELECT gen_random_uuid(), $1, s."executionId", s.id, 'c@example.com', 'Hello', 'Hi',
              (CASE WHEN g % 500 = 0 THEN 'FAILED' ELSE 'SENT' END)::"MessageStatus", s."startedAt"
         FROM generate_series(0, 29999) g JOIN "StepExecution" s ON s.id = md5($2 || 'sh' || g)::uuid`,
      [p, String(n)],
    );
    await t.query(
      `INSERT INTO "AuditEntry"(id, "projectId", actor, action, "targetType", "targetId", outcome, at)
       SELECT gen_random_uuid(), $1, 'user:u' || (g % 5),
              (ARRAY['enrollments.enroll', 'events.track', 'repair.CANCEL', 'workflows.create'])[1 + g % 4],
              'execution', md5($2 || 'ex' || (g / 3))::uuid::text,
              (CASE WHEN g % 3000 = 0 THEN 'FAILED' WHEN g % 300 = 0 THEN 'LOST' WHEN g % 50 = 0 THEN 'REJECTED' ELSE 'APPLIED' END)::"AuditOutcome",
              now() - (g || ' seconds')::interval
         FROM generate_series(0, 29999) g`,
      [p, String(n)],
    );
  }
  contactId = (await t.db.contact.findFirstOrThrow({ where: { projectId, email: 'c7@example.com' } })).id;
  eventIds = (await t.db.event.findMany({ where: { projectId }, orderBy: { createdAt: 'desc' }, take: 50, select: { id: true } })).map((e) => e.id);
  executionIds = (
    await t.db.workflowExecution.findMany({ where: { projectId, status: 'WAITING' }, orderBy: { startedAt: 'desc' }, take: 50, select: { id: true } })
  ).map((e) => e.id);
  await t.query('ANALYZE');
}, 300_000);
afterAll(async () => t?.drop());

function shapeOf(plan: PlanNode): string {
  return JSON.stringify(planNodes(plan).map((n) => [n['Node Type'], n['Relation Name'], n['Index Name']]));
}

function expectIndexDriven(plan: PlanNode, { limited }: { limited: boolean }) {
  const all = planNodes(plan);
  const shape = shapeOf(plan);
  if (limited) expect(plan['Node Type'], shape).toBe('Limit');
  expect(all.filter((n) => n['Node Type'] === 'Seq Scan' && BIG_TABLES.includes(n['Relation Name'] ?? '')), shape).toEqual([]);
  expect(all.some((n) => n['Index Name']), shape).toBe(true);
}

const OLD = () => ({ at: new Date(Date.now() - 20_000_000), id: 'ffffffff-ffff-ffff-ffff-ffffffffffff' });
const NEWER = () => ({ at: new Date(Date.now() - 20_000), id: '00000000-0000-0000-0000-000000000000' });

describe('events.list at 30,000 events a project', () => {
  const FILTERS: [string, () => Partial<EventFilter>][] = [
    ['the project', () => ({})],
    ['a name', () => ({ name: 'rare_event' })],
    ['dead letters', () => ({ state: ['dead'] })],
    ['pending and retrying', () => ({ state: ['pending', 'retrying'] })],
    ['processed', () => ({ state: ['processed'] })],
    ['a contact', () => ({ contactId })],
    ['a deep page', () => ({ cursor: OLD() })],
    ['a previous page', () => ({ before: NEWER() })],
    ['a name, previous page', () => ({ name: 'purchase', before: NEWER() })],
  ];
  it.each(FILTERS)('filtered by %s: an index scan under a LIMIT', async (_, filter) => {
    expectIndexDriven(await explain(t.db, eventListQuery({ projectId, limit: 50, ...filter() })), { limited: true });
  });

  it('what one page of events started and resumed: lookups by event id', async () => {
    for (const query of [startedByEventsQuery(projectId, eventIds), resumedByEventsQuery(projectId, eventIds)] as Prisma.Sql[]) {
      const plan = await explain(t.db, query);
      expectIndexDriven(plan, { limited: false });
      expect(plan['Total Cost'], shapeOf(plan)).toBeLessThan(2_000);
    }
  });

  it('a page names what each event started and resumed, and dead letters say why', async () => {
    const caller = callerFor(t.db, actorFor(projectId, 'VIEWER'));
    const page = await caller.events.list({ limit: 30 });
    expect(page.items).toHaveLength(30);
    expect(page.items.find((e) => e.started.length > 0)?.started[0]?.workflowName).toMatch(/^wf-/);
    const dead = await caller.events.list({ state: ['dead'], limit: 5 });
    expect(dead.items.every((e) => e.state === 'dead' && e.lastError === 'boom')).toBe(true);
  });
});

describe('audit.list at 30,000 entries a project', () => {
  const FILTERS: [string, () => Partial<AuditFilter>][] = [
    ['the project', () => ({})],
    ['a target', () => ({ targetId: executionIds[0] })],
    ['an actor', () => ({ actor: 'user:u3' })],
    ['an action', () => ({ action: 'repair.CANCEL' })],
    ['a rare outcome', () => ({ outcome: ['FAILED'] })],
    ['two outcomes', () => ({ outcome: ['LOST', 'FAILED'] })],
    ['a time window', () => ({ since: new Date(Date.now() - 7_200_000), until: new Date(Date.now() - 3_600_000) })],
    ['a deep page', () => ({ cursor: OLD() })],
    ['a previous page', () => ({ before: NEWER() })],
    ['an actor, previous page', () => ({ actor: 'user:u1', before: NEWER() })],
  ];
  it.each(FILTERS)('filtered by %s: an index scan under a LIMIT, for owners and for the others (who do not see members and keys)', async (_, filter) => {
    for (const owner of [true, false]) {
      expectIndexDriven(await explain(t.db, auditListQuery({ projectId, limit: 50, owner, ...filter() })), { limited: true });
    }
  });

  it('paging forward and back returns the same pages', async () => {
    const caller = callerFor(t.db, actorFor(projectId, 'VIEWER'));
    const first = await caller.audit.list({ limit: 40, outcome: ['APPLIED'] });
    const second = await caller.audit.list({ limit: 40, outcome: ['APPLIED'], cursor: first.nextCursor! });
    const back = await caller.audit.list({ limit: 40, outcome: ['APPLIED'], before: second.prevCursor! });
    expect(back.items.map((a) => a.id)).toEqual(first.items.map((a) => a.id));
    expect(back.prevCursor).toBeNull();
  });
});

describe('the stuck reasons of one page of executions', () => {
  it('are lookups by execution id in every predicate, never a scan', async () => {
    const plan = await explain(t.db, stuckOfExecutionsQuery({ projectId, graceSeconds: 0 }, executionIds.map((id) => ({ id, status: 'WAITING' }))));
    expectIndexDriven(plan, { limited: false });
    expect(plan['Total Cost'], shapeOf(plan)).toBeLessThan(5_000);
  });
});

describe('the repair panel of one execution (repair.options)', () => {
  it("DELIVER_EVENT's candidates: a backward range of the contact's events, under a LIMIT", async () => {
    const plan = await explain(t.db, deliverableEventsQuery(projectId, contactId, 'purchase'));
    expectIndexDriven(plan, { limited: true });
    expect(plan['Total Cost'], shapeOf(plan)).toBeLessThan(1_000);
  });

  it('the emails waiting for an operator: a lookup by execution id', async () => {
    const plan = await explain(t.db, awaitingMessagesQuery(projectId, executionIds[0]!));
    expectIndexDriven(plan, { limited: false });
    expect(plan['Total Cost'], shapeOf(plan)).toBeLessThan(100);
  });
});
