import net from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_COOKIE, PROJECT_HEADER } from '../../server/common/cookies';
import { createPerson, newApiKey } from '../support/auth';
import { freshDatabase, tableDigests, type TestDatabase } from '../support/database';
import { createContact, createProject } from '../support/fixtures';
import { startWebServer, type WebServer } from '../support/web-server';

// The HTTP edge under hostile input: raw bytes on a socket to the product's web server,
// so that requests no fetch() would send reach it too (undecodable paths, invalid UTF-8
// in headers, duplicated headers, bodies that lie about their type or length). Whatever
// arrives, the answer is a status line below 500 (429 is a fine answer to a flood),
// never a connection closed without one, and nothing in the database changes: every
// table's content is compared before and after, except SignInFailure, where a wrong
// password for a real account is counted by design (the per-account sign-in limit). The
// product audits changes, not refusals, so AuditEntry must not change either.

let t: TestDatabase;
let server: WebServer;
let session = '';
let apiKey = '';
let projectId = '';
let contactId = '';

interface RawAnswer {
  /** The status of the first response line, or null when the connection ended without one. */
  status: number | null;
  head: string;
}

/**
 * Writes `request` to a fresh connection and reads until the server closes it (every
 * request says Connection: close). The client does not half-close: Node's server takes a
 * client's FIN as leaving, and drops a request still being read. With `hangUp`, it does
 * leave right after writing (a body shorter than its Content-Length): then there is no
 * one to answer, and an answer is not required.
 */
function raw(request: Buffer | string, hangUp = false): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = net.connect(server.port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = () => {
      if (settled) return;
      settled = true;
      const text = Buffer.concat(chunks).toString('latin1');
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1];
      resolve({ status: status ? Number(status) : null, head: text.slice(0, text.indexOf('\r\n\r\n') >>> 0).slice(0, 1000) });
    };
    socket.on('data', (chunk) => chunks.push(chunk));
    // A server that answers early (413) and closes may reset our unfinished upload: what it
    // answered before that still counts, and is read from `chunks`.
    socket.on('error', finish);
    socket.on('close', finish);
    // Not an assertion: a hung connection would otherwise hang the file.
    socket.setTimeout(60_000, () => socket.destroy());
    const bytes = typeof request === 'string' ? Buffer.from(request, 'latin1') : request;
    if (hangUp) socket.end(bytes);
    else socket.write(bytes);
  });
}

/** A request as bytes: request line, headers in the given order (duplicates allowed), body. */
function requestBytes(method: string, target: string, headers: [string, string][], body?: Buffer | string): Buffer {
  const bodyBytes = body === undefined ? undefined : typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  const lines = [`${method} ${target} HTTP/1.1`, `Host: 127.0.0.1:${server.port}`, 'Connection: close'];
  for (const [name, value] of headers) lines.push(`${name}: ${value}`);
  if (bodyBytes && !headers.some(([name]) => /^(content-length|transfer-encoding)$/i.test(name))) lines.push(`Content-Length: ${bodyBytes.length}`);
  const head = Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
  return bodyBytes ? Buffer.concat([head, bodyBytes]) : head;
}

// ---- what the fuzzer draws from ----

const PREFIXES = ['/', '/api/trpc/', '/api/v1/', '/api/auth/', '/executions/', '/sign-in', '/audit', '/api/', '/_next/'];
const PROCEDURE_NAMES = ['health.invariants', 'contacts.list', 'contacts.get', 'contacts.upsert', 'repair.apply', 'repair.applyManyLive', 'members.add', 'apiKeys.create', 'events.track', 'enrollments.enroll'];
const V1_PATHS = ['events', 'enrollments', 'openapi.json', 'events/..', '..%2fauth'];
const AUTH_PATHS = ['sign-in/email', 'get-session', 'sign-out', 'sign-up/email', 'session', 'ok'];

