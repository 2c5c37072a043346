import { randomUUID } from 'node:crypto';
import { TRPCError } from '@trpc/server';
import { getHTTPStatusCodeFromError } from '@trpc/server/http';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngineContext } from '../../server/engine/context';
import { runWorkerOnce } from '../../server/engine/worker';
import { appRouter } from '../../server/trpc/root';
import type { Actor } from '../../server/auth/actor';
import { actorFor, callerFor } from '../support/callers';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createProject, waitWorkflow, workflowFrom } from '../support/fixtures';

// Arbitrary input at every procedure of the router (enumerated from the router itself, so
// a new procedure cannot escape): the answer is a success or a 4xx tRPC error, never a
// 500. An input the schema refuses (BAD_REQUEST) writes nothing at all; a well-formed call
// refused by the domain (NOT_FOUND, CONFLICT, PRECONDITION_FAILED) writes only the audit
// entry recording the refused attempt (I8). And text full of SQL and HTML metacharacters
// is stored and read back exactly as sent.

let t: TestDatabase;
let owner: Actor;
/** Ids that exist, so generated inputs sometimes get past "not found" into deeper code. */
const known: Record<string, string> = {};

beforeAll(async () => {
  t = await freshDatabase();
  const projectId = (await createProject(t.db)).id;
  const otherProjectId = (await createProject(t.db)).id;
  owner = actorFor(projectId, 'OWNER');
  const caller = callerFor(t.db, owner);
  const wf = await workflowFrom(t.db, projectId, waitWorkflow({ name: 'seeded' }));
  const { executionId } = await caller.enrollments.enroll({ workflowId: wf.id, email: 'seed@example.com' });
  await runWorkerOnce(createEngineContext(t.db));
  const step = await t.db.stepExecution.findFirstOrThrow({ where: { executionId, status: 'WAITING' } });
  const { eventId } = await caller.events.track({ name: 'seeded', email: 'seed@example.com' });
  const foreign = await workflowFrom(t.db, otherProjectId, waitWorkflow({ name: 'foreign' }));
  Object.assign(known, {
    workflowId: wf.id,
    executionId,
    stepExecutionId: step.id,
    contactId: (await t.db.workflowExecution.findUniqueOrThrow({ where: { id: executionId } })).contactId,
    eventId,
    foreignWorkflowId: foreign.id,
    projectId,
  });
});
afterAll(async () => t?.drop());

/** Rows in every table of the schema, in one query. */
async function rowCounts(): Promise<Record<string, number>> {
  const tables = await t.query<{ table_name: string }>(
    `SELECT table_name FROM information_schema.tables
      WHERE table_schema = 'public' AND table_type = 'BASE TABLE' AND table_name <> '_prisma_migrations'
      ORDER BY table_name`,
  );
  const sql = tables.map(({ table_name }) => `SELECT '${table_name}' AS name, count(*)::int AS n FROM "${table_name}"`).join(' UNION ALL ');
  const rows = await t.query<{ name: string; n: number }>(sql);
  return Object.fromEntries(rows.map((r) => [r.name, r.n]));
}

function nested(depth: number, leaf: unknown, asArray = false): unknown {
  let value = leaf;
  for (let i = 0; i < depth; i++) value = asArray ? [value] : { a: value };
  return value;
}

/** Values that have broken servers before: type confusion, extremes, unstorable text, deep nesting. */
const HOSTILE: unknown[] = [
  undefined,
  null,
  '',
  ' ',
  '\u0000',
  'a\u0000b@example.com',
  '\uD800',
  'x\uDFFFy',
  'x'.repeat(100_000),
  `'; DROP TABLE "Contact"; --`,
  '<script>alert(1)</script>',
  '../../etc/passwd',
  '%',
  '_',
  '\\',
  -1,
  0,
  -0,
  1.5,
  2 ** 31,
  2 ** 53 + 1,
  1e308,
  -1e308,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  true,
  [],
  {},
  [[[[[[[[[]]]]]]]]],
  nested(6, 1),
  nested(60, 'deep'),
  nested(10_000, 'deeper'),
  nested(10_000, 0, true),
  JSON.parse('{"__proto__": {"polluted": true}}'),
  JSON.parse('{"constructor": {"prototype": {"polluted": true}}}'),
  JSON.parse('{"a": {"__proto__": {"polluted": true}}}'),
  Object.create(null),
  new Date(Number.NaN),
  new Date(-8.64e15),
  new Date(8.64e15),
  new Date('2026-01-01T00:00:00Z'),
  '2026-01-01T00:00:00Z',
  '0001-01-01T00:00:00Z',
  Array.from({ length: 10_001 }, () => ({ email: 'x' })),
  Array.from({ length: 300 }, (_, i) => i),
];

