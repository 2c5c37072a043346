import superjson from 'superjson';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Role } from '../../server/db';
import { PROJECT_COOKIE, PROJECT_HEADER } from '../../server/common/cookies';
import { createPerson, newApiKey } from '../support/auth';
import { allowed, MATRIX, PROCEDURES, projectWithRows, refusalOf, ROLES, type MatrixReply, type ProjectRows } from '../support/authorization-matrix';
import { freshDatabase, tableDigests, type TestDatabase } from '../support/database';
import { startWebServer, type WebServer } from '../support/web-server';

// The authorization matrix (test/support/authorization-matrix.ts, the same table the
// in-process walk uses) where clients meet it: over HTTP, at the product's web server.
// Every procedure of the router is called at /api/trpc by people (a real session cookie
// from signing in at /api/auth, the project header and the switcher's cookie) and by API
// keys of each role, signed out, with a revoked key, and by an owner of another project
// naming this one; the procedures exposed at /api/v1 are called there with each key.
// A refused cell is exactly 401 or 403 and writes nothing (every table's content is
// compared); a let-through cell is the procedure's real answer for the fixture (the
// contact's email from contacts.get, the stale version's CONFLICT from repair.applyOne),
// not merely "not 401/403".

type Caller = { label: string; headers: Record<string, string> };

let t: TestDatabase;
let server: WebServer;
let own: ProjectRows;
let other: ProjectRows;
const people = {} as Record<Role, Caller>;
const keys = {} as Record<Role, Caller>;
let revoked: Caller;
/** An OWNER of project `other` only, naming project `own` in the header. */
let outsider: Caller;
/** The same person without a header: acting in `other`, where own's rows do not exist. */
let outsiderAtHome: Caller;

/** Signs in through the real endpoint and returns the Cookie header the browser would send. */
async function signInOverHttp(email: string, password: string): Promise<string> {
  const res = await fetch(`${server.base}/api/auth/sign-in/email`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: server.base },
    body: JSON.stringify({ email, password }),
  });
  expect(res.status, `sign-in of ${email}: ${await res.clone().text()}`).toBe(200);
  return res.headers
    .getSetCookie()
    .map((c) => c.split(';')[0]!)
    .join('; ');
}

async function person(projectId: string, email: string, role: Role): Promise<string> {
  await createPerson(t.db, { projectId, email, password: `${role} password`, role });
  return signInOverHttp(email, `${role} password`);
}

