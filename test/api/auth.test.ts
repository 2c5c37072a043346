import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveActor } from '../../server/auth/actor';
import { revokeApiKey } from '../../server/auth/admin';
import { authFor, authSettings, createAuth, SIGN_IN_MAX_ATTEMPTS } from '../../server/auth/auth';
import { PROJECT_COOKIE, PROJECT_HEADER } from '../../server/common/cookies';
import { EnvError, parseEnv } from '../../server/env';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createProject } from '../support/fixtures';
import { authRequest, bearer, cookieHeaderFrom, createPerson, newApiKey, signIn, TEST_ORIGIN } from '../support/auth';

let t: TestDatabase;
let alpha: { id: string; name: string };
let beta: { id: string; name: string };
const PASSWORD = 'correct horse battery';

beforeAll(async () => {
  t = await freshDatabase();
  // Named so that "alpha" sorts first: a person's default project is their first by name.
  alpha = await createProject(t.db, 'alpha');
  beta = await createProject(t.db, 'beta');
});
afterAll(() => t.drop());

/** Each test signs in from its own address, so the sign-in limiter of one never blocks another. */
let nextHost = 1;
const freshIp = () => `198.51.100.${nextHost++}`;

describe('sign-in and sign-out', () => {
  it('signing in sets an httpOnly SameSite=Lax session cookie that resolves to the person in their project', async () => {
    const { userId } = await createPerson(t.db, { projectId: alpha.id, email: 'ada@example.com', password: PASSWORD, role: 'OPERATOR' });

    const response = await authRequest(t.db, 'sign-in/email', { body: { email: 'Ada@Example.com', password: PASSWORD }, ip: freshIp() });

    expect(response.status).toBe(200);
    const session = response.headers.getSetCookie().find((c) => c.startsWith('waypost.session_token='));
    expect(session).toBeDefined();
    expect(session).toMatch(/;\s*HttpOnly/i);
    expect(session).toMatch(/;\s*SameSite=Lax/i);
    expect(session).toMatch(/;\s*Path=\//i);
    // Served over http://localhost: a Secure cookie would never come back.
    expect(session).not.toMatch(/;\s*Secure/i);

    const actor = await resolveActor(t.db, new Headers({ cookie: cookieHeaderFrom(response) }));
    expect(actor).toEqual({
      kind: 'user',
      id: `user:${userId}`,
      label: 'ada@example.com',
      userId,
      apiKeyId: null,
      projectId: alpha.id,
      role: 'OPERATOR',
    });
  });

  it('a wrong password is 401 and sets no session', async () => {
    await createPerson(t.db, { projectId: alpha.id, email: 'grace@example.com', password: PASSWORD, role: 'VIEWER' });
    const response = await authRequest(t.db, 'sign-in/email', { body: { email: 'grace@example.com', password: 'not it at all' }, ip: freshIp() });
    expect(response.status).toBe(401);
    expect(response.headers.getSetCookie().some((c) => c.startsWith('waypost.session_token=') && !c.startsWith('waypost.session_token=;'))).toBe(false);
  });

  it('nobody can sign up: accounts come from owners and the CLI only', async () => {
    const response = await authRequest(t.db, 'sign-up/email', {
      body: { email: 'intruder@example.com', password: 'letmein-please', name: 'Intruder' },
      ip: freshIp(),
    });
    expect(response.status).toBeGreaterThanOrEqual(400);
    expect(response.status).toBeLessThan(500);
    expect(await t.db.user.findUnique({ where: { email: 'intruder@example.com' } })).toBeNull();
  });

  it('signing out ends the session: the old cookie no longer resolves', async () => {
    await createPerson(t.db, { projectId: alpha.id, email: 'linus@example.com', password: PASSWORD, role: 'MARKETER' });
    const cookie = await signIn(t.db, 'linus@example.com', PASSWORD);
    expect(await resolveActor(t.db, new Headers({ cookie }))).not.toBeNull();

    const response = await authRequest(t.db, 'sign-out', { cookie, ip: freshIp() });

    expect(response.status).toBe(200);
    expect(await resolveActor(t.db, new Headers({ cookie }))).toBeNull();
    const user = await t.db.user.findUniqueOrThrow({ where: { email: 'linus@example.com' } });
    expect(await t.db.session.count({ where: { userId: user.id } })).toBe(0);
  });

  it('a signed-in request from a foreign origin is refused (CSRF)', async () => {
    await createPerson(t.db, { projectId: alpha.id, email: 'barbara@example.com', password: PASSWORD, role: 'VIEWER' });
    const cookie = await signIn(t.db, 'barbara@example.com', PASSWORD);
    const response = await authFor(t.db).handler(
      new Request(`${TEST_ORIGIN}/api/auth/sign-out`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: 'http://evil.example', cookie, 'x-forwarded-for': freshIp() },
        body: '{}',
      }),
    );
    expect(response.status).toBe(403);
    expect(await resolveActor(t.db, new Headers({ cookie }))).not.toBeNull();
  });

  it('an expired session resolves to nobody', async () => {
    await createPerson(t.db, { projectId: alpha.id, email: 'edsger@example.com', password: PASSWORD, role: 'VIEWER' });
    const cookie = await signIn(t.db, 'edsger@example.com', PASSWORD);
    const user = await t.db.user.findUniqueOrThrow({ where: { email: 'edsger@example.com' } });
    await t.db.session.updateMany({ where: { userId: user.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    expect(await resolveActor(t.db, new Headers({ cookie }))).toBeNull();
  });

  it('a forged cookie resolves to nobody', async () => {
    expect(await resolveActor(t.db, new Headers({ cookie: 'waypost.session_token=forged.signature' }))).toBeNull();
  });
});

describe('sign-in rate limiting', () => {
  it(`the ${SIGN_IN_MAX_ATTEMPTS + 1}th rapid attempt from one address is 429, even with the right password; other addresses are unaffected`, async () => {
    await createPerson(t.db, { projectId: alpha.id, email: 'katherine@example.com', password: PASSWORD, role: 'VIEWER' });
    const attacker = freshIp();
    const statuses: number[] = [];
    for (let attempt = 0; attempt < SIGN_IN_MAX_ATTEMPTS + 1; attempt++) {
      const response = await authRequest(t.db, 'sign-in/email', { body: { email: 'katherine@example.com', password: `guess-${attempt}` }, ip: attacker });
      statuses.push(response.status);
    }
    expect(statuses).toEqual([...Array(SIGN_IN_MAX_ATTEMPTS).fill(401), 429]);

    const blocked = await authRequest(t.db, 'sign-in/email', { body: { email: 'katherine@example.com', password: PASSWORD }, ip: attacker });
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('x-retry-after'))).toBeGreaterThan(0);

    const elsewhere = await authRequest(t.db, 'sign-in/email', { body: { email: 'katherine@example.com', password: PASSWORD }, ip: freshIp() });
    expect(elsewhere.status).toBe(200);
  });
});

