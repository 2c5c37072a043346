import { TRPCError } from '@trpc/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveActor } from '../../server/auth/actor';
import { hashInvitationToken } from '../../server/auth/invitations';
import { closeDb, createDb, type Db } from '../../server/db';
import { createCaller } from '../../server/trpc/root';
import { PROJECT_HEADER } from '../../server/common/cookies';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createProject } from '../support/fixtures';
import { bearer, contextOf, createPerson, newApiKey, signIn } from '../support/auth';

// An owner invites, the person accepts. Nothing an owner does
// attaches an account to a project or tells them whether an email has an account, and a
// project the person has only been invited to never opens, by any cookie or header.

let t: TestDatabase;
let projectId: string;
let projectName: string;
let otherProjectId: string;
let ownerCookie: string;

const PASSWORD = 'invitee password';

async function callerWith(headers: Headers, db: Db = t.db) {
  return createCaller(await contextOf(db, headers));
}
const asCookie = (cookie: string, extra: Record<string, string> = {}) => new Headers({ cookie, ...extra });

async function owner() {
  return callerWith(asCookie(ownerCookie));
}

/** A person with an account, signed in, and member of `memberOf` (a project of their own otherwise none). */
async function person(email: string, memberOf?: string): Promise<{ userId: string; cookie: string }> {
  // createPerson is the CLI's direct path (an administrator with the database); it needs a project.
  const home = memberOf ?? (await createProject(t.db)).id;
  const { userId } = await createPerson(t.db, { projectId: home, email, password: PASSWORD, role: 'VIEWER' });
  if (!memberOf) await t.query(`DELETE FROM "Membership" WHERE "userId" = $1`, [userId]);
  return { userId, cookie: await signIn(t.db, email, PASSWORD) };
}

async function invite(email: string, role: 'VIEWER' | 'MARKETER' | 'OPERATOR' | 'OWNER' = 'MARKETER') {
  return (await owner()).members.add({ email, role });
}

const tokenOf = (link: string) => link.slice(link.lastIndexOf('/') + 1);

async function memberships(email: string, project = projectId) {
  return t.query(`SELECT m.role FROM "Membership" m JOIN "User" u ON u.id = m."userId" WHERE u.email = $1 AND m."projectId" = $2`, [email, project]);
}

async function failure(promise: Promise<unknown>): Promise<TRPCError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof TRPCError) return error;
    throw error;
  }
  throw new Error('expected a refusal, got an answer');
}

beforeAll(async () => {
  t = await freshDatabase();
  const project = await createProject(t.db, 'invitations-home');
  projectId = project.id;
  projectName = project.name;
  otherProjectId = (await createProject(t.db, 'invitations-elsewhere')).id;
  await createPerson(t.db, { projectId, email: 'owner@inv.example.com', password: 'owner password', role: 'OWNER' });
  ownerCookie = await signIn(t.db, 'owner@inv.example.com', 'owner password');
});
afterAll(() => t?.drop());

describe('members.add invites, and answers the same whether or not the email has an account', () => {
  it('same shape, same fields; no membership made, no account made', async () => {
    await person('has.account@inv.example.com', otherProjectId);
    const existing = await invite('has.account@inv.example.com');
    const unknown = await invite('no.account@inv.example.com');

    const shape = (answer: unknown): unknown =>
      answer && typeof answer === 'object' && !(answer instanceof Date)
        ? Object.fromEntries(Object.entries(answer).map(([k, v]) => [k, shape(v)]))
        : typeof answer;
    expect(shape(existing)).toEqual(shape(unknown));
    const comparable = (a: typeof existing) => ({ ...a.invitation, id: '', email: '', createdAt: 0, expiresAt: 0, link: a.link.replace(/[^/]+$/, '') });
    expect(comparable(existing)).toEqual(comparable(unknown));
    expect(existing.invitation).toMatchObject({ status: 'PENDING', role: 'MARKETER', email: 'has.account@inv.example.com' });
    expect(existing.link).toMatch(/^http:\/\/localhost:3000\/invitations\/[A-Za-z0-9_-]{43}$/);

    // Nothing joined: the account with that email is not pulled in, none is created.
    expect(await memberships('has.account@inv.example.com')).toEqual([]);
    expect(await t.query(`SELECT id FROM "User" WHERE email = 'no.account@inv.example.com'`)).toEqual([]);
  });

  it('a password is refused with a sentence, and nothing is created', async () => {
    const before = await t.query(`SELECT count(*)::int AS n FROM "Invitation"`);
    const refused = await failure((await owner()).members.add({ email: 'pw@inv.example.com', role: 'VIEWER', password: 'a long enough password' }));
    expect(refused.code).toBe('BAD_REQUEST');
    expect(refused.message).toMatch(/no longer sets passwords/);
    expect(await t.query(`SELECT count(*)::int AS n FROM "Invitation"`)).toEqual(before);
    expect(await t.query(`SELECT id FROM "User" WHERE email = 'pw@inv.example.com'`)).toEqual([]);
  });

  it('stores only a hash of the token; the link is never shown again', async () => {
    const { invitation, link } = await invite('hash@inv.example.com');
    const [row] = await t.query(`SELECT "tokenHash" FROM "Invitation" WHERE id = $1`, [invitation.id]);
    expect(row.tokenHash).toBe(hashInvitationToken(tokenOf(link)));
    expect(JSON.stringify(await t.query(`SELECT * FROM "Invitation"`))).not.toContain(tokenOf(link));
    const listed = await (await owner()).members.invitations();
    expect(JSON.stringify(listed)).not.toContain(tokenOf(link));
    expect(JSON.stringify(await t.query(`SELECT * FROM "AuditEntry"`))).not.toContain(tokenOf(link));
    expect(listed.find((i) => i.id === invitation.id)).toMatchObject({ status: 'PENDING', email: 'hash@inv.example.com' });
  });

  it('an existing member is a CONFLICT (the owner sees the member list anyway)', async () => {
    const refused = await failure(invite('owner@inv.example.com'));
    expect(refused.code).toBe('CONFLICT');
  });
});

