import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedDemo } from '../../prisma/seed';
import { generateApiKey } from '../../server/auth/api-keys';
import { freshDatabase, type TestDatabase } from '../support/database';
import { ROUNDS } from '../support/race';
import { startWebServer, type WebServer } from '../support/web-server';

// Idempotency-Key under real concurrency: 20 identical POSTs with one key sent at once to
// the product's web server (each its own HTTP connection, so its own database session in
// the server's pool) make exactly one write; every other answer is the first answer
// replayed or 409 idempotency-in-progress, never a second write or a 500. The claim's
// ON CONFLICT is what decides (scripts/guard-mutations/api.ts removes it).

const PARALLEL = 20;
/** Each round is 20 HTTP requests and more: fewer rounds than the in-process races. */
const RACE_ROUNDS = Math.min(ROUNDS, 10);

let t: TestDatabase;
let server: WebServer | undefined;
let workflowId = '';
let apiKey = '';

beforeAll(async () => {
  t = await freshDatabase();
  await seedDemo(t.db);
  const demo = await t.db.project.findUniqueOrThrow({ where: { name: 'demo' } });
  workflowId = (await t.db.workflow.findFirstOrThrow({ where: { projectId: demo.id, name: 'Welcome series' } })).id;
  const key = generateApiKey();
  await t.db.apiKey.create({ data: { projectId: demo.id, name: 'idempotency race', role: 'MARKETER', prefix: key.prefix, hashedSecret: key.hashedSecret } });
  apiKey = key.secret;
  server = await startWebServer(t.url, { RATE_LIMIT_PER_KEY: '0', RATE_LIMIT_PER_ADDRESS: '0', RATE_LIMIT_PER_SESSION: '0' });
}, 900_000);

afterAll(async () => {
  await server?.stop();
  await t?.drop();
});

interface Answer {
  status: number;
  type: string | null;
  body: string;
  replayed: boolean;
}

async function post(path: string, body: unknown, key: string): Promise<Answer> {
  const res = await fetch(`${server!.base}/api/v1${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}`, 'idempotency-key': key, connection: 'close' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let type: string | null = null;
  if (res.status >= 400) type = (JSON.parse(text) as { type?: string }).type ?? null;
  return { status: res.status, type, body: text, replayed: res.headers.get('idempotent-replayed') === 'true' };
}

/** One answer ran the request; each of the others replays it or is 409 in progress. */
function expectOneRun(answers: Answer[]): Answer {
  const first = answers.filter((a) => a.status === 200 && !a.replayed);
  expect(first, JSON.stringify(answers.map((a) => `${a.status} ${a.type ?? ''}`))).toHaveLength(1);
  for (const a of answers) {
    if (a === first[0]) continue;
    if (a.status === 409) expect(a.type).toBe('/problems/idempotency-in-progress');
    else expect({ status: a.status, body: a.body, replayed: a.replayed }).toEqual({ status: 200, body: first[0]!.body, replayed: true });
  }
  return first[0]!;
}

describe('Idempotency-Key under concurrency', () => {
  it(`${PARALLEL} parallel identical enrollments with one key: exactly one execution, the others the first answer or 409`, async () => {
    for (let round = 0; round < RACE_ROUNDS; round++) {
      const email = `race-${randomUUID()}@example.com`;
      const key = `enroll-${randomUUID()}`;
      const answers = await Promise.all(Array.from({ length: PARALLEL }, () => post('/enrollments', { workflowId, email }, key)));
      const first = expectOneRun(answers);
      const executions = await t.query<{ id: string }>(`SELECT e.id FROM "WorkflowExecution" e JOIN "Contact" c ON c.id = e."contactId" WHERE c.email = $1`, [email]);
      expect(executions.map((e) => e.id)).toEqual([(JSON.parse(first.body) as { executionId: string }).executionId]);
      expect(await t.query(`SELECT 1 FROM "AuditEntry" WHERE action = 'enrollments.enroll' AND "targetId" = $1`, [executions[0]!.id])).toHaveLength(1);
    }
  }, 300_000);

  it(`${PARALLEL} parallel identical contact upserts and events with one key each: one contact write and one event`, async () => {
    for (let round = 0; round < RACE_ROUNDS; round++) {
      const email = `race-${randomUUID()}@example.com`;
      const upsertKey = `contact-${randomUUID()}`;
      const contacts = await Promise.all(Array.from({ length: PARALLEL }, () => post('/contacts', { email, data: { round } }, upsertKey)));
      const first = expectOneRun(contacts);
      expect(JSON.parse(first.body)).toMatchObject({ email, created: true });
      const contactId = (JSON.parse(first.body) as { id: string }).id;
      expect(await t.query(`SELECT 1 FROM "AuditEntry" WHERE action = 'contacts.upsert' AND "targetId" = $1`, [contactId])).toHaveLength(1);

      // An event has no key in its body: only the header keeps the retries from being stored again.
      const eventKey = `event-${randomUUID()}`;
      const events = await Promise.all(Array.from({ length: PARALLEL }, () => post('/events', { name: 'race_event', email, data: { round } }, eventKey)));
      expectOneRun(events);
      expect(await t.query(`SELECT 1 FROM "Event" WHERE name = 'race_event' AND "contactId" = $1`, [contactId])).toHaveLength(1);
    }
  }, 300_000);
});