/** Plausible values, so some inputs pass the schema and exercise the handlers. */
const PLAUSIBLE = (): unknown[] => [
  ...Object.values(known),
  randomUUID(),
  '00000000-0000-0000-0000-000000000000',
  'seed@example.com',
  'Someone@Example.com',
  'purchase',
  'EVENT',
  'TIMEOUT',
  'MANUAL',
  'RUNNING',
  'WAITING',
  'FAILED',
  'WAIT_OVERDUE',
  'EVENT_DEAD',
  'CANCEL',
  'FORCE_TIMEOUT',
  'REDRIVE_EVENT',
  'OWNER',
  'VIEWER',
  'a reason long enough',
  'email,plan\nx@example.com,pro\nbroken,free\n',
  { plan: 'pro', nested: { ok: true } },
  [{ email: 'bulk@example.com' }, { email: 'nope' }, 7],
  1,
  50,
  200,
  201,
  false,
];

const FIELD_NAMES = [
  'id', 'email', 'data', 'search', 'cursor', 'limit', 'name', 'description', 'trigger', 'triggerEvent', 'allowReentry',
  'enabled', 'steps', 'transitions', 'workflowId', 'contactId', 'context', 'contacts', 'csv', 'idempotencyKey',
  'stepExecutionId', 'outcome', 'eventId', 'expectedVersion', 'status', 'stuck', 'contact', 'since', 'until', 'reason',
  'action', 'executionId', 'filter', 'dryRun', 'targetId', 'actor', 'role', 'userId', '__proto__', 'constructor',
];

function valueArbitrary(): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...PLAUSIBLE()) },
    { weight: 2, arbitrary: fc.constantFrom(...HOSTILE) },
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
    { weight: 1, arbitrary: fc.integer() },
  );
}

function inputArbitrary(path: string): fc.Arbitrary<unknown> {
  const value = valueArbitrary();
  const shaped = fc.dictionary(fc.constantFrom(...FIELD_NAMES), value, { maxKeys: 7 });
  const nestedShapes = fc.record({ filter: shaped, contacts: fc.array(fc.oneof(shaped, value), { maxLength: 5 }), steps: fc.array(shaped, { maxLength: 4 }) }, { requiredKeys: [] });
  const mutation = mutationArbitrary(path, value);
  return fc.oneof(
    ...(mutation ? [{ weight: 6, arbitrary: mutation }] : []),
    { weight: 4, arbitrary: shaped },
    { weight: 1, arbitrary: fc.tuple(shaped, nestedShapes).map(([a, b]) => ({ ...a, ...b })) },
    { weight: 1, arbitrary: fc.jsonValue() },
    { weight: 1, arbitrary: fc.constantFrom(...HOSTILE) },
  );
}

/** A valid input per procedure: mutating one of its fields reaches deeper than random shapes. */
function baselines(): Record<string, unknown> {
  return {
    'contacts.upsert': { email: 'base@example.com', data: { plan: 'pro' } },
    'contacts.list': { search: 'se', limit: 10 },
    'contacts.get': { id: known.contactId },
    'contacts.update': { id: known.contactId, data: { plan: 'pro' }, expectedUpdatedAt: '2026-01-01T00:00:00.000Z' },
    'contacts.setSubscribed': { id: known.contactId, subscribed: true },
    'workflows.get': { id: known.workflowId },
    'workflows.create': waitWorkflow({ name: 'base workflow' }),
    'workflows.setEnabled': { id: known.workflowId, enabled: true },
    'enrollments.enroll': { workflowId: known.workflowId, email: 'base@example.com', context: { a: 1 } },
    'enrollments.enrollMany': { workflowId: known.workflowId, contacts: [{ email: 'bulk@example.com', data: { a: 1 } }] },
    'enrollments.importCsv': { workflowId: known.workflowId, csv: 'email,plan\ncsv@example.com,pro\n' },
    'events.track': { name: 'base', email: 'base@example.com', data: { a: 1 }, idempotencyKey: 'base-key' },
    'waits.resolve': { stepExecutionId: known.stepExecutionId, outcome: 'EVENT', expectedVersion: 999 },
    'executions.list': { workflowId: known.workflowId, status: ['WAITING'], stuck: ['WAIT_OVERDUE'], contact: 'seed', limit: 5 },
    'executions.get': { id: known.executionId },
    'executions.stats': { workflowId: known.workflowId },
    'overview.throughput': { minutes: 60 },
    'overview.recentFailures': { limit: 10 },
    'repair.stuck': { reason: 'WAIT_OVERDUE', workflowId: known.workflowId, limit: 5 },
    'repair.preview': { executionId: known.executionId, action: 'CANCEL' },
    'repair.applyOne': { executionId: known.executionId, action: 'CANCEL', expectedVersion: 999, reason: 'property test' },
    'repair.applyMany': { filter: { executionIds: [known.executionId] }, action: 'CANCEL', reason: 'property test', dryRun: true },
    'audit.list': { targetId: known.executionId, limit: 5 },
    'templates.preview': { subject: 'Hi {{contact.firstName | upcase}}', body: '{% if contact.plan %}{{contact.plan}}{% endif %}', contactId: known.contactId },
    'templates.testSend': { subject: 'Hi {{contact.firstName}}', body: 'Body {{contact.email}}', contactId: known.contactId },
    'apiKeys.create': { name: 'property key', role: 'VIEWER' },
    'apiKeys.revoke': { id: randomUUID() },
    'members.add': { email: 'member@example.com', role: 'VIEWER' },
    'members.revokeInvitation': { id: randomUUID() },
    'invitations.accept': { id: randomUUID() },
    'invitations.decline': { id: randomUUID() },
    'invitations.createAccount': { token: 'A'.repeat(43), name: 'Member', password: 'a long enough password' },
    'members.setRole': { userId: 'no-such-user', role: 'VIEWER' },
    'members.remove': { userId: 'no-such-user' },
  };
}