describe('accepting', () => {
  it('the invitee sees it after signing in, accepts, and the project opens with the invited role', async () => {
    const invitee = await person('accepts@inv.example.com');
    const { invitation } = await invite('accepts@inv.example.com', 'OPERATOR');
    // Signed in, in no project: no actor for any project procedure yet…
    expect(await resolveActor(t.db, asCookie(invitee.cookie, { [PROJECT_HEADER]: projectId }))).toBeNull();
    const caller = await callerWith(asCookie(invitee.cookie));
    // …but their invitations are there.
    const mine = await caller.invitations.mine();
    expect(mine).toMatchObject([{ id: invitation.id, projectName, role: 'OPERATOR', invitedBy: 'owner@inv.example.com', status: 'PENDING' }]);

    expect(await caller.invitations.accept({ id: invitation.id })).toEqual({ projectId, projectName, role: 'OPERATOR', alreadyMember: false });
    expect(await memberships('accepts@inv.example.com')).toEqual([{ role: 'OPERATOR' }]);
    expect((await resolveActor(t.db, asCookie(invitee.cookie)))?.projectId).toBe(projectId);
    expect(await caller.invitations.mine()).toEqual([]);
    expect((await (await owner()).members.invitations()).find((i) => i.id === invitation.id)?.status).toBe('ACCEPTED');
  });

  it('a different signed-in person is refused with NOT_FOUND that names nothing, and nothing changes', async () => {
    const { invitation } = await invite('intended@inv.example.com');
    const intruder = await person('intruder@inv.example.com');
    const caller = await callerWith(asCookie(intruder.cookie));
    expect(await caller.invitations.mine()).toEqual([]);
    // One at a time: a second call started beside the first would reject unawaited.
    for (const attempt of [() => caller.invitations.accept({ id: invitation.id }), () => caller.invitations.decline({ id: invitation.id })]) {
      const refused = await failure(attempt());
      expect(refused.code).toBe('NOT_FOUND');
      expect(refused.message).not.toContain('intended@');
      expect(refused.message).not.toContain(projectName);
    }
    // The same answer as an id that names no invitation at all.
    const none = await failure(caller.invitations.accept({ id: '00000000-0000-4000-8000-000000000000' }));
    expect(none.message).toBe((await failure(caller.invitations.accept({ id: invitation.id }))).message);
    expect(await memberships('intruder@inv.example.com')).toEqual([]);
    const [row] = await t.query(`SELECT "acceptedAt", "declinedAt" FROM "Invitation" WHERE id = $1`, [invitation.id]);
    expect(row).toEqual({ acceptedAt: null, declinedAt: null });
  });

  it('an expired invitation is refused and opens nothing', async () => {
    const invitee = await person('late@inv.example.com');
    const { invitation } = await invite('late@inv.example.com');
    await t.query(`UPDATE "Invitation" SET "expiresAt" = now() - interval '1 second' WHERE id = $1`, [invitation.id]);
    const caller = await callerWith(asCookie(invitee.cookie));
    expect(await caller.invitations.mine()).toEqual([]);
    const refused = await failure(caller.invitations.accept({ id: invitation.id }));
    expect(refused.code).toBe('PRECONDITION_FAILED');
    expect(refused.message).toMatch(/expired/);
    expect(await memberships('late@inv.example.com')).toEqual([]);
  });

  it('a revoked invitation is refused and opens nothing; revoking twice is a CONFLICT', async () => {
    const invitee = await person('revoked@inv.example.com');
    const { invitation } = await invite('revoked@inv.example.com');
    expect(await (await owner()).members.revokeInvitation({ id: invitation.id })).toMatchObject({ status: 'REVOKED' });
    expect((await failure((await owner()).members.revokeInvitation({ id: invitation.id }))).code).toBe('CONFLICT');
    const refused = await failure((await callerWith(asCookie(invitee.cookie))).invitations.accept({ id: invitation.id }));
    expect(refused.code).toBe('PRECONDITION_FAILED');
    expect(await memberships('revoked@inv.example.com')).toEqual([]);
  });

  it('a second invitation of the same email replaces the first: only the latest works', async () => {
    const invitee = await person('twice@inv.example.com');
    const first = await invite('twice@inv.example.com', 'OWNER');
    const second = await invite('twice@inv.example.com', 'VIEWER');
    const caller = await callerWith(asCookie(invitee.cookie));
    expect((await caller.invitations.mine()).map((i) => i.id)).toEqual([second.invitation.id]);
    expect((await failure(caller.invitations.accept({ id: first.invitation.id }))).code).toBe('PRECONDITION_FAILED');
    expect((await caller.invitations.accept({ id: second.invitation.id })).role).toBe('VIEWER');
  });

  it('declining ends it: it cannot be accepted afterwards', async () => {
    const invitee = await person('declines@inv.example.com');
    const { invitation } = await invite('declines@inv.example.com');
    const caller = await callerWith(asCookie(invitee.cookie));
    expect(await caller.invitations.decline({ id: invitation.id })).toEqual({ declined: true });
    const refused = await failure(caller.invitations.accept({ id: invitation.id }));
    expect(refused.code).toBe('CONFLICT');
    expect(await memberships('declines@inv.example.com')).toEqual([]);
    expect((await (await owner()).members.invitations()).find((i) => i.id === invitation.id)?.status).toBe('DECLINED');
  });

  it('API keys cannot answer invitations (they act for a project, not a person)', async () => {
    const key = await newApiKey(t.db, projectId, 'OWNER');
    expect((await failure((await callerWith(bearer(key.secret))).invitations.mine())).code).toBe('UNAUTHORIZED');
    expect((await failure((await callerWith(new Headers())).invitations.mine())).code).toBe('UNAUTHORIZED');
  });
});

