import { hashPassword } from 'better-auth/crypto';
import { transaction, type Db, type DbTx, type Role } from '../db';
import { writeAudit } from '../engine/audit';
import { generateApiKey } from './api-keys';

// A project's administration: its API keys and its members. Used by the OWNER-only tRPC
// routers and by the CLI, so both follow the same rules and leave the same audit trail.
// Every attempt — applied or refused — is audited in the transaction of its change (I8).
// Secrets stay out of the trail: a key's secret, a password and their hashes are never
// written to an audit entry, a log line or a return value other than createApiKey's.

/** Who acts: an Actor's audit id ("user:<id>", "apikey:<id>") or "system" for the CLI. */
export type AuditActor = string;

// ---------------------------------------------------------------------------
// API keys

export interface ApiKeySummary {
  id: string;
  name: string;
  role: Role;
  /** The key's first characters, to tell keys apart; useless for authenticating. */
  prefix: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

const API_KEY_SUMMARY = {
  id: true,
  name: true,
  role: true,
  prefix: true,
  createdAt: true,
  lastUsedAt: true,
  revokedAt: true,
} as const;

/** A project's keys, live ones first, newest first. */
export async function listApiKeys(db: DbTx, projectId: string): Promise<ApiKeySummary[]> {
  const keys = await db.apiKey.findMany({
    where: { projectId },
    select: API_KEY_SUMMARY,
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
  });
  return [...keys.filter((k) => !k.revokedAt), ...keys.filter((k) => k.revokedAt)];
}

export interface CreatedApiKey {
  id: string;
  /** The only time the key exists outside its holder: shown once, never stored. */
  secret: string;
  prefix: string;
}

export async function createApiKey(
  db: Db,
  input: { projectId: string; name: string; role: Role; actor: AuditActor },
): Promise<CreatedApiKey> {
  const { secret, prefix, hashedSecret } = generateApiKey();
  return transaction(db, 'SHORT', async (tx) => {
    const key = await tx.apiKey.create({
      data: { projectId: input.projectId, name: input.name, role: input.role, prefix, hashedSecret },
      select: API_KEY_SUMMARY,
    });
    await writeAudit(tx, {
      projectId: input.projectId,
      actor: input.actor,
      action: 'apiKeys.create',
      targetType: 'apiKey',
      targetId: key.id,
      after: { name: key.name, role: key.role, prefix: key.prefix },
      outcome: 'APPLIED',
    });
    return { id: key.id, secret, prefix };
  });
}

export type RevokeApiKeyResult =
  | { outcome: 'REVOKED'; key: ApiKeySummary }
  /** Revoked before: by whom is in the audit log, when is `key.revokedAt`. */
  | { outcome: 'ALREADY_REVOKED'; key: ApiKeySummary }
  | { outcome: 'NOT_FOUND' };

/**
 * Revoke a key of the project. The revocation is a compare-and-swap on `revokedAt IS NULL`,
 * so of two owners revoking at once exactly one is recorded as having done it.
 */
export async function revokeApiKey(
  db: Db,
  input: { projectId: string; id: string; actor: AuditActor; reason?: string | null },
): Promise<RevokeApiKeyResult> {
  return transaction(db, 'SHORT', async (tx) => {
    const revoked = await tx.apiKey.updateMany({
      where: { id: input.id, projectId: input.projectId, revokedAt: null },
      data: { revokedAt: new Date() },
    });
    const key = await tx.apiKey.findFirst({ where: { id: input.id, projectId: input.projectId }, select: API_KEY_SUMMARY });
    const audit = { projectId: input.projectId, actor: input.actor, action: 'apiKeys.revoke', targetType: 'apiKey', targetId: input.id, reason: input.reason ?? null };
    if (!key) {
      await writeAudit(tx, { ...audit, outcome: 'REJECTED', after: { error: 'NOT_FOUND' } });
      return { outcome: 'NOT_FOUND' };
    }
    if (revoked.count === 0) {
      await writeAudit(tx, { ...audit, outcome: 'REJECTED', before: { revokedAt: key.revokedAt }, after: { error: 'ALREADY_REVOKED' } });
      return { outcome: 'ALREADY_REVOKED', key };
    }
    await writeAudit(tx, {
      ...audit,
      before: { name: key.name, role: key.role, prefix: key.prefix, revokedAt: null },
      after: { name: key.name, role: key.role, prefix: key.prefix, revokedAt: key.revokedAt },
      outcome: 'APPLIED',
    });
    return { outcome: 'REVOKED', key };
  });
}

// ---------------------------------------------------------------------------
// Members

export interface MemberSummary {
  userId: string;
  email: string;
  name: string;
  role: Role;
  /** When the person joined this project. */
  joinedAt: Date;
}

export async function listMembers(db: DbTx, projectId: string): Promise<MemberSummary[]> {
  const rows = await db.membership.findMany({
    where: { projectId },
    select: { role: true, createdAt: true, user: { select: { id: true, email: true, name: true } } },
    orderBy: [{ user: { email: 'asc' } }],
  });
  return rows.map((m) => ({ userId: m.user.id, email: m.user.email, name: m.user.name, role: m.role, joinedAt: m.createdAt }));
}

/** better-auth looks people up by lower-cased email; store them that way. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export type AddMemberResult =
  | { outcome: 'ADDED'; member: MemberSummary; accountCreated: boolean }
  | { outcome: 'ALREADY_MEMBER'; member: MemberSummary }
  /** A new person needs a password to sign in with. */
  | { outcome: 'PASSWORD_REQUIRED' };

/**
 * Give a person a role in a project, creating their account (email + password, the
 * credential better-auth signs in with) when they have none. An existing account keeps
 * its password: an owner of one project must not be able to take over a person who also
 * belongs to another.
 */
export async function addMember(
  db: Db,
  input: { projectId: string; email: string; password?: string; name?: string; role: Role; actor: AuditActor },
): Promise<AddMemberResult> {
  const email = normalizeEmail(input.email);
  // Hashing is slow on purpose (scrypt): do it before the transaction holds any lock.
  const passwordHash = input.password === undefined ? null : await hashPassword(input.password);
  return transaction(db, 'SHORT', async (tx) => {
    const audit = { projectId: input.projectId, actor: input.actor, action: 'members.add', targetType: 'member' };
    const existing = await tx.user.findUnique({ where: { email }, select: { id: true } });
    if (!existing && passwordHash === null) {
      await writeAudit(tx, { ...audit, targetId: email, outcome: 'REJECTED', after: { email, role: input.role, error: 'PASSWORD_REQUIRED' } });
      return { outcome: 'PASSWORD_REQUIRED' };
    }
    const { userId, created } = existing
      ? { userId: existing.id, created: false }
      : await createPerson(tx, { email, name: input.name ?? nameFromEmail(email), passwordHash: passwordHash! });
    // ON CONFLICT: two owners adding the same person at once both get an answer, one
    // ADDED and one ALREADY_MEMBER, instead of a unique-violation 500.
    const inserted = await tx.$queryRaw<{ id: string }[]>`
      -- addMember.membership
      INSERT INTO "Membership" ("userId", "projectId", role)
      VALUES (${userId}, ${input.projectId}::uuid, ${input.role}::"Role")
      ON CONFLICT ("userId", "projectId") DO NOTHING
      RETURNING id`;
    const member = (await memberOf(tx, input.projectId, userId))!;
    if (inserted.length === 0) {
      await writeAudit(tx, { ...audit, targetId: userId, outcome: 'REJECTED', before: member, after: { error: 'ALREADY_MEMBER' } });
      return { outcome: 'ALREADY_MEMBER', member };
    }
    await writeAudit(tx, { ...audit, targetId: userId, outcome: 'APPLIED', after: { ...member, accountCreated: created } });
    return { outcome: 'ADDED', member, accountCreated: created };
  });
}

function nameFromEmail(email: string): string {
  return email.split('@')[0] || email;
}

/**
 * A person and their email + password credential, shaped as better-auth's sign-up makes
 * them (providerId "credential", accountId = user id). A concurrent creation of the same
 * email wins the insert; this one then uses the account that won.
 */
async function createPerson(
  tx: DbTx,
  person: { email: string; name: string; passwordHash: string },
): Promise<{ userId: string; created: boolean }> {
  const inserted = await tx.$queryRaw<{ id: string }[]>`
    -- createPerson
    INSERT INTO "User" (name, email, "emailVerified") VALUES (${person.name}, ${person.email}, true)
    ON CONFLICT (email) DO NOTHING
    RETURNING id`;
  if (inserted.length === 0) {
    const winner = await tx.user.findUniqueOrThrow({ where: { email: person.email }, select: { id: true } });
    return { userId: winner.id, created: false };
  }
  const userId = inserted[0]!.id;
  await tx.account.create({ data: { userId, accountId: userId, providerId: 'credential', password: person.passwordHash } });
  return { userId, created: true };
}

/** Set a person's password (the CLI's --reset-password); their sessions end with it. */
export async function setPassword(db: Db, input: { userId: string; password: string }): Promise<void> {
  const passwordHash = await hashPassword(input.password);
  await transaction(db, 'SHORT', async (tx) => {
    const updated = await tx.account.updateMany({
      where: { userId: input.userId, providerId: 'credential' },
      data: { password: passwordHash },
    });
    if (updated.count === 0) {
      await tx.account.create({ data: { userId: input.userId, accountId: input.userId, providerId: 'credential', password: passwordHash } });
    }
    await tx.session.deleteMany({ where: { userId: input.userId } });
  });
}

async function memberOf(tx: DbTx, projectId: string, userId: string): Promise<MemberSummary | null> {
  const m = await tx.membership.findUnique({
    where: { userId_projectId: { userId, projectId } },
    select: { role: true, createdAt: true, user: { select: { id: true, email: true, name: true } } },
  });
  return m && { userId: m.user.id, email: m.user.email, name: m.user.name, role: m.role, joinedAt: m.createdAt };
}

export type MemberChangeResult =
  | { outcome: 'APPLIED'; member: MemberSummary }
  | { outcome: 'NOT_FOUND' }
  /** The change would leave the project with no OWNER, so nobody could manage it any more. */
  | { outcome: 'LAST_OWNER'; member: MemberSummary };

/**
 * Locks the project's OWNER memberships and the target's, in id order, so that two owners
 * demoting each other at once are serialised: the second sees the first's change and is
 * refused instead of both succeeding and leaving the project ownerless.
 */
async function lockOwnersAndTarget(tx: DbTx, projectId: string, userId: string): Promise<{ userId: string; role: Role }[]> {
  return tx.$queryRaw<{ userId: string; role: Role }[]>`
    -- lockOwnersAndTarget
    SELECT "userId", role FROM "Membership"
    WHERE "projectId" = ${projectId}::uuid AND (role = 'OWNER' OR "userId" = ${userId})
    ORDER BY id
    FOR UPDATE`;
}

export async function setMemberRole(
  db: Db,
  input: { projectId: string; userId: string; role: Role; actor: AuditActor },
): Promise<MemberChangeResult> {
  return transaction(db, 'SHORT', async (tx) => {
    const audit = { projectId: input.projectId, actor: input.actor, action: 'members.setRole', targetType: 'member', targetId: input.userId };
    const locked = await lockOwnersAndTarget(tx, input.projectId, input.userId);
    const before = await memberOf(tx, input.projectId, input.userId);
    if (!before) {
      await writeAudit(tx, { ...audit, outcome: 'REJECTED', after: { role: input.role, error: 'NOT_FOUND' } });
      return { outcome: 'NOT_FOUND' };
    }
    if (before.role === 'OWNER' && input.role !== 'OWNER' && locked.filter((m) => m.role === 'OWNER').length <= 1) {
      await writeAudit(tx, { ...audit, outcome: 'REJECTED', before, after: { role: input.role, error: 'LAST_OWNER' } });
      return { outcome: 'LAST_OWNER', member: before };
    }
    await tx.membership.update({
      where: { userId_projectId: { userId: input.userId, projectId: input.projectId } },
      data: { role: input.role },
    });
    const member = { ...before, role: input.role };
    await writeAudit(tx, { ...audit, outcome: 'APPLIED', before, after: member });
    return { outcome: 'APPLIED', member };
  });
}

/** Take a person out of a project. Their account stays (they may belong to others). */
export async function removeMember(
  db: Db,
  input: { projectId: string; userId: string; actor: AuditActor; reason?: string | null },
): Promise<MemberChangeResult> {
  return transaction(db, 'SHORT', async (tx) => {
    const audit = { projectId: input.projectId, actor: input.actor, action: 'members.remove', targetType: 'member', targetId: input.userId, reason: input.reason ?? null };
    const locked = await lockOwnersAndTarget(tx, input.projectId, input.userId);
    const before = await memberOf(tx, input.projectId, input.userId);
    if (!before) {
      await writeAudit(tx, { ...audit, outcome: 'REJECTED', after: { error: 'NOT_FOUND' } });
      return { outcome: 'NOT_FOUND' };
    }
    if (before.role === 'OWNER' && locked.filter((m) => m.role === 'OWNER').length <= 1) {
      await writeAudit(tx, { ...audit, outcome: 'REJECTED', before, after: { error: 'LAST_OWNER' } });
      return { outcome: 'LAST_OWNER', member: before };
    }
    await tx.membership.delete({ where: { userId_projectId: { userId: input.userId, projectId: input.projectId } } });
    await writeAudit(tx, { ...audit, outcome: 'APPLIED', before, after: null });
    return { outcome: 'APPLIED', member: before };
  });
}