describe('cookie security follows the public address', () => {
  it('over https (PUBLIC_URL) the session cookie is __Host- prefixed: Secure, Path=/, no Domain; and it signs the person in', async () => {
    const settings = authSettings(parseEnv({ AUTH_SECRET: 'x'.repeat(40), PUBLIC_URL: 'https://waypost.example.com/console/' }));
    expect(settings).toMatchObject({ baseURL: 'https://waypost.example.com', trustedOrigins: ['https://waypost.example.com'] });
    await createPerson(t.db, { projectId: alpha.id, email: 'frances@example.com', password: PASSWORD, role: 'VIEWER' });
    const auth = createAuth(t.db, settings);

    const response = await auth.api.signInEmail({ body: { email: 'frances@example.com', password: PASSWORD }, asResponse: true });

    const cookies = response.headers.getSetCookie();
    // Every cookie better-auth sets over https carries the prefix, none the weaker __Secure-.
    expect(cookies.length).toBeGreaterThan(0);
    expect(cookies.every((c) => c.startsWith('__Host-waypost.'))).toBe(true);
    const session = cookies.find((c) => c.startsWith('__Host-waypost.session_token='));
    expect(session).toMatch(/;\s*Secure/i);
    expect(session).toMatch(/;\s*HttpOnly/i);
    expect(session).toMatch(/;\s*SameSite=Lax/i);
    expect(session).toMatch(/;\s*Path=\/(;|$)/i);
    expect(session).not.toMatch(/;\s*Domain=/i);
    // The request proxy knows the name (it lets the visitor through to the console) and better-auth reads it back.
    const { SESSION_COOKIE_NAMES } = await import('../../server/common/cookies');
    expect(SESSION_COOKIE_NAMES).toContain(session!.split('=')[0]);
    const back = await auth.api.getSession({ headers: new Headers({ cookie: session!.split(';')[0]! }) });
    expect(back?.user.email).toBe('frances@example.com');
  });

  it('without PUBLIC_URL the console is trusted at localhost and 127.0.0.1 on PORT', () => {
    expect(authSettings(parseEnv({ AUTH_SECRET: 'y'.repeat(32), PORT: '4100' }))).toMatchObject({
      baseURL: 'http://localhost:4100',
      trustedOrigins: ['http://localhost:4100', 'http://127.0.0.1:4100'],
    });
  });

  it('a missing or short AUTH_SECRET is a sentence, not a stack trace', () => {
    expect(() => authSettings(parseEnv({}))).toThrow(EnvError);
    expect(() => authSettings(parseEnv({}))).toThrow(/AUTH_SECRET is not set/);
    expect(() => parseEnv({ AUTH_SECRET: 'short' })).toThrow(/AUTH_SECRET: must be at least 32 characters/);
    expect(() => parseEnv({ PUBLIC_URL: 'ftp://files.example.com' })).toThrow(/PUBLIC_URL: must be an http/);
  });
});

