import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Prisma, type RawDb } from '../../server/db';
import {
  removeAuditEntries,
  removeEvents,
  removeExecutions,
  removeWebhookMessages,
  START,
  type BatchScope,
  type Cursor,
} from '../../server/retention/batches';
import { freshDatabase, type TestDatabase } from '../support/database';
import { explain, planNodes, type PlanNode } from '../support/explain';
import { createProject } from '../support/fixtures';
import { seedFinished } from '../support/retention';

// Every batch of a retention sweep is read from an index, whatever the tables' size
// (docs/deploy.md, "Retention"): 60,000 finished executions with their step rows and
// emails, 40,000 events and 40,000 audit entries over two projects, then EXPLAIN of each
// batch statement, at the start of its walk and half way through: no sequential scan of a
// big table, and the walk's own index drives it.

let t: TestDatabase;
let projectId: string;
let endpointId: string;
const BIG_TABLES = ['WorkflowExecution', 'StepExecution', 'Event', 'Message', 'AuditEntry', 'WebhookMessage'];

beforeAll(async () => {
  t = await freshDatabase();
  projectId = (await createProject(t.db, 'big')).id;
  const noise = (await createProject(t.db, 'noise')).id;
  for (const p of [projectId, noise]) {
    await seedFinished(t, t.db, p, 20_000, 40);
    await seedFinished(t, t.db, p, 10_000, 5);
    await t.query(
      `INSERT INTO "Event" ("projectId", "contactId", name, "createdAt", "processedAt", "nextDispatchAt", "dispatchAttempts")
       SELECT $1, c.ids[1 + g % 1000], 'page_view', now() - (g % 60) * interval '1 day', now() - (g % 60) * interval '1 day', now(), 1
         FROM generate_series(1, 20000) g, (SELECT array_agg(id) AS ids FROM "Contact" WHERE "projectId" = $1) c`,
      [p],
    );
    await t.query(
      `INSERT INTO "AuditEntry" ("projectId", actor, action, "targetType", "targetId", outcome, at)
       SELECT $1, 'system', 'contacts.upsert', 'contact', gen_random_uuid()::text, 'APPLIED', now() - (g % 60) * interval '1 day'
         FROM generate_series(1, 20000) g`,
      [p],
    );
  }
  const endpoint = await t.db.webhookEndpoint.create({ data: { projectId, url: 'https://hooks.example.com/x', eventTypes: ['event.dead'], secret: 'whsec_x' } });
  endpointId = endpoint.id;
  await t.query(
    `INSERT INTO "WebhookMessage" ("projectId", "endpointId", "eventType", payload, status, "createdAt")
     SELECT $1, $2, 'event.dead', '{}', 'DELIVERED', now() - (g % 60) * interval '1 day' FROM generate_series(1, 20000) g`,
    [projectId, endpointId],
  );
  await t.query('ANALYZE');
}, 300_000);
afterAll(async () => {
  await t.drop();
});

/** The statement a batch would send, without sending it. */
async function statementOf(batch: (db: RawDb) => Promise<unknown>): Promise<Prisma.Sql> {
  let sql: Prisma.Sql | null = null;
  const take = (strings: TemplateStringsArray, ...values: unknown[]) => {
    sql = Prisma.sql(strings, ...values);
    return Promise.resolve([{ seen: 0, lastAt: null, lastId: null }]);
  };
  await batch({ $queryRaw: take, $executeRaw: take } as unknown as RawDb);
  if (!sql) throw new Error('the batch sent no statement');
  return sql;
}

const seqScans = (plan: PlanNode) =>
  planNodes(plan).filter((n) => n['Node Type'] === 'Seq Scan' && BIG_TABLES.includes(n['Relation Name'] ?? '')).map((n) => n['Relation Name']);
const indexes = (plan: PlanNode) => planNodes(plan).map((n) => n['Index Name']).filter(Boolean);

async function halfWay(table: string, column: string): Promise<Cursor> {
  const [row] = await t.query(
    `SELECT "${column}" AS at, id FROM "${table}" WHERE "projectId" = $1 AND "${column}" < now() - interval '30 days' ORDER BY "${column}", id OFFSET 5000 LIMIT 1`,
    [projectId],
  );
  return { at: (row.at as Date).toISOString(), id: row.id };
}

describe('the batches stay index-driven at scale', () => {
  const scope = (): BatchScope => ({ projectId, cutoff: new Date(Date.now() - 30 * 86_400_000), graceSeconds: 120, limit: 500 });

  it.each([
    ['removeExecutions', 'WorkflowExecution', 'finishedAt', 'WorkflowExecution_retention_idx'],
    ['removeEvents', 'Event', 'createdAt', 'Event_projectId_createdAt_id_idx'],
    ['removeAuditEntries', 'AuditEntry', 'at', 'AuditEntry_projectId_at_id_idx'],
    ['removeWebhookMessages', 'WebhookMessage', 'createdAt', 'WebhookMessage_endpointId_createdAt_id_idx'],
  ])('%s walks %s by its index, and scans no big table', async (name, table, column, index) => {
    const batches: Record<string, (db: RawDb, after: Cursor) => Promise<unknown>> = {
      removeExecutions: (db, after) => removeExecutions(db, scope(), after),
      removeEvents: (db, after) => removeEvents(db, scope(), after),
      removeAuditEntries: (db, after) => removeAuditEntries(db, scope(), after),
      removeWebhookMessages: (db, after) => removeWebhookMessages(db, { ...scope(), endpointId }, after),
    };
    for (const after of [START, await halfWay(table, column)]) {
      const plan = await explain(t.db, await statementOf((db) => batches[name]!(db, after)));
      if (process.env.SHOW_PLANS) console.log(name, JSON.stringify(plan, (k, v) => (['Node Type', 'Relation Name', 'Index Name', 'Plans', 'Alias', 'Index Cond', 'Filter', 'Plan Rows'].includes(k) || /^\d+$/.test(k) || k === '' ? v : undefined), 1));
      expect(seqScans(plan), `${name} from ${after.at}`).toEqual([]);
      expect(indexes(plan), `${name} from ${after.at}`).toContain(index);
    }
  });
});