describe('a project one is only invited to never opens', () => {
  it('not by the project cookie, not by the header, for a member of another project or of none', async () => {
    const elsewhere = await person('member.elsewhere@inv.example.com', otherProjectId);
    const nowhere = await person('member.nowhere@inv.example.com');
    await invite('member.elsewhere@inv.example.com', 'OWNER');
    await invite('member.nowhere@inv.example.com', 'OWNER');
    for (const headers of [
      asCookie(`${elsewhere.cookie}; waypost_project=${projectId}`),
      asCookie(elsewhere.cookie, { [PROJECT_HEADER]: projectId }),
    ]) {
      const actor = await resolveActor(t.db, headers);
      expect(actor?.projectId).toBe(otherProjectId);
      expect(actor?.role).toBe('VIEWER');
      expect((await failure((await callerWith(headers)).members.list())).code).toBe('FORBIDDEN');
    }
    for (const headers of [asCookie(`${nowhere.cookie}; waypost_project=${projectId}`), asCookie(nowhere.cookie, { [PROJECT_HEADER]: projectId })]) {
      expect(await resolveActor(t.db, headers)).toBeNull();
      expect((await failure((await callerWith(headers)).contacts.list({}))).code).toBe('UNAUTHORIZED');
    }
  });
});

describe('an account from the link, for a person with none', () => {
  it('creates the account for the invited email only, accepts, and it signs in', async () => {
    const { link } = await invite('brand.new@inv.example.com', 'MARKETER');
    const anyone = await callerWith(new Headers());
    const made = await anyone.invitations.createAccount({ token: tokenOf(link), name: 'Brand New', password: 'my own password' });
    expect(made).toEqual({ email: 'brand.new@inv.example.com', projectId, projectName, role: 'MARKETER' });
    const cookie = await signIn(t.db, 'brand.new@inv.example.com', 'my own password');
    expect(await resolveActor(t.db, asCookie(cookie))).toMatchObject({ projectId, role: 'MARKETER', label: 'brand.new@inv.example.com' });
    // The link is spent.
    const again = await failure(anyone.invitations.createAccount({ token: tokenOf(link), name: 'Again', password: 'another password' }));
    expect(again.code).toBe('CONFLICT');
  });

  it('an email that has an account is refused, and its password stays as it was', async () => {
    await person('keeps.password@inv.example.com');
    const { link } = await invite('keeps.password@inv.example.com');
    const before = await t.query(`SELECT a.password FROM "Account" a JOIN "User" u ON u.id = a."userId" WHERE u.email = 'keeps.password@inv.example.com'`);
    const refused = await failure((await callerWith(new Headers())).invitations.createAccount({ token: tokenOf(link), name: 'Taker', password: 'taken over?' }));
    expect(refused.code).toBe('CONFLICT');
    expect(refused.message).toMatch(/sign in/);
    expect(await t.query(`SELECT a.password FROM "Account" a JOIN "User" u ON u.id = a."userId" WHERE u.email = 'keeps.password@inv.example.com'`)).toEqual(before);
    expect(await memberships('keeps.password@inv.example.com')).toEqual([]);
    await signIn(t.db, 'keeps.password@inv.example.com', PASSWORD);
  });

  it('a token that names no invitation, or a malformed one: a clear refusal, nothing created', async () => {
    const anyone = await callerWith(new Headers());
    expect((await failure(anyone.invitations.createAccount({ token: 'A'.repeat(43), name: 'X', password: 'long enough' }))).code).toBe('NOT_FOUND');
    expect((await failure(anyone.invitations.createAccount({ token: 'short', name: 'X', password: 'long enough' }))).code).toBe('BAD_REQUEST');
    expect(await t.query(`SELECT id FROM "User" WHERE name = 'X'`)).toEqual([]);
  });
});