/** Every path into a value, down to `depth` levels: where a mutation may land. */
function pathsOf(value: unknown, depth = 3, prefix: (string | number)[] = []): (string | number)[][] {
  if (depth === 0 || value === null || typeof value !== 'object') return [prefix];
  const keys = Array.isArray(value) ? value.map((_, i) => i) : Object.keys(value);
  return [prefix, ...keys.flatMap((k) => pathsOf((value as Record<string | number, unknown>)[k], depth - 1, [...prefix, k]))];
}

/** A copy of `base` with the value at `path` replaced (or removed), leaving `base` untouched. */
function mutated(base: unknown, path: (string | number)[], value: unknown, remove: boolean): unknown {
  if (path.length === 0) return value;
  const copy = structuredClone(base) as Record<string | number, unknown>;
  let node = copy;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  const last = path[path.length - 1]!;
  if (remove) delete node[last];
  else Object.defineProperty(node, last, { value, enumerable: true, writable: true, configurable: true });
  return copy;
}

/** Every string in a value replaced by `text`: does any field let unstorable text reach SQL? */
function withEveryString(value: unknown, text: string): unknown {
  if (typeof value === 'string') return text;
  if (Array.isArray(value)) return value.map((v) => withEveryString(v, text));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withEveryString(v, text)]));
  }
  return value;
}