/** Pieces of a path: valid and invalid escapes, overlong UTF-8, traversal, raw high bytes, nulls. */
const pathPiece = fc.oneof(
  fc.constantFrom('%', '%%', '%E0%A4%A', '%C0%AF', '%C0%AE%C0%AE', '%FF', '%00', '%2e%2e', '%2F', '%5C', '..', '.', '//', ';', ',', '?', '#', '&', '=', '+', '%20', '%u0041', '\u00e9', '\u00ff', '\u0080'),
  fc.constantFrom(...PROCEDURE_NAMES, ...V1_PATHS, ...AUTH_PATHS),
  fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEFgz'), minLength: 1, maxLength: 2 }).map((hex) => `%${hex}`),
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 6 }),
);

const target = fc
  .tuple(
    fc.constantFrom(...PREFIXES),
    fc.array(pathPiece, { maxLength: 6 }),
    fc.option(
      fc.oneof(
        fc.constant('batch=1&input=%7B%220%22%3A1'),
        fc.constant('input=%7B'),
        fc.constant('input=%E0%A4%A'),
        fc.constant('batch=1&input=[]'),
        fc.constant('batch=1&input={"0":{"json":null},"1":5,"x":[]}'),
        fc.constant(`input=${encodeURIComponent(JSON.stringify({ json: { id: 'not-a-uuid' } }))}`),
        fc.constant('next=//evil.example'),
        fc.array(pathPiece, { maxLength: 4 }).map((pieces) => pieces.join('')),
      ),
      { nil: undefined },
    ),
  )
  // A request line cannot hold spaces or line breaks; anything else goes, byte for byte.
  .map(([prefix, pieces, query]) => `${prefix}${pieces.join('')}${query === undefined ? '' : `?${query}`}`.replace(/[\s]/g, '%20'));

/** Paths, and the other forms a request target may take: asterisk, absolute, authority. */
const anyTarget = fc.oneof(
  { weight: 8, arbitrary: target },
  { weight: 1, arbitrary: fc.constantFrom('*', 'http://127.0.0.1/sign-in', 'http://evil.example/api/trpc/health.invariants', '127.0.0.1:22', '//evil.example/', 'x') },
  { weight: 1, arbitrary: target.map((path) => `http://127.0.0.1${path.startsWith('/') ? path : `/${path}`}`) },
);

const latin1Garbage = fc.uint8Array({ minLength: 1, maxLength: 64 }).map((bytes) =>
  Buffer.from(bytes.map((b) => (b < 0x20 || b === 0x7f ? 0x80 + (b % 0x40) : b))).toString('latin1'),
);

const cookie = fc.oneof(
  fc.constant(() => session),
  fc.constant(() => `${session}; ${PROJECT_COOKIE}=%E0%A4%A`),
  fc.constant(() => `${session}; ${PROJECT_COOKIE}=${'x'.repeat(6000)}`),
  fc.constant(() => `${session}; ${PROJECT_COOKIE}=${projectId}; ${PROJECT_COOKIE}=nope`),
  fc.constant(() => `${session}; ${PROJECT_COOKIE}=%00`),
  fc.constant(() => `waypost.session_token=${'A'.repeat(3000)}`),
  fc.constant(() => 'waypost.session_token=%E0%A4%A; waypost.session_token=x.y'),
  fc.constant(() => `__Secure-waypost.session_token=${session.split('=')[1] ?? ''}`),
  fc.constant(() => ';;;=;=%;'),
  latin1Garbage.map((g) => () => `waypost.session_token=${g}`),
  latin1Garbage.map((g) => () => `${session}; ${PROJECT_COOKIE}=${g}`),
);