describe('audit', () => {
  it('every step is in the invitation project’s log, owners only, never with the token', async () => {
    const invitee = await person('audited@inv.example.com');
    const { invitation, link } = await invite('audited@inv.example.com');
    await (await callerWith(asCookie(invitee.cookie))).invitations.accept({ id: invitation.id });
    const entries = await t.query(`SELECT action, outcome, actor FROM "AuditEntry" WHERE "targetId" = $1 ORDER BY at`, [invitation.id]);
    expect(entries).toEqual([
      { action: 'members.add', outcome: 'APPLIED', actor: expect.stringMatching(/^user:/) },
      { action: 'invitations.accept', outcome: 'APPLIED', actor: `user:${invitee.userId}` },
    ]);
    expect(JSON.stringify(await t.query(`SELECT * FROM "AuditEntry"`))).not.toContain(tokenOf(link));
  });
});

describe('two tabs accepting at once', () => {
  it('one membership, one acceptance, the other tabs a CONFLICT: repeated, over separate connections', async () => {
    const clients = Array.from({ length: 6 }, () => createDb(t.url, { applicationName: 'waypost-test-invite-race' }));
    try {
      for (let round = 0; round < 8; round++) {
        const email = `race-${round}@inv.example.com`;
        const invitee = await person(email);
        const { invitation } = await invite(email, 'OPERATOR');
        const callers = await Promise.all(clients.map((db) => callerWith(asCookie(invitee.cookie), db)));
        const answers = await Promise.allSettled(callers.map((c) => c.invitations.accept({ id: invitation.id })));
        const won = answers.filter((a) => a.status === 'fulfilled');
        const lost = answers.filter((a): a is PromiseRejectedResult => a.status === 'rejected');
        expect(won).toHaveLength(1);
        expect(lost.map((a) => (a.reason as TRPCError).code)).toEqual(Array(clients.length - 1).fill('CONFLICT'));
        expect(await memberships(email)).toEqual([{ role: 'OPERATOR' }]);
        expect(
          await t.query(`SELECT outcome, count(*)::int AS n FROM "AuditEntry" WHERE "targetId" = $1 AND action = 'invitations.accept' GROUP BY outcome ORDER BY outcome`, [invitation.id]),
        ).toEqual([
          { outcome: 'APPLIED', n: 1 },
          { outcome: 'REJECTED', n: clients.length - 1 },
        ]);
      }
    } finally {
      await Promise.all(clients.map((db) => closeDb(db)));
    }
  });
});
