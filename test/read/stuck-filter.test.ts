import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Prisma } from '../../server/db';
import { decodeCursor } from '../../server/read/cursor';
import { listExecutions, type ExecutionFilter, type ExecutionListRow } from '../../server/read/executions';
import { EVENT_REASONS, STUCK_REASONS, type StuckReason } from '../../server/common/stuck-reasons';
import { stuckQuery, type StuckScope } from '../../server/stuck/predicates';
import { actorFor, callerFor } from '../support/callers';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createProject, waitWorkflow, workflowFrom } from '../support/fixtures';

// executions.list({ stuck }) walks the list's order in windows and probes each execution,
// falling back to the stuck set past a window (server/read/executions/list.ts). Whichever way
// a page is read, it must hold exactly the executions the stuck predicates select read
// as a set (server/stuck/predicates.ts, as counts, groups and bulk repairs read them), in
// the list's order: checked here on a seeded mix of every reason, of states just short
// of one (within the grace, not the current step, a lease still running), of emails
// failed or unconfirmed on executions in any status, and of ties on startedAt, with
// windows small enough that every page reads both ways, forward and back.

const GRACE = 600;
let t: TestDatabase;
let projectId: string;
let workflowIds: string[];
/** Each workflow's wait step, in the workflows' order. */
let waitStepIds: string[];
let stuckContactId: string;