/** One call of `path` at /api/trpc as tRPC's own client sends it (GET for queries, POST for mutations). */
async function trpc(path: string, input: unknown, headers: Record<string, string>): Promise<MatrixReply> {
  const type = PROCEDURES[path]!._def.type;
  const encoded = input === undefined ? undefined : JSON.stringify(superjson.serialize(input));
  let res: Response;
  if (type === 'mutation') {
    res = await fetch(`${server.base}/api/trpc/${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: encoded ?? '{}',
    });
  } else {
    const query = encoded === undefined ? '' : `?input=${encodeURIComponent(encoded)}`;
    res = await fetch(`${server.base}/api/trpc/${path}${query}`, {
      headers: { ...(type === 'subscription' ? { accept: 'text/event-stream' } : {}), ...headers },
    });
  }
  const text = await res.text();
  if (type === 'subscription' && res.headers.get('content-type')?.startsWith('text/event-stream')) return subscriptionReply(res.status, text);
  const body = JSON.parse(text) as { result?: { data: never }; error?: { json: { message: string; data: { code: string; conflict: unknown } } } };
  if (body.error) {
    const error = superjson.deserialize(body.error as never) as { message: string; data: { code: string; conflict: unknown } };
    return { status: res.status, code: error.data.code, message: error.message, conflict: error.data.conflict };
  }
  return { status: res.status, code: 'OK', result: superjson.deserialize(body.result!.data) };
}

/**
 * An SSE stream (a tRPC subscription over HTTP): its data events, or the error it ended
 * with. tRPC's SSE protocol answers HTTP 200 and sends a refusal as the stream's
 * `serialized-error` event (an EventSource cannot read a non-200 body); that error's
 * data.httpStatus is the status the cell is judged by.
 */
function subscriptionReply(status: number, text: string): MatrixReply {
  const yielded: unknown[] = [];
  for (const block of text.split('\n\n')) {
    const event = /^event: (\S+)$/m.exec(block)?.[1];
    const data = /^data: (.*)$/m.exec(block)?.[1];
    if (event === 'serialized-error' && data) {
      const error = superjson.deserialize(JSON.parse(data)) as { message: string; data?: { code: string; httpStatus: number } };
      return { status: error.data?.httpStatus ?? status, code: error.data?.code ?? 'ERROR', message: error.message };
    }
    if (!event && data) yielded.push(superjson.deserialize((JSON.parse(data) as { json: never; meta?: never }) as never));
  }
  return { status, code: 'OK', result: yielded };
}

/** The /api/v1 path and method of a procedure exposed there, or null. */
function restRoute(path: string): { method: string; path: string } | null {
  const openapi = (PROCEDURES[path]!._def as { meta?: { openapi?: { method: string; path: string } } }).meta?.openapi;
  return openapi ? { method: openapi.method, path: openapi.path } : null;
}

/** A call at /api/v1 as a program makes it: path parameters in the path, the rest in the query (GET, DELETE) or the body. */
async function rest(route: { method: string; path: string }, input: unknown, headers: Record<string, string>): Promise<MatrixReply> {
  // Path parameters from the input, the rest in the query (GET, DELETE) or the body.
  const fields = { ...(input as Record<string, unknown> | undefined) };
  const path = route.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = fields[name];
    delete fields[name];
    return encodeURIComponent(String(value));
  });
  const inQuery = route.method === 'GET' || route.method === 'DELETE';
  const query = inQuery ? new URLSearchParams(Object.entries(fields).flatMap(([k, v]) => (Array.isArray(v) ? v.map((x) => [k, String(x)]) : [[k, String(v)]]))) : null;
  const res = await fetch(`${server.base}/api/v1${path}${query && query.size ? `?${query}` : ''}`, {
    method: route.method,
    headers: { 'content-type': 'application/json', ...headers },
    body: inQuery ? undefined : JSON.stringify(fields),
  });
  // Every error answer is problem details (server/http/problem.ts): its `code` is the tRPC code.
  const body = (await res.json()) as { code?: string; detail?: string; conflict?: unknown };
  if (res.status >= 400) return { status: res.status, code: body.code ?? String(res.status), message: body.detail, conflict: body.conflict };
  return { status: res.status, code: 'OK', result: body };
}

const STATUS: Record<string, number> = { UNAUTHORIZED: 401, FORBIDDEN: 403 };

const auditIds = async () => (await t.query<{ id: string }>(`SELECT id FROM "AuditEntry"`)).map((r) => r.id);
/** The outsider's audit actor ("user:<id>"), whose refusals are recorded in their own project. */
let outsiderActor = '';

beforeAll(async () => {
  t = await freshDatabase();
  own = await projectWithRows(t.db, 'own');
  other = await projectWithRows(t.db, 'other');
  // The limits another change adds (unknown variables are harmless): the matrix is not a flood.
  server = await startWebServer(t.url, { RATE_LIMIT_PER_ADDRESS: '0', RATE_LIMIT_PER_SESSION: '0', RATE_LIMIT_PER_KEY: '0' });
  for (const role of ROLES) {
    const cookie = await person(own.projectId, `${role.toLowerCase()}@own.example.com`, role);
    // As the console sends it (the switcher's cookie) and as a script does (the header).
    people[role] = { label: `${role} person`, headers: { cookie: `${cookie}; ${PROJECT_COOKIE}=${own.projectId}`, [PROJECT_HEADER]: own.projectId } };
    keys[role] = { label: `${role} key`, headers: { authorization: `Bearer ${(await newApiKey(t.db, own.projectId, role)).secret}` } };
  }
  const revokedKey = await newApiKey(t.db, own.projectId, 'OWNER', 'revoked owner key');
  await t.db.apiKey.update({ where: { id: revokedKey.id }, data: { revokedAt: new Date() } });
  revoked = { label: 'revoked OWNER key', headers: { authorization: `Bearer ${revokedKey.secret}` } };
  const outsiderCookie = await person(other.projectId, 'owner@other.example.com', 'OWNER');
  outsider = { label: 'OWNER of another project', headers: { cookie: outsiderCookie, [PROJECT_HEADER]: own.projectId } };
  outsiderAtHome = { label: 'OWNER of another project, in it', headers: { cookie: outsiderCookie } };
  outsiderActor = `user:${(await t.db.user.findUniqueOrThrow({ where: { email: 'owner@other.example.com' } })).id}`;
}, 900_000);

afterAll(async () => {
  await server?.stop();
  await t?.drop();
});

describe('the HTTP matrix covers the router', () => {
  it('every procedure has a row with its real answer (a new procedure cannot escape)', () => {
    const missing = Object.keys(PROCEDURES).filter((path) => !MATRIX[path]?.answer);
    expect(missing, 'procedures without a MATRIX row and answer').toEqual([]);
  });
});

describe.each(Object.keys(PROCEDURES).filter((path) => path in MATRIX))('%s over HTTP', (path) => {
  const row = MATRIX[path]!;
  const route = restRoute(path);

  it(`refused cells are exactly 401/403 and write nothing; from ${row.minimum} up, the real answer`, async () => {
    const nobody: Caller[] = [
      { label: 'signed out', headers: {} },
      { label: 'signed out, naming the project', headers: { [PROJECT_HEADER]: own.projectId } },
      revoked,
    ];
    const members = ROLES.flatMap((role) => [
      { role, kind: 'person' as const, caller: people[role] },
      { role, kind: 'key' as const, caller: keys[role] },
    ]);
    // A link's procedure (ANYONE) lets nobody in too; the others refuse nobody as UNAUTHORIZED.
    const refused: [Caller, string][] = [
      ...(row.minimum === 'ANYONE' ? [] : nobody.map((caller) => [caller, 'UNAUTHORIZED'] as [Caller, string])),
      [outsider, 'FORBIDDEN'],
      ...members.filter((m) => !allowed(row, m.role, m.kind)).map((m) => [m.caller, refusalOf(row)] as [Caller, string]),
    ];
    const letThrough = [...(row.minimum === 'ANYONE' ? nobody : []), ...members.filter((m) => allowed(row, m.role, m.kind)).map((m) => m.caller)];
    const before = await tableDigests(t);
    const answers: Record<string, string> = {};
    const expected: Record<string, string> = {};
    for (const [caller, code] of refused) {
      const reply = await trpc(path, row.input(own), caller.headers);
      answers[caller.label] = `${reply.status} ${reply.code}`;
      expected[caller.label] = `${STATUS[code]} ${code}`;
    }
    expect(answers).toEqual(expected);
    expect(await tableDigests(t), 'a refused call wrote something').toEqual(before);

    for (const caller of letThrough) {
      const input = row.input(own);
      const reply = await trpc(path, input, caller.headers);
      expect.soft(reply.code, `${caller.label}: ${reply.message ?? ''}`).not.toMatch(/^(UNAUTHORIZED|FORBIDDEN|INTERNAL_SERVER_ERROR)$/);
      row.answer!(reply, own, input, caller.label);
    }
  });

  if (row.foreign) {
    it("another project's rows, named from this one: 404, and nothing written but the caller's own refusal entries", async () => {
      const before = await tableDigests(t, ['AuditEntry']);
      const auditBefore = await auditIds();
      // A person's own procedures refuse keys before any row is looked at: people only there.
      for (const caller of row.minimum === 'PERSON' ? [people.OWNER] : [people.OWNER, keys.OWNER]) {
        for (const input of row.foreign!(other, own)) {
          const reply = await trpc(path, input, caller.headers);
          const selectedNothing = reply.code === 'OK' && row.foreignMaySelectNothing?.(reply.result) === true;
          if (!selectedNothing) expect(`${reply.status} ${reply.code}`, `${caller.label} ${JSON.stringify(input)}: ${reply.message}`).toBe('404 NOT_FOUND');
        }
      }
      // And the other way round: an owner of the other project, in it, naming own's rows.
      for (const input of row.foreign!(own, other)) {
        const reply = await trpc(path, input, outsiderAtHome.headers);
        const selectedNothing = reply.code === 'OK' && row.foreignMaySelectNothing?.(reply.result) === true;
        if (!selectedNothing) expect(`${reply.status} ${reply.code}`, `${JSON.stringify(input)}: ${reply.message}`).toBe('404 NOT_FOUND');
      }
      expect(await tableDigests(t, ['AuditEntry'])).toEqual(before);
      // A refused attempt is audited (server/trpc/audit.ts), never as a change. A project's
      // procedure records it in the caller's project, never in the one whose rows were
      // named. A person's own procedure (an invitation) has no project of the caller's: it
      // records the attempt in the invitation's project, where only its owners read it.
      const entries = await t.query<{ projectId: string; actor: string; outcome: string }>(
        `SELECT "projectId", actor, outcome::text FROM "AuditEntry" WHERE NOT (id = ANY($1::uuid[]))`,
        [auditBefore],
      );
      const callersProject = (actor: string) => (actor === outsiderActor ? other.projectId : own.projectId);
      const namedProject = (actor: string) => (actor === outsiderActor ? own.projectId : other.projectId);
      const expectedProject = row.minimum === 'PERSON' ? namedProject : callersProject;
      const misplaced = entries.filter((e) => e.outcome === 'APPLIED' || e.projectId !== expectedProject(e.actor));
      expect(misplaced).toEqual([]);
    });
  }

  if (route) {
    it(`at /api/v1${route.path}: signed out and revoked 401, each key below ${row.minimum} 403, nothing written; from ${row.minimum} up the real answer`, async () => {
      const before = await tableDigests(t);
      const answers: Record<string, string> = {};
      const expected: Record<string, string> = {};
      for (const [caller, code] of [
        [{ label: 'signed out', headers: {} }, 'UNAUTHORIZED'],
        [revoked, 'UNAUTHORIZED'],
        ...ROLES.filter((role) => !allowed(row, role, 'key')).map((role) => [keys[role], refusalOf(row)]),
      ] as [Caller, string][]) {
        const reply = await rest(route, row.input(own), caller.headers);
        answers[caller.label] = `${reply.status} ${reply.code}`;
        expected[caller.label] = `${STATUS[code]} ${code}`;
      }
      expect(answers).toEqual(expected);
      expect(await tableDigests(t)).toEqual(before);
      for (const role of ROLES.filter((r) => allowed(row, r, 'key'))) {
        const input = row.input(own);
        row.answer!(await rest(route, input, keys[role].headers), own, input, `${keys[role].label} at /api/v1`);
      }
    });
  }
});

describe('the project a request names', () => {
  it('a header naming a project the caller is not a member of: 403 and no data, for people and keys alike', async () => {
    for (const caller of [outsider, { label: 'OWNER key naming another project', headers: { ...keys.OWNER.headers, [PROJECT_HEADER]: other.projectId } }]) {
      const reply = await trpc('contacts.list', {}, caller.headers);
      expect(`${reply.status} ${reply.code}`, caller.label).toBe('403 FORBIDDEN');
      expect(reply.result).toBeUndefined();
    }
    const before = await tableDigests(t);
    const write = await trpc('contacts.upsert', { email: 'should-not-land@example.com' }, outsider.headers);
    expect(`${write.status} ${write.code}`).toBe('403 FORBIDDEN');
    expect(await tableDigests(t)).toEqual(before);
  });

  it('a header naming the caller\'s own project is served there (the key\'s own, the person\'s chosen one)', async () => {
    const reply = await trpc('contacts.get', { id: own.contactId }, { ...keys.VIEWER.headers, [PROJECT_HEADER]: own.projectId });
    expect((reply.result as { email: string }).email).toBe(own.contactEmail);
  });

  it('a malformed project header or switcher cookie: 400 with a sentence, never 500', async () => {
    const session = people.OWNER.headers.cookie!.split(`; ${PROJECT_COOKIE}=`)[0]!;
    const cases: Record<string, string>[] = [
      { cookie: session, [PROJECT_HEADER]: 'not-a-project' },
      { cookie: session, [PROJECT_HEADER]: "'; DROP TABLE \"Membership\"; --" },
      { cookie: session, [PROJECT_HEADER]: 'x'.repeat(4000) },
      { cookie: `${session}; ${PROJECT_COOKIE}=%E0%A4%A` },
      { cookie: `${session}; ${PROJECT_COOKIE}=not-a-project` },
      { ...keys.OWNER.headers, [PROJECT_HEADER]: 'not-a-project' },
      { [PROJECT_HEADER]: '%00' },
    ];
    for (const headers of cases) {
      for (const path of ['contacts.list', 'contacts.upsert']) {
        const reply = await trpc(path, path === 'contacts.list' ? {} : { email: 'malformed-project@example.com' }, headers);
        expect(`${reply.status} ${reply.code}`, JSON.stringify(headers)).toBe('400 BAD_REQUEST');
        expect(reply.message).toMatch(/not a project id/);
      }
    }
    const v1 = await rest({ method: 'POST', path: '/events' }, { name: 'x', email: 'a@example.com' }, { ...keys.OWNER.headers, [PROJECT_HEADER]: 'nope' });
    expect(v1.status).toBe(400);
    expect(await t.db.contact.count({ where: { email: 'malformed-project@example.com' } })).toBe(0);
  });

  it('a switcher cookie naming a project one has left still falls back to one\'s own (the console is never locked out)', async () => {
    const session = people.VIEWER.headers.cookie!.split(`; ${PROJECT_COOKIE}=`)[0]!;
    const reply = await trpc('contacts.get', { id: own.contactId }, { cookie: `${session}; ${PROJECT_COOKIE}=${other.projectId}` });
    expect((reply.result as { email: string }).email).toBe(own.contactEmail);
  });
});
