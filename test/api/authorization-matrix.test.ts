import { TRPCError } from '@trpc/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Db, Role } from '../../server/db';
import { createEngineContext, enroll, runWorkerOnce, trackEvent } from '../../server/engine';
import { appRouter, createCaller } from '../../server/trpc/root';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createContact, createProject, waitWorkflow, workflowFrom } from '../support/fixtures';
import { bearer, contextOf, createPerson, newApiKey, signIn } from '../support/auth';

// The authorization matrix of API.md "Authentication and roles", walked over EVERY
// procedure of the real router, enumerated from the router itself: a procedure added
// without a row in MATRIX fails this file, so none can ship without a decided minimum
// role. Each procedure is called, through contexts built by resolveActor from real
// session cookies and real API keys, with: no credentials (UNAUTHORIZED), a revoked key
// (UNAUTHORIZED), each role as a person and as a key (FORBIDDEN below the minimum,
// anything but UNAUTHORIZED/FORBIDDEN/500 at or above it), and — for every procedure
// whose input names a row — a row of another project (NOT_FOUND, nothing changed there).

const ROLES: Role[] = ['VIEWER', 'MARKETER', 'OPERATOR', 'OWNER'];
const RANK: Record<Role, number> = { VIEWER: 0, MARKETER: 1, OPERATOR: 2, OWNER: 3 };

/** Input keys that name a row: a procedure taking one must prove another project's row is NOT_FOUND. */
const ID_KEYS = new Set(['id', 'contactId', 'workflowId', 'executionId', 'stepExecutionId', 'userId', 'eventId', 'executionIds']);

/** The rows of one project that procedures' inputs point at. */
interface ProjectRows {
  projectId: string;
  contactId: string;
  contactEmail: string;
  workflowId: string;
  executionId: string;
  /** A WAITING wait step of executionId. */
  stepExecutionId: string;
  eventId: string;
  /** A member who is not one of the matrix's callers (setRole/remove may change them). */
  memberUserId: string;
  /** A key that is not one of the matrix's callers (revoke may revoke it). */
  apiKeyId: string;
}

interface MatrixRow {
  minimum: Role;
  /** A well-formed input on the caller's own project (its answer past authorization may be any 4xx). */
  input: (own: ProjectRows) => unknown;
  /** The same call naming another project's rows, one input per way of naming them: NOT_FOUND. */
  foreign?: (other: ProjectRows, own: ProjectRows) => unknown[];
  /**
   * A bulk procedure selects by filter: another project's ids may also select nothing at
   * all (an empty answer), as long as nothing there is touched.
   */
  foreignMaySelectNothing?: (result: unknown) => boolean;
  /** Listed for a procedure that may not exist (yet): no failure when it is absent. */
  optional?: boolean;
}

let sequence = 0;
const unique = (what: string) => `${what}-${++sequence}-${Math.random().toString(36).slice(2, 6)}`;