describe('API keys', () => {
  it('a valid key is its project and role; malformed, unknown and revoked keys are nobody', async () => {
    const key = await newApiKey(t.db, beta.id, 'MARKETER', 'shop backend');
    expect(await resolveActor(t.db, bearer(key.secret))).toEqual({
      kind: 'apikey',
      id: `apikey:${key.id}`,
      label: 'shop backend',
      userId: null,
      apiKeyId: key.id,
      projectId: beta.id,
      role: 'MARKETER',
    });

    const unknown = `wp_${'A'.repeat(40)}`;
    for (const authorization of ['Bearer', 'Bearer ', 'Basic abc', `Bearer ${key.secret}x`, `Bearer ${unknown}`, `Token ${key.secret}`]) {
      expect(await resolveActor(t.db, new Headers({ authorization })), authorization.replace(key.secret, '<key>')).toBeNull();
    }

    const revoked = await revokeApiKey(t.db, { projectId: beta.id, id: key.id, actor: 'system' });
    expect(revoked.outcome).toBe('REVOKED');
    expect(await resolveActor(t.db, bearer(key.secret))).toBeNull();
  });

  it('a bad key is judged alone: a session cookie on the same request does not rescue it', async () => {
    await createPerson(t.db, { projectId: alpha.id, email: 'donald@example.com', password: PASSWORD, role: 'OWNER' });
    const cookie = await signIn(t.db, 'donald@example.com', PASSWORD);
    const headers = new Headers({ cookie, authorization: `Bearer wp_${'B'.repeat(40)}` });
    expect(await resolveActor(t.db, headers)).toBeNull();
  });

  it('lastUsedAt is recorded on use, at most once a minute per key', async () => {
    const key = await newApiKey(t.db, beta.id, 'VIEWER');
    const lastUsed = async () => (await t.db.apiKey.findUniqueOrThrow({ where: { id: key.id } })).lastUsedAt;
    expect(await lastUsed()).toBeNull();

    await resolveActor(t.db, bearer(key.secret));
    const first = await lastUsed();
    expect(first).toBeInstanceOf(Date);

    await resolveActor(t.db, bearer(key.secret));
    expect(await lastUsed()).toEqual(first);

    const twoMinutesAgo = new Date(Date.now() - 120_000);
    await t.db.apiKey.update({ where: { id: key.id }, data: { lastUsedAt: twoMinutesAgo } });
    await resolveActor(t.db, bearer(key.secret));
    expect((await lastUsed())!.getTime()).toBeGreaterThan(twoMinutesAgo.getTime() + 60_000);
  });
});

describe('project switching', () => {
  let cookie: string;
  beforeAll(async () => {
    await createPerson(t.db, { projectId: alpha.id, email: 'margaret@example.com', password: PASSWORD, role: 'VIEWER' });
    await createPerson(t.db, { projectId: beta.id, email: 'margaret@example.com', password: PASSWORD, role: 'OWNER' });
    cookie = await signIn(t.db, 'margaret@example.com', PASSWORD);
  });

  it('defaults to the first project by name', async () => {
    expect(await resolveActor(t.db, new Headers({ cookie }))).toMatchObject({ projectId: alpha.id, role: 'VIEWER' });
  });

  it('switches by the switcher cookie or the header, with the role held there', async () => {
    expect(await resolveActor(t.db, new Headers({ cookie: `${cookie}; ${PROJECT_COOKIE}=${beta.id}` }))).toMatchObject({
      projectId: beta.id,
      role: 'OWNER',
    });
    expect(await resolveActor(t.db, new Headers({ cookie, [PROJECT_HEADER]: beta.id }))).toMatchObject({ projectId: beta.id, role: 'OWNER' });
  });

  it('never into a project the person is not a member of', async () => {
    const foreign = await createProject(t.db, 'gamma');
    for (const requested of [foreign.id, 'not-a-uuid', "'; DROP TABLE \"Membership\"; --"]) {
      const viaCookie = await resolveActor(t.db, new Headers({ cookie: `${cookie}; ${PROJECT_COOKIE}=${encodeURIComponent(requested)}` }));
      const viaHeader = await resolveActor(t.db, new Headers({ cookie, [PROJECT_HEADER]: requested }));
      for (const actor of [viaCookie, viaHeader]) expect(actor).toMatchObject({ projectId: alpha.id, role: 'VIEWER' });
    }
  });

  it('a person in no project is nobody, even with a valid session', async () => {
    await createPerson(t.db, { projectId: alpha.id, email: 'alan@example.com', password: PASSWORD, role: 'VIEWER' });
    const aloneCookie = await signIn(t.db, 'alan@example.com', PASSWORD);
    const user = await t.db.user.findUniqueOrThrow({ where: { email: 'alan@example.com' } });
    await t.db.membership.deleteMany({ where: { userId: user.id } });
    expect(await resolveActor(t.db, new Headers({ cookie: aloneCookie }))).toBeNull();
  });
});
