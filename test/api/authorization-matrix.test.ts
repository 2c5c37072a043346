import { TRPCError } from '@trpc/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Role } from '../../server/db';
import { createCaller } from '../../server/trpc/root';
import { freshDatabase, type TestDatabase } from '../support/database';
import { bearer, contextOf, createPerson, newApiKey, signIn } from '../support/auth';
import { allowed, ID_KEYS, inputKeys, MATRIX, PROCEDURES, projectWithRows, refusalOf, ROLES, type ProjectRows } from '../support/authorization-matrix';

// The authorization matrix of docs/api.md, "Authentication and roles", walked over EVERY
// procedure of the real router, enumerated from the router itself: a procedure added
// without a row in MATRIX fails this file, so none can ship without a decided minimum
// role. Each procedure is called, through contexts built by resolveActor from real
// session cookies and real API keys, with: no credentials (UNAUTHORIZED), a revoked key
// (UNAUTHORIZED), each role as a person and as a key (FORBIDDEN below the minimum,
// anything but UNAUTHORIZED/FORBIDDEN/500 at or above it), and — for every procedure
// whose input names a row — a row of another project (NOT_FOUND, nothing changed there).
// A person's own procedures (PERSON) refuse keys as no one; a link's (ANYONE) let all in.

let t: TestDatabase;
let own: ProjectRows;
let other: ProjectRows;
/** Per role: the Cookie header of a signed-in member, and an API key, of project `own`. */
const sessions = {} as Record<Role, string>;
const keys = {} as Record<Role, string>;
let revokedKey: string;

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
  const [executions, steps, workflows, contacts, memberships, apiKeys, events, invitations, users, webhookEndpoints, webhookMessages] = await Promise.all([
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
    t.query(`SELECT id, "acceptedAt", "declinedAt", "revokedAt" FROM "Invitation" WHERE "projectId" = $1 ORDER BY id`, [projectId]),
    t.query(`SELECT id FROM "User" ORDER BY id`),
    t.query(`SELECT id, url, enabled, secret, version FROM "WebhookEndpoint" WHERE "projectId" = $1 ORDER BY id`, [projectId]),
    t.query(`SELECT id, status, attempts FROM "WebhookMessage" WHERE "projectId" = $1 ORDER BY id`, [projectId]),
  ]);
  return { executions, steps, workflows, contacts, memberships, apiKeys, events, invitations, users, webhookEndpoints, webhookMessages };
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

  /** Past authorization: any answer of the procedure's own, never an authorization error or a 500. */
  const verdict = (answer: { code: string; message?: string }) =>
    ['UNAUTHORIZED', 'FORBIDDEN', 'INTERNAL_SERVER_ERROR'].includes(answer.code) ? `${answer.code}: ${answer.message}` : 'let through';

  it(row.minimum === 'ANYONE' ? 'no credentials: let through' : 'no credentials: UNAUTHORIZED', async () => {
    const answer = await call(new Headers(), path, row.input(own));
    if (row.minimum === 'ANYONE') expect(verdict(answer)).toBe('let through');
    else expect(answer.code).toBe('UNAUTHORIZED');
  });

  it(row.minimum === 'ANYONE' ? 'a revoked OWNER key: let through (the key plays no part)' : 'a revoked OWNER key: UNAUTHORIZED', async () => {
    const answer = await call(bearer(revokedKey), path, row.input(own));
    if (row.minimum === 'ANYONE') expect(verdict(answer)).toBe('let through');
    else expect(answer.code).toBe('UNAUTHORIZED');
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
        const letThrough = allowed(row, role, kind);
        // Past authorization any answer of the procedure's own is fine (a CONFLICT, a
        // NOT_FOUND for a dummy input) — but never an authorization error, and never a 500.
        answers[cell] = letThrough ? verdict(answer) : answer.code;
        expected[cell] = letThrough ? 'let through' : refusalOf(row);
      }
    }
    expect(answers).toEqual(expected);
  });

  if (row.foreign) {
    it("another project's rows: NOT_FOUND, and nothing there changes", async () => {
      const before = await snapshotOf(other.projectId);
      // An OWNER, so that nothing but the project can be the reason for a refusal.
      const callers = row.minimum === 'PERSON' ? [new Headers({ cookie: sessions.OWNER })] : [new Headers({ cookie: sessions.OWNER }), bearer(keys.OWNER)];
      for (const headers of callers) {
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