const MATRIX: Record<string, MatrixRow> = {
  'health.invariants': { minimum: 'VIEWER', input: () => undefined },

  'contacts.list': { minimum: 'VIEWER', input: () => ({}) },
  'contacts.get': { minimum: 'VIEWER', input: (own) => ({ id: own.contactId }), foreign: (other) => [{ id: other.contactId }] },
  'contacts.upsert': { minimum: 'MARKETER', input: () => ({ email: `${unique('matrix')}@example.com`, data: { source: 'matrix' } }) },

  'workflows.list': { minimum: 'VIEWER', input: () => undefined },
  'workflows.get': { minimum: 'VIEWER', input: (own) => ({ id: own.workflowId }), foreign: (other) => [{ id: other.workflowId }] },
  'workflows.create': { minimum: 'MARKETER', input: () => waitWorkflow({ name: unique('matrix workflow') }) },
  'workflows.setEnabled': {
    minimum: 'MARKETER',
    input: (own) => ({ id: own.workflowId, enabled: true }),
    foreign: (other) => [{ id: other.workflowId, enabled: false }],
  },

  'enrollments.enroll': {
    minimum: 'MARKETER',
    input: (own) => ({ workflowId: own.workflowId, email: `${unique('enrollee')}@example.com` }),
    foreign: (other) => [{ workflowId: other.workflowId, email: `${unique('enrollee')}@example.com` }],
  },
  'enrollments.enrollMany': {
    minimum: 'MARKETER',
    input: (own) => ({ workflowId: own.workflowId, contacts: [{ email: `${unique('bulk')}@example.com` }] }),
    foreign: (other) => [{ workflowId: other.workflowId, contacts: [{ email: `${unique('bulk')}@example.com` }] }],
  },
  'enrollments.importCsv': {
    minimum: 'MARKETER',
    optional: true,
    input: (own) => ({ workflowId: own.workflowId, csv: `email\n${unique('csv')}@example.com\n` }),
    foreign: (other) => [{ workflowId: other.workflowId, csv: `email\n${unique('csv')}@example.com\n` }],
  },

  'events.track': {
    minimum: 'MARKETER',
    input: (own) => ({ name: 'matrix_event', contactId: own.contactId }),
    foreign: (other) => [{ name: 'matrix_event', contactId: other.contactId }],
  },
  'events.list': {
    minimum: 'VIEWER',
    input: (own) => ({ contact: own.contactEmail }),
    foreign: (other) => [{ contact: other.contactId }, { contact: other.contactEmail }],
  },
  'waits.resolve': {
    minimum: 'MARKETER',
    input: (own) => ({ stepExecutionId: own.stepExecutionId, outcome: 'TIMEOUT', expectedVersion: 0 }),
    foreign: (other) => [{ stepExecutionId: other.stepExecutionId, outcome: 'TIMEOUT', expectedVersion: 0 }],
  },

  'executions.list': {
    minimum: 'VIEWER',
    input: () => ({}),
    foreign: (other) => [{ workflowId: other.workflowId }],
  },
  'executions.get': { minimum: 'VIEWER', input: (own) => ({ id: own.executionId }), foreign: (other) => [{ id: other.executionId }] },
  'executions.stats': { minimum: 'VIEWER', input: () => ({}), foreign: (other) => [{ workflowId: other.workflowId }] },

  'repair.stuck': { minimum: 'OPERATOR', input: () => ({}), foreign: (other) => [{ workflowId: other.workflowId }] },
  'repair.preview': {
    minimum: 'OPERATOR',
    input: (own) => ({ executionId: own.executionId, action: 'CANCEL' }),
    foreign: (other, own) => [
      { executionId: other.executionId, action: 'CANCEL' },
      { action: 'REDRIVE_EVENT', eventId: other.eventId },
      { executionId: own.executionId, action: 'DELIVER_EVENT', eventId: other.eventId },
    ],
  },
  'repair.options': {
    minimum: 'OPERATOR',
    input: (own) => ({ executionId: own.executionId }),
    foreign: (other) => [{ executionId: other.executionId }],
  },
  // API.md's repair.apply: tRPC reserves `apply` as a procedure name.
  'repair.applyOne': {
    minimum: 'OPERATOR',
    // Version 0 is stale by now: a CONFLICT past authorization, and nothing cancelled.
    input: (own) => ({ executionId: own.executionId, action: 'CANCEL', expectedVersion: 0, reason: 'authorization matrix' }),
    foreign: (other) => [{ executionId: other.executionId, action: 'CANCEL', expectedVersion: 0, reason: 'authorization matrix' }],
  },
  'repair.applyMany': {
    minimum: 'OPERATOR',
    input: (own) => ({ filter: { executionIds: [own.executionId] }, action: 'CANCEL', reason: 'authorization matrix', dryRun: true }),
    foreign: (other) => [
      { filter: { workflowId: other.workflowId, status: 'WAITING' }, action: 'CANCEL', reason: 'authorization matrix' },
      { filter: { executionIds: [other.executionId] }, action: 'CANCEL', reason: 'authorization matrix' },
    ],
    foreignMaySelectNothing: (result) => (result as { items: unknown[] }).items.length === 0,
  },

  'repair.stuckGroups': { minimum: 'VIEWER', input: () => ({}), foreign: (other) => [{ workflowId: other.workflowId }] },
  'repair.applyManyLive': {
    minimum: 'OPERATOR',
    // Dead events belong to no workflow: this selects nothing and changes nothing.
    input: (own) => ({ filter: { reason: 'EVENT_DEAD', workflowId: own.workflowId }, action: 'REDRIVE_EVENT', reason: 'authorization matrix' }),
    foreign: (other) => [{ filter: { reason: 'WAIT_OVERDUE', workflowId: other.workflowId }, action: 'FORCE_TIMEOUT', reason: 'authorization matrix' }],
  },

  'audit.list': { minimum: 'VIEWER', input: () => ({}) },

  'apiKeys.list': { minimum: 'OWNER', input: () => undefined },
  'apiKeys.create': { minimum: 'OWNER', input: () => ({ name: unique('matrix key'), role: 'VIEWER' }) },
  'apiKeys.revoke': { minimum: 'OWNER', input: (own) => ({ id: own.apiKeyId }), foreign: (other) => [{ id: other.apiKeyId }] },

  'members.list': { minimum: 'OWNER', input: () => undefined },
  'members.add': {
    minimum: 'OWNER',
    input: () => ({ email: `${unique('member')}@example.com`, password: 'a long enough password', role: 'VIEWER' }),
  },
  'members.setRole': {
    minimum: 'OWNER',
    input: (own) => ({ userId: own.memberUserId, role: 'VIEWER' }),
    foreign: (other) => [{ userId: other.memberUserId, role: 'OWNER' }],
  },
  'members.remove': {
    minimum: 'OWNER',
    input: (own) => ({ userId: own.memberUserId }),
    foreign: (other) => [{ userId: other.memberUserId }],
  },
};