function mutationArbitrary(path: string, value: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> | null {
  const base = baselines()[path];
  if (base === undefined) return null;
  const paths = pathsOf(base);
  const extra = FIELD_NAMES.map((f) => [f]);
  const oneField = fc
    .tuple(fc.constantFrom(...paths, ...extra), value, fc.boolean(), fc.nat(9))
    .map(([at, v, remove, dice]) => (dice === 0 ? base : mutated(base, at, v, remove && at.length > 0)));
  const unstorable = ['\u0000', 'ok\u0000ok', '\uD800', 'x\uDFFF', 'x'.repeat(100_000), ''];
  const everyString = fc.constantFrom(...unstorable).map((text) => withEveryString(base, text));
  const stringPaths = paths.filter((p) => typeof p.reduce<unknown>((node, k) => (node as Record<string | number, unknown>)[k], base) === 'string');
  const oneString = stringPaths.length
    ? fc.tuple(fc.constantFrom(...stringPaths), fc.constantFrom(...unstorable)).map(([at, text]) => mutated(base, at, text, false))
    : everyString;
  return fc.oneof({ weight: 4, arbitrary: oneField }, { weight: 1, arbitrary: everyString }, { weight: 2, arbitrary: oneString });
}

type Outcome = { kind: 'ok' } | { kind: 'error'; code: TRPCError['code']; status: number; message: string };

async function call(path: string, input: unknown): Promise<Outcome> {
  const caller = callerFor(t.db, owner) as unknown as Record<string, Record<string, (input: unknown) => Promise<unknown>>>;
  const [namespace, name] = path.split('.') as [string, string];
  try {
    await caller[namespace]![name]!(input);
    return { kind: 'ok' };
  } catch (error) {
    if (!(error instanceof TRPCError)) throw error;
    return { kind: 'error', code: error.code, status: getHTTPStatusCodeFromError(error), message: `${error.message} ${String(error.cause ?? '')}` };
  }
}

const procedures = Object.keys(appRouter._def.procedures).sort();

describe('arbitrary input at every procedure', () => {
  it('the router has the procedures of docs/api.md', () => {
    expect(procedures).toEqual(
      expect.arrayContaining([
        'contacts.upsert', 'contacts.list', 'contacts.get',
        'workflows.list', 'workflows.get', 'workflows.create', 'workflows.setEnabled',
        'enrollments.enroll', 'enrollments.enrollMany', 'enrollments.importCsv',
        'events.track', 'waits.resolve',
        'executions.list', 'executions.get', 'executions.stats',
        'repair.stuck', 'repair.preview', 'repair.applyOne', 'repair.applyMany',
        'audit.list', 'health.invariants',
      ]),
    );
  });

  for (const path of procedures) {
    it(`${path}: a success or a 4xx, never a 500; refused input writes nothing`, { timeout: 240_000 }, async () => {
      const outcomes: Record<string, number> = {};
      await fc.assert(
        fc.asyncProperty(inputArbitrary(path), async (input) => {
          const before = await rowCounts();
          const outcome = await call(path, input);
          const after = await rowCounts();
          const label = outcome.kind === 'ok' ? 'ok' : outcome.code;
          outcomes[label] = (outcomes[label] ?? 0) + 1;
          expect(({} as Record<string, unknown>).polluted, 'Object.prototype was polluted').toBeUndefined();
          if (outcome.kind === 'ok') return;
          expect(outcome.code, outcome.message).not.toBe('INTERNAL_SERVER_ERROR');
          expect(outcome.status, outcome.message).toBeGreaterThanOrEqual(400);
          expect(outcome.status, outcome.message).toBeLessThan(500);
          if (outcome.code === 'BAD_REQUEST') {
            expect(after, `BAD_REQUEST (${outcome.message.slice(0, 200)}) wrote rows`).toEqual(before);
          } else {
            // A refused attempt leaves its audit entry and nothing else.
            const { AuditEntry: auditAfter = 0, ...restAfter } = after;
            const { AuditEntry: auditBefore = 0, ...restBefore } = before;
            expect(restAfter, `${outcome.code} (${outcome.message.slice(0, 200)}) wrote rows`).toEqual(restBefore);
            expect(auditAfter - auditBefore).toBeLessThanOrEqual(1);
          }
        }),
        { numRuns: 60 },
      );
      console.log(`${path}: ${JSON.stringify(outcomes)}`);
    });
  }
});

describe('text is stored and shown verbatim', () => {
  const METACHARACTERS = [
    `'; DROP TABLE "Contact"; --`,
    `Robert'); DROP TABLE "AuditEntry";--`,
    '<script>alert(1)</script>',
    '<img src=x onerror="alert(\'x\')">',
    '" OR 1=1 --',
    '$1 $$ $body$ \\x00 %s %n {{contact.email}}',
    'Ünïcödé — 中文 — العربية — עברית',
    '👩‍👩‍👧‍👦🔥🏳️‍🌈',
    '\t\n\r',
    '%_\\',
  ];

  it('contacts.upsert/get and events.track keep SQL and HTML metacharacters, unicode and emoji exactly', async () => {
    const caller = callerFor(t.db, owner);
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.constantFrom(...METACHARACTERS), fc.string({ unit: 'grapheme', maxLength: 200 }), fc.string({ maxLength: 50 })),
        async (text) => {
          const email = `verbatim${n++}@example.com`;
          const data = { note: text, list: [text, { inner: text }] };
          const upserted = await caller.contacts.upsert({ email, data });
          expect(upserted.data).toEqual(data);
          const got = await caller.contacts.get({ id: upserted.id });
          expect(got.data).toEqual(data);
          expect((got.data as { note: string }).note).toBe(text);

          // Keys are unique per project; the run's own prefix keeps a key another test used (e.g. "_") from
          // answering with that test's event.
          const keyed = `${n}:${text}`;
          const idempotencyKey = text.trim() === text && text.length > 0 && keyed.length <= 200 ? keyed : undefined;
          const { eventId } = await caller.events.track({ name: 'verbatim', email, data: { text }, idempotencyKey });
          const stored = await t.db.event.findUniqueOrThrow({ where: { id: eventId } });
          expect(stored.data).toEqual({ text });
          if (idempotencyKey) expect(stored.idempotencyKey).toBe(idempotencyKey);
          // Searching for it is just text too: no wildcard, no injection, no error.
          await caller.contacts.list({ search: text.slice(0, 300) });
        },
      ),
      { numRuns: 120 },
    );
  });
});
