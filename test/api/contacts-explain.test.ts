import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Prisma } from '../../server/db';
import { contactEventsQuery, contactExecutionsQuery, contactListQuery, contactMessagesQuery, type ContactFilter } from '../../server/read/contacts';
import { likePrefix } from '../../server/common/inputs';
import { actorFor, callerFor } from '../support/callers';
import { freshDatabase, type TestDatabase } from '../support/database';
import { explain, planNodes, type PlanNode } from '../support/explain';
import { createProject, stepId, versionId, waitWorkflow, workflowFrom } from '../support/fixtures';

// The contacts page and a contact's journey stay index-driven as the tables grow
// (docs/architecture.md, "Scale"): two projects of 30,000 contacts with varied data; one busy contact enrolled
// 3,000 times (an event-triggered workflow re-entering it) with an email each time and
// 3,000 tracked events, spread over the same time as 30,000 executions of others. Every plan is checked for
// sequential scans of the big tables and for the index it is meant to use.

const BIG_TABLES = ['WorkflowExecution', 'Message', 'Event', 'Contact'];
const CONTACTS = 30_000;

let t: TestDatabase;
let projectId: string;
let busyId: string;

beforeAll(async () => {
  t = await freshDatabase();
  projectId = (await createProject(t.db, 'big')).id;
  const noise = (await createProject(t.db, 'noise')).id;
  for (const [n, p] of [projectId, noise].entries()) {
    const wf = await workflowFrom(t.db, p, waitWorkflow({ name: 'orders', allowReentry: true }));
    await t.query(
      `INSERT INTO "Contact"(id, "projectId", email, data, "createdAt")
       SELECT md5($2 || 'c' || g)::uuid, $1, 'c' || g || '@example' || (g % 7) || '.com',
              jsonb_build_object('plan', (ARRAY['free', 'pro', 'team'])[1 + g % 3], 'seats', g % 50, 'city', 'city-' || (g % 997),
                                 'vip', g % 5000 = 0),
              now() - (g || ' seconds')::interval
         FROM generate_series(1, ${CONTACTS}) g`,
      [p, String(n)],
    );
    // 30,000 executions spread over the contacts, and every eleventh one the busy contact's (c1).
    await t.query(
      `INSERT INTO "WorkflowExecution"(id, "projectId", "workflowId", "workflowVersionId", "contactId", status, "startedAt", "updatedAt", "finishedAt")
       SELECT md5($3 || 'ex' || g)::uuid, $1, $2, $4, md5($3 || 'c' || (CASE WHEN g % 11 = 0 THEN 1 ELSE 1 + g % ${CONTACTS} END))::uuid,
              'COMPLETED', now() - (g || ' seconds')::interval, now(), now()
         FROM generate_series(0, 32999) g`,
      [p, wf.id, String(n), await versionId(t.db, wf.id)],
    );
    await t.query(
      `INSERT INTO "StepExecution"(id, "executionId", "stepId", status, "startedAt", "finishedAt")
       SELECT md5($2 || 'st' || g)::uuid, md5($2 || 'ex' || g)::uuid, ws.id, 'COMPLETED', now(), now()
         FROM generate_series(0, 32999) g, "WorkflowStep" ws WHERE ws.id = $1`,
      [await stepId(t.db, wf.id, 'hello'), String(n)],
    );
    await t.query(
      `INSERT INTO "Message"(id, "projectId", "executionId", "stepExecutionId", "to", subject, body, status, "createdAt")
       SELECT gen_random_uuid(), $1, md5($2 || 'ex' || g)::uuid, md5($2 || 'st' || g)::uuid, 'c@example.com', 'Hello', 'Hi', 'SENT',
              now() - (g || ' seconds')::interval
         FROM generate_series(0, 32999) g`,
      [p, String(n)],
    );
    await t.query(
      `INSERT INTO "Event"(id, "projectId", "contactId", name, "createdAt", "processedAt")
       SELECT gen_random_uuid(), $1, md5($2 || 'c' || (CASE WHEN g % 11 = 0 THEN 1 ELSE 1 + g % ${CONTACTS} END))::uuid, 'order_placed',
              now() - (g || ' seconds')::interval, now()
         FROM generate_series(0, 32999) g`,
      [p, String(n)],
    );
  }
  busyId = (await t.db.contact.findFirstOrThrow({ where: { projectId, email: 'c1@example1.com' } })).id;
  await t.query('ANALYZE');
}, 300_000);
afterAll(async () => t?.drop());

function shapeOf(plan: PlanNode): string {
  return JSON.stringify(planNodes(plan).map((n) => [n['Node Type'], n['Relation Name'], n['Index Name']]));
}

/** Under a LIMIT, no sequential scan of a big table, and one of `indexes` (any index when none is named). */
function expectIndexDriven(plan: PlanNode, { limited, indexes = [] }: { limited: boolean; indexes?: string[] }) {
  const all = planNodes(plan);
  const shape = shapeOf(plan);
  if (limited) expect(plan['Node Type'], shape).toBe('Limit');
  expect(all.filter((n) => n['Node Type'] === 'Seq Scan' && BIG_TABLES.includes(n['Relation Name'] ?? '')), shape).toEqual([]);
  if (indexes.length) expect(all.some((n) => indexes.includes(n['Index Name'] ?? '')), shape).toBe(true);
  else expect(all.some((n) => n['Index Name']), shape).toBe(true);
}