type Procedure = { _def: { type: 'query' | 'mutation' | 'subscription'; inputs: z.ZodType[] } };
const PROCEDURES = appRouter._def.procedures as unknown as Record<string, Procedure>;

/** Every property name anywhere in a procedure's input, read from its zod schemas. */
function inputKeys(procedure: Procedure): Set<string> {
  const keys = new Set<string>();
  const walk = (node: unknown) => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (!node || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node)) {
      if (key === 'properties' && value && typeof value === 'object') for (const name of Object.keys(value)) keys.add(name);
      walk(value);
    }
  };
  for (const schema of procedure._def.inputs) walk(z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }));
  return keys;
}

let t: TestDatabase;
let own: ProjectRows;
let other: ProjectRows;
/** Per role: the Cookie header of a signed-in member, and an API key, of project `own`. */
const sessions = {} as Record<Role, string>;
const keys = {} as Record<Role, string>;
let revokedKey: string;

async function projectWithRows(db: Db, name: string): Promise<ProjectRows> {
  const project = await createProject(db, name);
  const contactEmail = `${name}-contact@example.com`;
  const contact = await createContact(db, project.id, contactEmail);
  const workflow = await workflowFrom(db, project.id, waitWorkflow({ name: `${name} waits` }));
  const enrolled = await enroll(db, { projectId: project.id, workflowId: workflow.id, contactId: contact.id });
  if (!enrolled.ok) throw new Error(`fixture enrollment failed: ${JSON.stringify(enrolled)}`);
  const engine = createEngineContext(db);
  await runWorkerOnce(engine);
  const wait = await db.stepExecution.findFirstOrThrow({ where: { executionId: enrolled.executionId, status: 'WAITING' } });
  const event = await trackEvent(engine, { projectId: project.id, name: 'page_view', contactId: contact.id, data: {} });
  const member = await createPerson(db, { projectId: project.id, email: `${name}-member@example.com`, password: 'member password', role: 'MARKETER' });
  // The member the matrix may demote must not be the project's last OWNER, or setRole's
  // answer would be about that rule instead of about authorization.
  await createPerson(db, { projectId: project.id, email: `${name}-owner@example.com`, password: 'owner password', role: 'OWNER' });
  const apiKey = await newApiKey(db, project.id, 'VIEWER', `${name} integration`);
  return {
    projectId: project.id,
    contactId: contact.id,
    contactEmail,
    workflowId: workflow.id,
    executionId: enrolled.executionId,
    stepExecutionId: wait.id,
    eventId: event.ok ? event.eventId : (() => { throw new Error('fixture event not stored'); })(),
    memberUserId: member.userId,
    apiKeyId: apiKey.id,
  };
}

/** What a call answered: a tRPC error code, or OK. */
async function call(headers: Headers, path: string, input: unknown): Promise<{ code: string; result?: unknown; message?: string }> {
  const caller = createCaller(await contextOf(t.db, headers)) as unknown as Record<string, Record<string, (input: unknown) => Promise<unknown>>>;
  const [namespace, name] = path.split('.') as [string, string];
  try {
    const result = await caller[namespace]![name]!(input);
    // A subscription answers a stream: read it to the end (its errors come from there).
    if (result && typeof result === 'object' && Symbol.asyncIterator in result) {
      const yielded: unknown[] = [];
      for await (const value of result as AsyncIterable<unknown>) yielded.push(value);
      return { code: 'OK', result: yielded };
    }
    return { code: 'OK', result };
  } catch (error) {
    if (error instanceof TRPCError) return { code: error.code, message: error.message };
    throw error;
  }
}

/** Everything of the other project that a leaking procedure could change. */
async function snapshotOf(projectId: string) {
  const [executions, steps, workflows, contacts, memberships, apiKeys, events] = await Promise.all([
    t.query(`SELECT id, status, version FROM "WorkflowExecution" WHERE "projectId" = $1 ORDER BY id`, [projectId]),
    t.query(
      `SELECT s.id, s.status, s."resolvedBy" FROM "StepExecution" s JOIN "WorkflowExecution" e ON e.id = s."executionId" WHERE e."projectId" = $1 ORDER BY s.id`,
      [projectId],
    ),
    t.query(`SELECT id, enabled FROM "Workflow" WHERE "projectId" = $1 ORDER BY id`, [projectId]),
    t.query(`SELECT id, email, data FROM "Contact" WHERE "projectId" = $1 ORDER BY id`, [projectId]),
    t.query(`SELECT "userId", role FROM "Membership" WHERE "projectId" = $1 ORDER BY "userId"`, [projectId]),
    t.query(`SELECT id, "revokedAt" FROM "ApiKey" WHERE "projectId" = $1 ORDER BY id`, [projectId]),
    t.query(`SELECT id, name, "contactId" FROM "Event" WHERE "projectId" = $1 ORDER BY id`, [projectId]),
  ]);
  return { executions, steps, workflows, contacts, memberships, apiKeys, events };
}

