import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { verifyPassword } from 'better-auth/crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../server/auth/api-keys';
import { hashInvitationToken } from '../../server/auth/invitations';
import { authFor } from '../../server/auth/auth';
import { appRouter } from '../../server/trpc/root';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createProject } from '../support/fixtures';
import { authRequest, contextOf, cookieHeaderFrom, createPerson, TEST_ORIGIN } from '../support/auth';

// Passwords and API keys are the two secrets the product handles. Neither may leave the
// place it belongs (the person's head, the integration's config): not in a log line, an
// audit entry or an API answer. This walks a real session of an owner — signing in,
// making a key, inviting a member who sets their password from the link (whose token is a
// secret too: only the inviter's answer shows it), the key calling the API — through the
// real HTTP handlers, capturing everything written to the console meanwhile, and then
// searches every captured byte, every audit entry and every answer for the secrets and
// for their hashes (a hash in a response is as good as a password to an offline attack).

let t: TestDatabase;
const OWNER_PASSWORD = 'owner-password-7f3a9c';
const MEMBER_PASSWORD = 'member-password-1b8e4d';
const WRONG_PASSWORD = 'wrong-password-5c2d0e';

/** Everything written to the console or stdout/stderr while `fn` runs. */
async function captureOutput(fn: () => Promise<void>): Promise<string> {
  const chunks: string[] = [];
  const methods = ['log', 'info', 'warn', 'error', 'debug', 'trace'] as const;
  const originalConsole = methods.map((m) => console[m]);
  const originalOut = process.stdout.write.bind(process.stdout);
  const originalErr = process.stderr.write.bind(process.stderr);
  const record = (...args: unknown[]) => {
    chunks.push(args.map((a) => (typeof a === 'string' ? a : a instanceof Error ? `${a.message} ${a.stack}` : JSON.stringify(a))).join(' '));
  };
  for (const m of methods) console[m] = record;
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    chunks.push(String(chunk));
    return originalOut(chunk, ...(rest as []));
  }) as typeof process.stdout.write;
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    chunks.push(String(chunk));
    return originalErr(chunk, ...(rest as []));
  }) as typeof process.stderr.write;
  try {
    await fn();
  } finally {
    methods.forEach((m, i) => (console[m] = originalConsole[i]!));
    process.stdout.write = originalOut;
    process.stderr.write = originalErr;
  }
  return chunks.join('\n');
}

/** A tRPC call over the real HTTP handler, as the console or an integration makes it. */
async function trpc(path: string, kind: 'query' | 'mutation', headers: Record<string, string>, input?: unknown): Promise<{ status: number; text: string }> {
  const url = new URL(`${TEST_ORIGIN}/api/trpc/${path}`);
  const init: RequestInit = { method: kind === 'query' ? 'GET' : 'POST', headers: { 'content-type': 'application/json', ...headers } };
  if (kind === 'query') url.searchParams.set('input', JSON.stringify({ json: input ?? null }));
  else init.body = JSON.stringify({ json: input ?? null });
  const response = await fetchRequestHandler({
    endpoint: '/api/trpc',
    req: new Request(url, init),
    router: appRouter,
    // What app/api/trpc's createContext does, on this file's database.
    createContext: ({ req }) => contextOf(t.db, req.headers),
  });
  return { status: response.status, text: await response.text() };
}

interface Session {
  output: string;
  responses: string[];
  apiKey: string;
  ownerCookie: string;
  /** The invitation link's token, and the one answer allowed to carry it. */
  invitationToken: string;
  inviteAnswer: string;
}
let session: Session;

beforeAll(async () => {
  t = await freshDatabase();
  const project = await createProject(t.db, 'secrets');
  await createPerson(t.db, { projectId: project.id, email: 'owner@secrets.example.com', password: OWNER_PASSWORD, role: 'OWNER' });

  const responses: string[] = [];
  let apiKey = '';
  let ownerCookie = '';
  let invitationToken = '';
  let inviteAnswer = '';
  const output = await captureOutput(async () => {
    const wrong = await authRequest(t.db, 'sign-in/email', { body: { email: 'owner@secrets.example.com', password: WRONG_PASSWORD }, ip: '203.0.113.1' });
    responses.push(await wrong.text());
    const signedIn = await authRequest(t.db, 'sign-in/email', { body: { email: 'owner@secrets.example.com', password: OWNER_PASSWORD }, ip: '203.0.113.2' });
    expect(signedIn.status).toBe(200);
    ownerCookie = cookieHeaderFrom(signedIn);
    responses.push(await signedIn.text());
    const owner = { cookie: ownerCookie, origin: TEST_ORIGIN };

    const created = await trpc('apiKeys.create', 'mutation', owner, { name: 'shop backend', role: 'MARKETER' });
    expect(created.status).toBe(200);
    apiKey = (JSON.parse(created.text) as { result: { data: { json: { secret: string } } } }).result.data.json.secret;
    const invited = await trpc('members.add', 'mutation', owner, { email: 'new@secrets.example.com', role: 'VIEWER' });
    expect(invited.status).toBe(200);
    inviteAnswer = invited.text;
    invitationToken = /\/invitations\/([A-Za-z0-9_-]{43})/.exec(invited.text)![1]!;
    const joined = await trpc('invitations.createAccount', 'mutation', {}, { token: invitationToken, name: 'New', password: MEMBER_PASSWORD });
    expect(joined.status, joined.text).toBe(200);
    responses.push(joined.text);
    // The same link again, and with a password that breaks the rules: no refusal may quote either.
    responses.push((await trpc('invitations.createAccount', 'mutation', {}, { token: invitationToken, name: 'New', password: MEMBER_PASSWORD })).text);
    responses.push((await trpc('invitations.createAccount', 'mutation', {}, { token: invitationToken, name: 'New', password: 'short' })).text);

    // The key at work, and a mistyped key: neither answer may echo it.
    const asKey = { authorization: `Bearer ${apiKey}` };
    responses.push((await trpc('contacts.upsert', 'mutation', asKey, { email: 'buyer@example.com', data: { plan: 'pro' } })).text);
    responses.push((await trpc('contacts.list', 'query', asKey, {})).text);
    const mistyped = await trpc('contacts.list', 'query', { authorization: `Bearer ${apiKey.slice(0, -1)}x` }, {});
    expect(mistyped.status).toBe(401);
    responses.push(mistyped.text);
    // members.add no longer takes a password: the refusal must not quote it.
    responses.push((await trpc('members.add', 'mutation', owner, { email: 'short@secrets.example.com', password: MEMBER_PASSWORD, role: 'VIEWER' })).text);

    for (const [path, input] of [
      ['apiKeys.list', undefined],
      ['members.list', undefined],
      ['members.invitations', undefined],
      ['contacts.list', {}],
      ['audit.list', { limit: 200 }],
    ] as const) {
      const answer = await trpc(path, 'query', owner, input);
      expect(answer.status, `${path}: ${answer.text}`).toBe(200);
      responses.push(answer.text);
    }
    const sessionAnswer = await authFor(t.db).handler(new Request(`${TEST_ORIGIN}/api/auth/get-session`, { headers: { cookie: ownerCookie } }));
    responses.push(await sessionAnswer.text());
  });
  session = { output, responses, apiKey, ownerCookie, invitationToken, inviteAnswer };
});
afterAll(() => t.drop());