const OLD = () => ({ at: new Date(Date.now() - 20_000_000), id: 'ffffffff-ffff-ffff-ffff-ffffffffffff' });
const NEWER = () => ({ at: new Date(Date.now() - 20_000), id: '00000000-0000-0000-0000-000000000000' });

describe(`contacts.list at ${CONTACTS.toLocaleString()} contacts a project`, () => {
  // A data search is either the GIN index's matches sorted, or the newest-first walk with
  // the containment as a filter, as the planner's estimate of its rarity says; both stay
  // under the LIMIT, and the test below shows the GIN index serves the containment itself.
  const BY_DATA = ['Contact_data_idx', 'Contact_projectId_createdAt_id_idx'];
  const FILTERS: [string, () => Partial<ContactFilter>, string[]?][] = [
    ['the project', () => ({}), ['Contact_projectId_createdAt_id_idx']],
    ['an email prefix', () => ({ emailPattern: likePrefix('c123') })],
    ['a rare data value', () => ({ dataKey: 'city', dataValue: 'city-17' }), BY_DATA],
    ['a rare boolean', () => ({ dataKey: 'vip', dataValue: 'true' }), BY_DATA],
    ['a common data value', () => ({ dataKey: 'plan', dataValue: 'pro' })],
    ['a prefix and a data value', () => ({ emailPattern: likePrefix('c12'), dataKey: 'city', dataValue: 'city-5' })],
    ['a deep page', () => ({ cursor: OLD() })],
    ['a previous page', () => ({ before: NEWER() })],
    ['a data value, previous page', () => ({ dataKey: 'plan', dataValue: 'team', before: NEWER() })],
  ];
  it.each(FILTERS)('filtered by %s: index scans under a LIMIT', async (_, filter, indexes) => {
    const plan = await explain(t.db, contactListQuery({ projectId, limit: 50, ...filter() }));
    expectIndexDriven(plan, { limited: true, indexes });
    // The per-row counts come from the contact's execution index, never a scan of executions.
    expect(planNodes(plan).filter((n) => n['Relation Name'] === 'WorkflowExecution').every((n) => n['Index Name']), shapeOf(plan)).toBe(true);
  });

  it('the containment of a data search is served by the GIN (data jsonb_path_ops) index', async () => {
    for (const document of ['{"city": "city-17"}', '{"vip": true}']) {
      const plan = await explain(t.db, Prisma.sql`SELECT count(*) FROM "Contact" c WHERE c."projectId" = ${projectId}::uuid AND c.data @> ${document}::jsonb`);
      expectIndexDriven(plan, { limited: false, indexes: ['Contact_data_idx'] });
    }
  });

  it('a rare data value is found, and the answer is right', async () => {
    const page = await callerFor(t.db, actorFor(projectId, 'VIEWER')).contacts.list({ dataKey: 'city', dataValue: 'city-17', limit: 200 });
    expect(page.items.length).toBe(Math.floor((CONTACTS - 17) / 997) + 1);
    expect(page.items.every((c) => c.data.city === 'city-17')).toBe(true);
  });
});

describe('a contact with 3,000 executions, emails and events: its journey', () => {
  // A contact with a tenth of the project's executions may be read from the contact's index
  // or by walking the project's newest-first one; a typical contact (a handful) from its own.
  const QUERIES: [string, () => Prisma.Sql, string[]][] = [
    ['executions', () => contactExecutionsQuery(projectId, busyId), ['WorkflowExecution_contactId_startedAt_id_idx', 'WorkflowExecution_projectId_startedAt_id_idx']],
    ['events', () => contactEventsQuery(projectId, busyId), ['Event_contactId_createdAt_idx', 'Event_projectId_createdAt_id_idx']],
    ['messages', () => contactMessagesQuery(projectId, busyId), ['Message_executionId_idx']],
  ];
  it.each(QUERIES)('its %s: an index range under a LIMIT', async (_, query, indexes) => {
    const plan = await explain(t.db, query());
    expectIndexDriven(plan, { limited: true, indexes });
    expect(plan['Total Cost'], shapeOf(plan)).toBeLessThan(2_000);
  });

  const TYPICAL: [string, (id: string) => Prisma.Sql, string][] = [
    ['executions', (id) => contactExecutionsQuery(projectId, id), 'WorkflowExecution_contactId_startedAt_id_idx'],
    ['events', (id) => contactEventsQuery(projectId, id), 'Event_contactId_createdAt_idx'],
    ['messages', (id) => contactMessagesQuery(projectId, id), 'WorkflowExecution_contactId_startedAt_id_idx'],
  ];
  it.each(TYPICAL)("a typical contact's %s: its own index", async (_, query, index) => {
    const typical = (await t.db.contact.findFirstOrThrow({ where: { projectId, email: 'c500@example3.com' } })).id;
    const plan = await explain(t.db, query(typical));
    expectIndexDriven(plan, { limited: true, indexes: [index] });
    expect(plan['Total Cost'], shapeOf(plan)).toBeLessThan(200);
  });

  it('contacts.get brings the latest 100 of each with the counts', async () => {
    const got = await callerFor(t.db, actorFor(projectId, 'VIEWER')).contacts.get({ id: busyId });
    expect([got.executions.length, got.events.length, got.messages.length]).toEqual([100, 100, 100]);
    expect(got.executionCount).toBeGreaterThanOrEqual(3000);
    expect(got.eventCount).toBeGreaterThanOrEqual(3000);
    expect(got.messages.every((m) => got.executions.some((e) => e.id === m.executionId))).toBe(true);
  });
});