beforeAll(async () => {
  t = await freshDatabase();
  own = await projectWithRows(t.db, 'own');
  other = await projectWithRows(t.db, 'other');
  for (const role of ROLES) {
    const email = `${role.toLowerCase()}@own.example.com`;
    await createPerson(t.db, { projectId: own.projectId, email, password: `${role} password`, role });
    sessions[role] = await signIn(t.db, email, `${role} password`);
    keys[role] = (await newApiKey(t.db, own.projectId, role)).secret;
  }
  // An OWNER key, revoked: the most powerful credential, worth nothing once revoked.
  const revoked = await newApiKey(t.db, own.projectId, 'OWNER', 'revoked owner key');
  await t.db.apiKey.update({ where: { id: revoked.id }, data: { revokedAt: new Date() } });
  revokedKey = revoked.secret;
});
afterAll(() => t.drop());

describe('the matrix covers the router', () => {
  it('every procedure of appRouter has a row (a new procedure cannot escape)', () => {
    const unlisted = Object.keys(PROCEDURES).filter((path) => !(path in MATRIX));
    expect(unlisted, 'procedures without a minimum role in MATRIX').toEqual([]);
  });

  it('every row names a procedure that exists (a renamed one is noticed)', () => {
    const missing = Object.entries(MATRIX)
      .filter(([path, row]) => !row.optional && !(path in PROCEDURES))
      .map(([path]) => path);
    expect(missing, 'MATRIX rows with no such procedure').toEqual([]);
  });

  it('every procedure whose input names a row has a foreign-project cell', () => {
    const uncovered = Object.entries(PROCEDURES)
      .filter(([path, procedure]) => [...inputKeys(procedure)].some((key) => ID_KEYS.has(key)) && !MATRIX[path]?.foreign)
      .map(([path]) => path);
    expect(uncovered, 'procedures taking an id without a foreign-project input in MATRIX').toEqual([]);
  });
});

describe.each(Object.keys(PROCEDURES).filter((path) => path in MATRIX))('%s', (path) => {
  const row = MATRIX[path]!;

  it('no credentials: UNAUTHORIZED', async () => {
    expect((await call(new Headers(), path, row.input(own))).code).toBe('UNAUTHORIZED');
  });

  it('a revoked OWNER key: UNAUTHORIZED', async () => {
    expect((await call(bearer(revokedKey), path, row.input(own))).code).toBe('UNAUTHORIZED');
  });

  it(`each role: FORBIDDEN below ${row.minimum}, let through from ${row.minimum} up`, async () => {
    const answers: Record<string, string> = {};
    const expected: Record<string, string> = {};
    for (const role of ROLES) {
      for (const [kind, headers] of [
        ['person', new Headers({ cookie: sessions[role] })],
        ['key', bearer(keys[role])],
      ] as const) {
        const answer = await call(headers, path, row.input(own));
        const cell = `${role} ${kind}`;
        const allowed = RANK[role] >= RANK[row.minimum];
        // Past authorization any answer of the procedure's own is fine (a CONFLICT, a
        // NOT_FOUND for a dummy input) — but never an authorization error, and never a 500.
        answers[cell] = allowed ? (['UNAUTHORIZED', 'FORBIDDEN', 'INTERNAL_SERVER_ERROR'].includes(answer.code) ? `${answer.code}: ${answer.message}` : 'let through') : answer.code;
        expected[cell] = allowed ? 'let through' : 'FORBIDDEN';
      }
    }
    expect(answers).toEqual(expected);
  });

  if (row.foreign) {
    it("another project's rows: NOT_FOUND, and nothing there changes", async () => {
      const before = await snapshotOf(other.projectId);
      // An OWNER, so that nothing but the project can be the reason for a refusal.
      for (const headers of [new Headers({ cookie: sessions.OWNER }), bearer(keys.OWNER)]) {
        for (const input of row.foreign!(other, own)) {
          const answer = await call(headers, path, input);
          const selectedNothing = answer.code === 'OK' && row.foreignMaySelectNothing?.(answer.result) === true;
          if (!selectedNothing) expect(answer.code, `${JSON.stringify(input)}: ${answer.message ?? JSON.stringify(answer.result)}`).toBe('NOT_FOUND');
        }
      }
      expect(await snapshotOf(other.projectId)).toEqual(before);
    });
  }
});