/** Every secret of the session, and every hash of one that the database holds. */
async function secrets(): Promise<Record<string, string>> {
  const accounts = await t.query<{ password: string }>(`SELECT password FROM "Account" WHERE password IS NOT NULL`);
  return {
    'owner password': OWNER_PASSWORD,
    'member password': MEMBER_PASSWORD,
    'mistyped password': WRONG_PASSWORD,
    'API key': session.apiKey,
    'API key hash': hashApiKey(session.apiKey),
    'invitation token hash': hashInvitationToken(session.invitationToken),
    ...Object.fromEntries(accounts.map((a, i) => [`password hash ${i}`, a.password])),
  };
}

function leaks(haystack: string, found: Record<string, string>): string[] {
  return Object.entries(found)
    .filter(([, secret]) => haystack.includes(secret))
    .map(([name]) => name);
}

describe('passwords and API keys never leak', () => {
  it('the session really used the secrets (the searches below are not vacuous)', async () => {
    expect(session.apiKey).toMatch(/^wp_[0-9A-Za-z]{40}$/);
    expect(session.responses.length).toBeGreaterThan(8);
    expect(await t.db.auditEntry.count({ where: { action: { in: ['apiKeys.create', 'members.add', 'invitations.createAccount'] } } })).toBeGreaterThanOrEqual(3);
    expect(await t.db.apiKey.findFirstOrThrow({ where: { name: 'shop backend' } })).toMatchObject({ lastUsedAt: expect.any(Date) });
  });

  it('not in anything written to the console or stdout/stderr', async () => {
    expect(leaks(session.output, { ...(await secrets()), 'invitation token': session.invitationToken })).toEqual([]);
  });

  it('not in any audit entry', async () => {
    const entries = await t.query(`SELECT * FROM "AuditEntry"`);
    expect(entries.length).toBeGreaterThan(0);
    expect(leaks(JSON.stringify(entries), { ...(await secrets()), 'invitation token': session.invitationToken })).toEqual([]);
  });

  it('the invitation link is in the inviter’s answer, and in no other', async () => {
    expect(session.inviteAnswer).toContain(session.invitationToken);
    expect(leaks(session.inviteAnswer, await secrets())).toEqual([]);
    expect(leaks(session.responses.join('\n'), { 'invitation token': session.invitationToken })).toEqual([]);
    expect(JSON.stringify(await t.query(`SELECT * FROM "Invitation"`))).not.toContain(session.invitationToken);
  });

  it('not in any API answer, the key list, the member list and the session included', async () => {
    const all = session.responses.join('\n');
    expect(leaks(all, await secrets())).toEqual([]);
    // The list shows the prefix that tells keys apart, and nothing from which to rebuild one.
    expect(all).toContain(session.apiKey.slice(0, 10));
    expect(all).not.toMatch(/hashedSecret/);
  });

  it('the Account table holds scrypt hashes, never a password', async () => {
    const accounts = await t.query<{ password: string }>(`SELECT a.password FROM "Account" a JOIN "User" u ON u.id = a."userId" ORDER BY u.email`);
    expect(accounts).toHaveLength(2);
    for (const [account, password] of [
      [accounts[1]!, OWNER_PASSWORD],
      [accounts[0]!, MEMBER_PASSWORD],
    ] as const) {
      expect(account.password).not.toContain(password);
      // better-auth's format: hex salt, colon, hex scrypt key.
      expect(account.password).toMatch(/^[0-9a-f]{32}:[0-9a-f]{128}$/);
      expect(await verifyPassword({ hash: account.password, password })).toBe(true);
    }
  });

  it('the ApiKey table holds a SHA-256 of the key, never the key', async () => {
    const rows = await t.query(`SELECT * FROM "ApiKey"`);
    expect(JSON.stringify(rows)).not.toContain(session.apiKey);
    expect(rows.map((r) => r.hashedSecret)).toContain(hashApiKey(session.apiKey));
  });
});