beforeAll(async () => {
  t = await freshDatabase();
  projectId = (await createProject(t.db, 'mix')).id;
  const noise = (await createProject(t.db, 'noise')).id;
  for (const p of [projectId, noise]) {
    for (let i = 0; i < 3; i++) await workflowFrom(t.db, p, waitWorkflow({ name: `wf-${i}` }));
    await t.query(`INSERT INTO "Contact"(id, "projectId", email) SELECT gen_random_uuid(), $1, 'c' || g || '@example.com' FROM generate_series(1, 700) g`, [p]);
    // One kind per execution (by a hash of g); startedAt in groups of three equal instants.
    await t.query(
      `WITH w AS (SELECT array_agg(w.id ORDER BY w.name) ids, array_agg(v.id ORDER BY w.name) versions
                      FROM "Workflow" w JOIN "WorkflowVersion" v ON v."workflowId" = w.id AND v.number = 1 WHERE w."projectId" = $1),
            c AS (SELECT array_agg(id ORDER BY email) ids FROM "Contact" WHERE "projectId" = $1),
            x AS (
              SELECT g, gen_random_uuid() AS id, w.ids[1 + g % 3] AS wid, w.versions[1 + g % 3] AS vid, c.ids[1 + g / 3] AS contact,
                     date_trunc('milliseconds', now()) - (g / 3) * interval '1 minute' AS started,
                     CASE WHEN b < 25 THEN 'COMPLETED' WHEN b < 31 THEN 'OVERDUE' WHEN b < 34 THEN 'OVERDUE_SOON'
                          WHEN b < 38 THEN 'WAITING' WHEN b < 42 THEN 'CONTINUATION' WHEN b < 44 THEN 'CONTINUATION_SOON'
                          WHEN b < 48 THEN 'MISSING' WHEN b < 50 THEN 'MISSING_RETRY' WHEN b < 52 THEN 'READY_SOON'
                          WHEN b < 56 THEN 'LEASE' WHEN b < 58 THEN 'LEASED' WHEN b < 60 THEN 'ELSEWHERE'
                          WHEN b < 66 THEN 'FAILED' WHEN b < 68 THEN 'FAILED_UNSTEPPED' WHEN b < 80 THEN 'CANCELLED'
                          ELSE 'EXITED' END AS kind
                FROM generate_series(1, 1800) g
                CROSS JOIN LATERAL (SELECT (g * 7919) % 100 AS b) bb, w, c)
       INSERT INTO "WorkflowExecution"(id, "projectId", "workflowId", "workflowVersionId", "contactId", status, "currentStepId", "readyAt", "startedAt", "updatedAt", "finishedAt")
       SELECT x.id, $1, x.wid, x.vid, x.contact,
              (CASE WHEN kind LIKE 'OVERDUE%' OR kind LIKE 'CONTINUATION%' OR kind = 'WAITING' THEN 'WAITING'
                    WHEN kind IN ('MISSING', 'MISSING_RETRY', 'READY_SOON', 'LEASE', 'LEASED', 'ELSEWHERE') THEN 'RUNNING'
                    WHEN kind LIKE 'FAILED%' THEN 'FAILED' ELSE kind END)::"ExecutionStatus",
              (SELECT s.id FROM "WorkflowStep" s WHERE s."versionId" = x.vid
                  AND s.key = CASE WHEN kind = 'COMPLETED' THEN 'thanks' WHEN kind = 'EXITED' THEN 'reminder'
                                   WHEN kind IN ('OVERDUE', 'OVERDUE_SOON', 'WAITING', 'CONTINUATION', 'CONTINUATION_SOON', 'ELSEWHERE', 'CANCELLED') THEN 'wait'
                                   ELSE 'hello' END),
              CASE WHEN kind IN ('MISSING', 'MISSING_RETRY', 'LEASE') THEN now() - interval '1 hour' - (g % 50) * interval '1 minute'
                   WHEN kind = 'READY_SOON' THEN now() - interval '1 minute'
                   WHEN kind IN ('LEASED', 'ELSEWHERE') THEN now() + interval '1 hour' END,
              x.started, x.started, CASE WHEN kind IN ('COMPLETED', 'EXITED', 'CANCELLED') OR kind LIKE 'FAILED%' THEN x.started + interval '1 minute' END
         FROM x`,
      [p],
    );
  }
  // Step rows: start, hello, and the wait where it is the current step. Past steps are
  // COMPLETED, except that an execution RUNNING at its wait has its earlier steps RUNNING
  // with expired leases (not its current step: no LEASE_EXPIRED). A WAITING one's wait is
  // overdue, due later, or resolved (a minute ago, within the grace, or two hours ago); a
  // FAILED one's step failed or not; a RUNNING one's current step is leased (expired or
  // not), waiting for its retry (PENDING), or missing.
  await t.query(`
    INSERT INTO "StepExecution"(id, "executionId", "stepId", status, attempt, "leaseExpiresAt", "dueAt", "resolvedBy", "resolvedAt", "startedAt", "finishedAt")
    SELECT gen_random_uuid(), e.id, s.id,
           (CASE WHEN s.id <> e."currentStepId" THEN
                   CASE WHEN e.status = 'RUNNING' AND e."currentStepId" = (SELECT id FROM "WorkflowStep" WHERE "versionId" = e."workflowVersionId" AND key = 'wait')
                        THEN 'RUNNING' ELSE 'COMPLETED' END
                 WHEN e.status = 'WAITING' THEN 'WAITING'
                 WHEN e.status = 'FAILED' THEN CASE WHEN hashtext(e.id::text) % 3 = 0 THEN 'COMPLETED' ELSE 'FAILED' END
                 WHEN e.status = 'RUNNING' THEN CASE WHEN e."readyAt" > now() OR hashtext(e.id::text) % 2 = 0 THEN 'RUNNING' ELSE 'PENDING' END
                 ELSE 'COMPLETED' END)::"StepStatus",
           1,
           -- A RUNNING execution's current step holds the lease its readyAt says; its other steps' leases ran out long ago.
           CASE WHEN e.status = 'RUNNING' THEN CASE WHEN s.id = e."currentStepId" THEN e."readyAt" ELSE now() - interval '2 hours' END END,
           CASE WHEN e.status = 'WAITING' AND s.key = 'wait' THEN now() - (hashtext(e.id::text) % 4) * interval '1 day' + interval '1 hour' END,
           CASE WHEN e.status = 'WAITING' AND s.key = 'wait' AND hashtext(e.id::text) % 5 = 0 THEN 'TIMEOUT'::"WaitResolver" END,
           CASE WHEN e.status = 'WAITING' AND s.key = 'wait' AND hashtext(e.id::text) % 5 = 0
                THEN now() - CASE WHEN hashtext(e.id::text) % 2 = 0 THEN interval '1 minute' ELSE interval '2 hours' END END,
           e."startedAt", NULL
      FROM "WorkflowExecution" e
      JOIN "WorkflowStep" s ON s."versionId" = e."workflowVersionId"
     WHERE s.key IN ('start', 'hello', 'wait') AND (s.key <> 'wait' OR e."currentStepId" = s.id)
       AND NOT (s.id = e."currentStepId" AND e."readyAt" < now() AND hashtext(e.id::text) % 2 = 0 AND e.status = 'RUNNING' AND e."readyAt" < now() - interval '1 hour' - interval '25 minutes')`);
  // Emails: most sent; some failed, some left SENDING by a dead sender (or still within
  // their lease), on executions in any status; some executions with two.
  await t.query(`
    INSERT INTO "Message"(id, "projectId", "executionId", "stepExecutionId", "to", subject, body, status, "leaseOwner", "leaseExpiresAt", "createdAt")
    SELECT gen_random_uuid(), e."projectId", e.id, s.id, 'c@example.com', 'Hello', 'Hi',
           (CASE WHEN n % 17 = 0 THEN 'FAILED' WHEN n % 19 = 0 OR n % 23 = 0 THEN 'SENDING' ELSE 'SENT' END)::"MessageStatus",
           CASE WHEN n % 19 = 0 OR n % 23 = 0 THEN 'worker:dead' END,
           CASE WHEN n % 19 = 0 THEN now() - interval '1 hour' WHEN n % 23 = 0 THEN now() + interval '1 hour' END,
           e."startedAt"
      FROM (SELECT s.*, row_number() OVER (ORDER BY s.id) AS n FROM "StepExecution" s) s
      JOIN "WorkflowExecution" e ON e.id = s."executionId"
      JOIN "WorkflowStep" ws ON ws.id = s."stepId"
     WHERE ws.key IN ('hello', 'start') AND (ws.key = 'hello' OR s.n % 29 = 0)`);
  await t.query('ANALYZE');
  waitStepIds = (
    await t.query<{ id: string }>(
      `SELECT s.id FROM "WorkflowStep" s JOIN "Workflow" w ON w.id = s."workflowId" WHERE w."projectId" = $1 AND s.key = 'wait' ORDER BY w.name`,
      [projectId],
    )
  ).map((r) => r.id);
  // A contact with a failed execution among its three, so the filter has rows to find.
  stuckContactId = (
    await t.db.$queryRaw<{ id: string }[]>`
      SELECT x."contactId" AS id FROM (${stuckQuery('FAILED', { projectId, graceSeconds: GRACE })}) x ORDER BY x."executionId" LIMIT 1`
  )[0]!.id;
  workflowIds = (await t.db.workflow.findMany({ where: { projectId }, orderBy: { name: 'asc' }, select: { id: true } })).map((w) => w.id);
}, 300_000);
afterAll(async () => t?.drop());