const header: fc.Arbitrary<() => [string, string]> = fc.oneof(
  cookie.map((c) => () => ['Cookie', c()] as [string, string]),
  fc.constant(() => ['Authorization', `Bearer ${apiKey}`] as [string, string]),
  fc.constantFrom('Bearer', 'Bearer ', 'Basic Zm9vOmJhcg==', `Bearer ${'wp_'.padEnd(5000, 'x')}`, 'Bearer %E0%A4%A', 'bearer wp_', 'Bearer wp_\u00e9\u00e9').map((v) => () => ['Authorization', v] as [string, string]),
  latin1Garbage.map((g) => () => ['Authorization', `Bearer ${g}`] as [string, string]),
  fc.constantFrom('not-a-uuid', '00000000-0000-0000-0000-000000000000', "' OR 1=1 --", '%00', '').map((v) => () => [PROJECT_HEADER, v] as [string, string]),
  latin1Garbage.map((g) => () => [PROJECT_HEADER, g] as [string, string]),
  fc.constantFrom('garbage', '::1, ::1, ::1', '999.999.999.999', '1.2.3.4, unknown, _hidden', ','.repeat(2000), '203.0.113.9:80, [::1]:443').map((v) => () => ['X-Forwarded-For', v] as [string, string]),
  latin1Garbage.map((g) => () => ['X-Forwarded-For', g] as [string, string]),
  fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=utf-16', 'application/jsonl', '*/*', 'application/json, application/json').map((v) => () => ['Content-Type', v] as [string, string]),
  fc.constantFrom('text/event-stream', 'application/jsonl', '*/*', 'x'.repeat(3000)).map((v) => () => ['Accept', v] as [string, string]),
  fc.constantFrom('null', 'https://evil.example', '\u00ff', 'http://127.0.0.1').map((v) => () => ['Origin', v] as [string, string]),
  fc.constantFrom('trpc-accept', 'X-HTTP-Method-Override', 'X-Forwarded-Host', 'X-Forwarded-Proto', 'X-Middleware-Subrequest', 'X-Invoke-Path', 'Next-Router-State-Tree', 'RSC', 'Next-Action').chain((name) => latin1Garbage.map((g) => () => [name, g] as [string, string])),
  fc.nat({ max: 9000 }).map((n) => () => ['X-Padding', 'p'.repeat(n)] as [string, string]),
);