type Filter = Omit<ExecutionFilter, 'projectId' | 'limit' | 'contact'> & { contact?: ExecutionFilter['contact'] };

/** The executions the stuck predicates select read as a set, with the list's other filters, in the list's order. */
async function expected(f: Filter & { stuck: StuckReason[] }): Promise<string[]> {
  const scope: StuckScope = { projectId, workflowId: f.workflowId ?? null, graceSeconds: GRACE };
  const reasons = f.stuck.filter((r) => !EVENT_REASONS.includes(r));
  if (reasons.length === 0) return [];
  const stuck = Prisma.join(
    reasons.map((r) => Prisma.sql`(${stuckQuery(r, scope)})`),
    ' UNION ALL ',
  );
  const conditions = [Prisma.sql`e."projectId" = ${projectId}::uuid`, Prisma.sql`e.id IN (SELECT x."executionId" FROM (${stuck}) x)`];
  if (f.workflowId) conditions.push(Prisma.sql`e."workflowId" = ${f.workflowId}::uuid`);
  if (f.status?.length) conditions.push(Prisma.sql`e.status::text = ANY(${f.status})`);
  if (f.stepId) conditions.push(Prisma.sql`e."currentStepId" = ${f.stepId}::uuid`);
  if (f.contact && 'id' in f.contact) conditions.push(Prisma.sql`e."contactId" = ${f.contact.id}::uuid`);
  if (f.contact && 'emailPrefix' in f.contact) conditions.push(Prisma.sql`c.email LIKE ${`${f.contact.emailPrefix}%`}`);
  if (f.since) conditions.push(Prisma.sql`e."startedAt" >= ${f.since}`);
  if (f.until) conditions.push(Prisma.sql`e."startedAt" < ${f.until}`);
  const rows = await t.db.$queryRaw<{ id: string }[]>`
    SELECT e.id FROM "WorkflowExecution" e JOIN "Contact" c ON c.id = e."contactId"
     WHERE ${Prisma.join(conditions, ' AND ')}
     ORDER BY e."startedAt" DESC, e.id DESC`;
  return rows.map((r) => r.id);
}