const body = fc.oneof(
  fc.constant(undefined),
  fc.constantFrom('{', '[]', '{"json":', 'null', '""', '0', 'true', '{"0":1}', '{"0":{"json":{"email":5}}}', '{"json":{"__proto__":{"admin":true}}}', '\u0000\uffff', '{"json":{"email":"a@example.com"},"meta":{"values":{"email":["Date"]}}}', '{"json":{"id":"x"},"meta":{"values":{"id":["bigint"]}}}'),
  fc.constantFrom(10, 100, 1000).map((depth) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`),
  fc.json({ maxDepth: 4 }),
  fc.uint8Array({ maxLength: 256 }).map((bytes) => Buffer.from(bytes)),
);

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD', 'FOO', 'TRACE', 'CONNECT', 'TRACK', 'PROPFIND', 'get'];

const request = fc.record({
  method: fc.constantFrom(...METHODS),
  target: anyTarget,
  headers: fc.array(header, { maxLength: 5 }),
  body,
});

function describeAnswer(answer: RawAnswer) {
  return answer.status === null ? 'no answer (connection closed without a status line)' : `${answer.status}: ${answer.head.split('\r\n')[0]}`;
}

beforeAll(async () => {
  t = await freshDatabase();
  const project = await createProject(t.db, 'fuzzed');
  projectId = project.id;
  contactId = (await createContact(t.db, projectId, 'fuzz-contact@example.com')).id;
  await createPerson(t.db, { projectId, email: 'owner@fuzz.example.com', password: 'owner password', role: 'OWNER' });
  apiKey = (await newApiKey(t.db, projectId, 'OWNER')).secret;
  server = await startWebServer(t.url);
  const res = await fetch(`${server.base}/api/auth/sign-in/email`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: server.base },
    body: JSON.stringify({ email: 'owner@fuzz.example.com', password: 'owner password' }),
  });
  expect(res.status).toBe(200);
  session = res.headers
    .getSetCookie()
    .map((c) => c.split(';')[0]!)
    .join('; ');
}, 900_000);

afterAll(async () => {
  await server?.stop();
  await t?.drop();
});

describe('fuzzing the HTTP edge', () => {
  it('random paths, percent-encodings, cookies, headers and bodies: never a 5xx, always an answer, nothing written', async () => {
    // Not written by a request here, except: SignInFailure (a wrong password is counted)
    // and ConsoleFigure, the read cache of the console's counts, which a fuzzed request that
    // happens to be an authorized read of a count (executions.stats, workflows.list,
    // health.invariants…) fills. Refused reads store no figure: the authorization tests
    // count ConsoleFigure among the tables that must not change.
    const unwritten = ['SignInFailure', 'ConsoleFigure'];
    const before = await tableDigests(t, unwritten);
    const failures: string[] = [];
    await fc.assert(
      fc.asyncProperty(request, async ({ method, target, headers, body }) => {
        const answer = await raw(requestBytes(method, target, headers.map((h) => h()), body));
        if (answer.status === null || answer.status >= 500) {
          failures.push(`${method} ${target} -> ${describeAnswer(answer)}`);
          throw new Error(`${method} ${target} -> ${describeAnswer(answer)}\n${answer.head}`);
        }
      }),
      { numRuns: 300, endOnFailure: true },
    );
    expect(failures).toEqual([]);
    expect(await tableDigests(t, unwritten)).toEqual(before);
    // Any figure stored is the signed-in project's, of a kind the console reads.
    const figures = await t.query<{ projectId: string; kind: string }>('SELECT "projectId", kind FROM "ConsoleFigure"');
    for (const f of figures) {
      expect(f.projectId).toBe(projectId);
      expect(['counts', 'stuckGroups', 'invariants']).toContain(f.kind);
    }
  }, 300_000);

  it('several-megabyte, deeply nested, invalid and mistyped bodies at every API: 4xx, nothing written', async () => {
    const before = await tableDigests(t, ['SignInFailure']);
    const auth: [string, string][] = [
      ['Authorization', `Bearer ${apiKey}`],
      ['Content-Type', 'application/json'],
    ];
    const person: [string, string][] = [
      ['Cookie', session],
      ['Content-Type', 'application/json'],
      ['Origin', server.base],
    ];
    const deep = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
    const deepObject = (depth: number) => `{"json":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}`;
    const huge = (mb: number) => `{"json":{"email":"huge@example.com","data":{"blob":"${'x'.repeat(mb * 1024 * 1024)}"}}}`;
    const cases: [string, string, [string, string][], string | Buffer, 'hang up'?][] = [];
    for (const path of ['/api/trpc/contacts.upsert', '/api/trpc/contacts.upsert,contacts.upsert?batch=1', '/api/v1/events', '/api/v1/enrollments', '/api/auth/sign-in/email', '/api/auth/sign-up/email']) {
      for (const headers of [auth, person]) {
        cases.push(['POST', path, headers, huge(5)]);
        // Past the 12 MB limit: once per endpoint is enough (it is the same limit for everyone).
        if (headers === auth) cases.push(['POST', path, headers, huge(13)]);
        cases.push(['POST', path, headers, deep(10_000)]);
        cases.push(['POST', path, headers, deepObject(10_000)]);
        cases.push(['POST', path, headers, '{"json": {"email": "a@example.com"']);
        cases.push(['POST', path, headers, Buffer.from([0xff, 0xfe, 0x7b, 0x00, 0x22, 0x00])]);
        // Content types that lie about a JSON body (Node keeps the first of duplicated Content-Type headers: replaced, not added).
        for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/octet-stream']) {
          cases.push(['POST', path, [...headers.filter(([name]) => name !== 'Content-Type'), ['Content-Type', type]], '{"json":{"email":"lying@example.com"}}']);
        }
        // A length that lies: more announced than sent, then the client leaves.
        cases.push(['POST', path, [...headers, ['Content-Length', '1048576']], '{"json":{"email":"short@example.com"}}', 'hang up']);
        cases.push(['POST', path, [...headers, ['Content-Length', '5'], ['Content-Length', '7']], '{"a":1}']);
        cases.push(['TRACE', path, headers, '{"a":1}']);
        cases.push(['POST', path, [...headers, ['Transfer-Encoding', 'chunked']], '5\r\n{"a":\r\nZZ\r\n']);
      }
    }
    // Batches of the wrong shape: inputs for positions that do not exist, a list, a number.
    for (const input of ['{"0":1,"5":{"json":{}}}', '[{"json":{}}]', '7', '{"0":{"json":{"email":5}},"1":null}', '{"__proto__":{"json":{}}}']) {
      cases.push(['POST', '/api/trpc/contacts.upsert,contacts.upsert?batch=1', auth, input]);
      cases.push(['GET', `/api/trpc/contacts.get,contacts.list?batch=1&input=${encodeURIComponent(input)}`, auth, '']);
    }
    cases.push(['GET', `/api/trpc/contacts.get?input=${encodeURIComponent(deepObject(10_000))}`, auth, '']);
    cases.push(['CONNECT', `127.0.0.1:${server.port}`, [], '']);
    cases.push(['CONNECT', 'example.com:443', auth, '']);
    cases.push(['GET', `/api/trpc/contacts.get?input=${encodeURIComponent(JSON.stringify({ json: { id: contactId }, meta: { values: { id: ['custom', 'x'] } } }))}`, auth, '']);

    const failures: string[] = [];
    const statuses = new Set<number>();
    for (const [method, path, headers, body, hangUp] of cases) {
      const answer = await raw(requestBytes(method, path, headers, body === '' ? undefined : body), hangUp === 'hang up');
      if (answer.status !== null) statuses.add(answer.status);
      if ((answer.status === null && !hangUp) || (answer.status ?? 0) >= 500) failures.push(`${method} ${path} ${JSON.stringify(headers.map(([n]) => n))} ${String(body).slice(0, 40)} -> ${describeAnswer(answer)}`);
    }
    expect(failures).toEqual([]);
    // The run did reach the limits it means to test (not one kind of refusal for everything).
    expect([...statuses].sort()).toEqual(expect.arrayContaining([400, 413]));
    expect(await tableDigests(t, ['SignInFailure'])).toEqual(before);
    expect(await t.db.contact.count({ where: { email: { in: ['huge@example.com', 'lying@example.com', 'short@example.com', 'a@example.com'] } } })).toBe(0);
  }, 300_000);

  // What the fuzzing found, each pinned by itself (scripts/web.ts answers these now).
  describe('what fuzzing found', () => {
    it('TRACE, which fetch cannot carry, is 405 with Allow (it was a 500: "\'TRACE\' HTTP method is unsupported")', async () => {
      for (const path of ['/', '/sign-in', '/api/trpc/health.invariants', '/api/v1/events']) {
        const answer = await raw(requestBytes('TRACE', path, [['Authorization', `Bearer ${apiKey}`]]));
        expect(answer.status, path).toBe(405);
        expect(answer.head).toMatch(/\r\nAllow: GET, HEAD, POST/i);
      }
    });

    it('CONNECT host:port is answered 405 (the connection used to close with no answer)', async () => {
      const answer = await raw(requestBytes('CONNECT', `127.0.0.1:${server.port}`, []));
      expect(describeAnswer(answer)).toBe('405: HTTP/1.1 405 Method Not Allowed');
    });

    it('the asterisk form: OPTIONS * is 204 with Allow, any other method 400 (both were 500s)', async () => {
      expect((await raw(requestBytes('OPTIONS', '*', []))).status).toBe(204);
      expect((await raw(requestBytes('GET', '*', []))).status).toBe(400);
    });

    it('an absolute-form target is 400 and redirects nowhere (it was a 308 to the host it named)', async () => {
      for (const target of ['http://evil.example/', 'https://evil.example/sign-in', `http://127.0.0.1:${server.port}/`, 'evil.example:80']) {
        const answer = await raw(requestBytes('GET', target, []));
        expect(answer.status, target).toBe(400);
        expect(answer.head, target).not.toMatch(/\r\nLocation:/i);
      }
    });

    it('an undecodable path that looks like a file, under a dynamic page, is 400 (the proxy skips file-like paths; it was a 500)', async () => {
      for (const path of ['/executions/%ZZ.js', '/executions/%C0%AF.png', '/workflows/%E0%A4%A.json']) {
        for (const headers of [[], [['Cookie', session]]] as [string, string][][]) {
          const answer = await raw(requestBytes('GET', path, headers));
          expect(answer.status, `${path} ${headers.length ? 'signed in' : 'signed out'}`).toBe(400);
        }
      }
      const api = await fetch(`${server.base}/api/trpc/%ZZ.js`);
      expect(await api.json()).toEqual({ error: { message: expect.stringMatching(/not valid percent-encoding/), code: 'BAD_REQUEST' } });
    });
  });
});