function positionOf(cursor: string) {
  const position = decodeCursor(cursor);
  if (!position) throw new Error(`a cursor the list gave does not decode: ${cursor}`);
  return position;
}

/** Every page of the list, forward from the first page, then back from the last one. */
async function pages(f: Filter, limit: number, stuckWindow?: number): Promise<{ forward: ExecutionListRow[]; backward: string[] }> {
  const base = { projectId, contact: null, graceSeconds: GRACE, limit, stuckWindow, ...f };
  const forward: ExecutionListRow[] = [];
  let page = await listExecutions(t.db, base);
  forward.push(...page.items);
  while (page.nextCursor) {
    page = await listExecutions(t.db, { ...base, cursor: positionOf(page.nextCursor) });
    forward.push(...page.items);
  }
  const backward: string[] = [];
  const last = page;
  backward.unshift(...last.items.map((e) => e.id));
  let back = last;
  while (back.prevCursor) {
    back = await listExecutions(t.db, { ...base, before: positionOf(back.prevCursor) });
    backward.unshift(...back.items.map((e) => e.id));
  }
  return { forward, backward };
}

const EXECUTION_REASONS = STUCK_REASONS.filter((r) => !EVENT_REASONS.includes(r));

describe('executions.list({ stuck }) against the stuck predicates read as a set', () => {
  it('the seeded mix has every execution reason, and near misses of each', async () => {
    for (const reason of EXECUTION_REASONS) {
      expect((await expected({ stuck: [reason] })).length, reason).toBeGreaterThan(5);
    }
    const waiting = await t.db.workflowExecution.count({ where: { projectId, status: 'WAITING' } });
    expect((await expected({ stuck: ['WAIT_OVERDUE', 'CONTINUATION_PENDING'] })).length).toBeLessThan(waiting);
  });

  const filters: [string, () => Filter & { stuck: StuckReason[] }][] = [
    ...STUCK_REASONS.map((r): [string, () => Filter & { stuck: StuckReason[] }] => [r, () => ({ stuck: [r] })]),
    ['LEASE_EXPIRED + MISSING_STEP', () => ({ stuck: ['LEASE_EXPIRED', 'MISSING_STEP'] })],
    ['WAIT_OVERDUE + MESSAGE_FAILED', () => ({ stuck: ['WAIT_OVERDUE', 'MESSAGE_FAILED'] })],
    ['both email reasons', () => ({ stuck: ['MESSAGE_FAILED', 'MESSAGE_UNCONFIRMED'] })],
    ['every reason', () => ({ stuck: [...STUCK_REASONS] })],
    ['a workflow, every reason', () => ({ stuck: [...STUCK_REASONS], workflowId: workflowIds[1] })],
    ['a workflow, an email reason', () => ({ stuck: ['MESSAGE_FAILED'], workflowId: workflowIds[2] })],
    ['a status and an email reason', () => ({ stuck: ['MESSAGE_FAILED', 'MESSAGE_UNCONFIRMED'], status: ['COMPLETED', 'WAITING'] })],
    ['a status its reason excludes', () => ({ stuck: ['LEASE_EXPIRED'], status: ['WAITING'] })],
    ['an email prefix', () => ({ stuck: ['WAIT_OVERDUE', 'MESSAGE_UNCONFIRMED'], contact: { emailPrefix: 'c1' } })],
    ['a time window', () => ({ stuck: [...STUCK_REASONS], since: new Date(Date.now() - 300 * 60_000), until: new Date(Date.now() - 100 * 60_000) })],
    ['an empty status list', () => ({ stuck: ['FAILED', 'MESSAGE_FAILED'], status: [] })],
    ['a current step', () => ({ stuck: [...STUCK_REASONS], stepId: waitStepIds[0] })],
    ['a current step and its workflow', () => ({ stuck: ['WAIT_OVERDUE', 'MESSAGE_UNCONFIRMED'], workflowId: workflowIds[0], stepId: waitStepIds[0] })],
    ['a contact by id', () => ({ stuck: [...STUCK_REASONS], contact: { id: stuckContactId } })],
  ];

  it.each(filters)('%s: every page, forward and back, whatever the window', async (_, filter) => {
    const f = filter();
    const want = await expected(f);
    for (const window of [1, 5, 40, undefined]) {
      const { forward, backward } = await pages(f, 7, window);
      expect(forward.map((e) => e.id), `window ${window}`).toEqual(want);
      expect(backward, `window ${window}, back`).toEqual(want);
    }
  });

  it('a bulk repair over a stuck filter selects exactly the stuck set (one page of 10,000)', async () => {
    const f = { stuck: [...EXECUTION_REASONS] };
    const { forward } = await pages(f, 10_000);
    expect(forward.map((e) => e.id)).toEqual(await expected(f));
  });

  it("each listed execution's reasons are the predicates' (reason and since), through the router", async () => {
    const scope: StuckScope = { projectId, graceSeconds: GRACE };
    const all = await t.db.$queryRaw<{ reason: StuckReason; executionId: string; since: Date }[]>`
      SELECT x.reason, x."executionId", x.since FROM (${Prisma.join(
        EXECUTION_REASONS.map((r) => Prisma.sql`(${stuckQuery(r, scope)})`),
        ' UNION ALL ',
      )}) x`;
    const want = new Map<string, string[]>();
    for (const s of all) want.set(s.executionId, [...(want.get(s.executionId) ?? []), `${s.reason}@${s.since.toISOString()}`]);
    const { forward } = await pages({}, 100);
    expect(forward.length).toBe(1800);
    for (const e of forward) {
      expect(e.stuck.map((s) => `${s.reason}@${s.since.toISOString()}`).sort(), e.id).toEqual((want.get(e.id) ?? []).sort());
    }
    // The router reads the same (with the deployment's grace, which may differ): each row's reasons are a subset of the kinds above.
    const listed = await callerFor(t.db, actorFor(projectId, 'VIEWER')).executions.list({ stuck: ['MESSAGE_FAILED'], limit: 20 });
    for (const e of listed.items) expect(e.stuck.map((s) => s.reason)).toContain('MESSAGE_FAILED');
  });
});
