import { createHash, randomBytes } from 'node:crypto';
import { transaction, type Db, type DbTx, type Role } from '../db';
import { writeAudit } from '../engine/audit';
import { env } from '../env';
import { normalizeEmail, type AuditActor } from './admin';

// Invitations: how a person joins a project. An owner invites an email with a role and
// gets a link, shown once; the person behind that email accepts or declines it after
// signing in as that email (or, with no account yet, creates one from the link, for that
// email only). Nothing the owner does can attach an existing account to a project, and
// inviting answers the same whether or not the email has an account: the invitation is
// made without looking the account up, so neither the answer nor its timing tells.
//
// The link's token is 256 random bits; only its SHA-256 is stored (like API keys: high
// entropy, so a fast hash is enough and the row is found by an indexed lookup).
//
// Every attempt is audited in the invitation's project, in the transaction of its change
// (I8); the token and its hash never reach an entry, a log line or any answer but the
// inviter's. This file is the owner's side and what both sides share; the invitee's side
// (accept, decline, an account from a link) is invitee.ts.

/** How long a link stays good. */
export const INVITATION_DAYS = 7;

/** base64url of 32 random bytes. */
export const INVITATION_TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

export function hashInvitationToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

function generateInvitationToken(): { token: string; tokenHash: string } {
  const token = randomBytes(32).toString('base64url');
  return { token, tokenHash: hashInvitationToken(token) };
}

/** Where an invitation is opened: `${base}/invitations/<token>`. */
export function invitationLink(baseUrl: string, token: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/invitations/${token}`;
}

/**
 * The console's address for links: PUBLIC_URL when set; otherwise the origin the owner's
 * request came from if it is one the console is served on (localhost or 127.0.0.1 on
 * PORT), else http://localhost:PORT. A request cannot make the link point elsewhere.
 */
export function consoleBaseUrl(requestOrigin: string | null): string {
  const config = env();
  if (config.PUBLIC_URL) return config.PUBLIC_URL;
  const local = [`http://localhost:${config.PORT}`, `http://127.0.0.1:${config.PORT}`];
  return requestOrigin && local.includes(requestOrigin) ? requestOrigin : local[0]!;
}

export type InvitationStatus = 'PENDING' | 'ACCEPTED' | 'DECLINED' | 'REVOKED' | 'EXPIRED';

export interface InvitationRow {
  id: string;
  projectId: string;
  email: string;
  role: Role;
  invitedBy: string;
  createdAt: Date;
  expiresAt: Date;
  acceptedAt: Date | null;
  declinedAt: Date | null;
  revokedAt: Date | null;
}

export const INVITATION_ROW = {
  id: true,
  projectId: true,
  email: true,
  role: true,
  invitedBy: true,
  createdAt: true,
  expiresAt: true,
  acceptedAt: true,
  declinedAt: true,
  revokedAt: true,
} as const;

export function statusOf(row: Pick<InvitationRow, 'acceptedAt' | 'declinedAt' | 'revokedAt' | 'expiresAt'>, now = new Date()): InvitationStatus {
  if (row.acceptedAt) return 'ACCEPTED';
  if (row.declinedAt) return 'DECLINED';
  if (row.revokedAt) return 'REVOKED';
  if (row.expiresAt <= now) return 'EXPIRED';
  return 'PENDING';
}

/** What an owner sees of an invitation (never its token). */
export interface InvitationSummary {
  id: string;
  email: string;
  role: Role;
  status: InvitationStatus;
  invitedBy: string;
  createdAt: Date;
  expiresAt: Date;
  /** When it was accepted, declined or revoked. */
  endedAt: Date | null;
}

function summaryOf(row: InvitationRow): InvitationSummary {
  return {
    id: row.id,
    email: row.email,
    role: row.role,
    status: statusOf(row),
    invitedBy: row.invitedBy,
    createdAt: row.createdAt,
    expiresAt: row.expiresAt,
    endedAt: row.acceptedAt ?? row.declinedAt ?? row.revokedAt,
  };
}

// ---------------------------------------------------------------------------
// The owner's side

export type InviteResult =
  | { outcome: 'INVITED'; invitation: InvitationSummary; token: string }
  /** The email is already a member here (which the owner can see in the member list anyway). */
  | { outcome: 'ALREADY_MEMBER'; userId: string; role: Role };

/**
 * Invite an email to a project. A pending invitation of the same email to the same
 * project is revoked by the new one, so only the latest link works. Whether an account
 * exists is not looked up: one query asks "a member here?", which is answered the same
 * way for an unknown email and for an account that is not a member.
 */
export async function inviteMember(
  db: Db,
  input: { projectId: string; email: string; role: Role; actor: AuditActor },
): Promise<InviteResult> {
  const email = normalizeEmail(input.email);
  const { token, tokenHash } = generateInvitationToken();
  return transaction(db, 'SHORT', async (tx) => {
    const audit = { projectId: input.projectId, actor: input.actor, action: 'members.add', targetType: 'invitation' };
    const member = await tx.$queryRaw<{ userId: string; role: Role }[]>`
      -- inviteMember.existingMember
      SELECT m."userId", m.role FROM "Membership" m JOIN "User" u ON u.id = m."userId"
      WHERE m."projectId" = ${input.projectId}::uuid AND u.email = ${email}`;
    if (member[0]) {
      await writeAudit(tx, { ...audit, targetId: email, outcome: 'REJECTED', after: { email, role: input.role, error: 'ALREADY_MEMBER' } });
      return { outcome: 'ALREADY_MEMBER', userId: member[0].userId, role: member[0].role };
    }
    const replaced = await tx.invitation.updateMany({
      where: { projectId: input.projectId, email, acceptedAt: null, declinedAt: null, revokedAt: null, expiresAt: { gt: new Date() } },
      data: { revokedAt: new Date() },
    });
    const row = await tx.invitation.create({
      data: {
        projectId: input.projectId,
        email,
        role: input.role,
        tokenHash,
        invitedBy: input.actor,
        expiresAt: new Date(Date.now() + INVITATION_DAYS * 24 * 3600 * 1000),
      },
      select: INVITATION_ROW,
    });
    const invitation = summaryOf(row);
    await writeAudit(tx, {
      ...audit,
      targetId: row.id,
      outcome: 'APPLIED',
      after: { email, role: row.role, expiresAt: row.expiresAt, replacedPending: replaced.count },
    });
    return { outcome: 'INVITED', invitation, token };
  });
}

/** A project's invitations of the last 30 days (pending ones first), for Settings → Members. */
export async function listInvitations(db: DbTx, projectId: string): Promise<InvitationSummary[]> {
  const rows = await db.invitation.findMany({
    where: { projectId, createdAt: { gt: new Date(Date.now() - 30 * 24 * 3600 * 1000) } },
    select: INVITATION_ROW,
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    take: 200,
  });
  const all = rows.map(summaryOf);
  return [...all.filter((i) => i.status === 'PENDING'), ...all.filter((i) => i.status !== 'PENDING')];
}

export type InvitationChangeResult =
  | { outcome: 'APPLIED'; invitation: InvitationSummary }
  | { outcome: 'NOT_FOUND' }
  /** Accepted, declined, revoked or expired before this call got to it. */
  | { outcome: 'ENDED'; invitation: InvitationSummary };

/** Pending, in SQL: what every compare-and-swap below requires. */
export const PENDING = { acceptedAt: null, declinedAt: null, revokedAt: null } as const;

/** Revoke a pending invitation of the project: a compare-and-swap on its being pending. */
export async function revokeInvitation(
  db: Db,
  input: { projectId: string; id: string; actor: AuditActor; reason?: string | null },
): Promise<InvitationChangeResult> {
  return transaction(db, 'SHORT', async (tx) => {
    const audit = {
      projectId: input.projectId,
      actor: input.actor,
      action: 'members.revokeInvitation',
      targetType: 'invitation',
      targetId: input.id,
      reason: input.reason ?? null,
    };
    const revoked = await tx.invitation.updateMany({
      where: { id: input.id, projectId: input.projectId, ...PENDING, expiresAt: { gt: new Date() } },
      data: { revokedAt: new Date() },
    });
    const row = await tx.invitation.findFirst({ where: { id: input.id, projectId: input.projectId }, select: INVITATION_ROW });
    if (!row) {
      await writeAudit(tx, { ...audit, outcome: 'REJECTED', after: { error: 'NOT_FOUND' } });
      return { outcome: 'NOT_FOUND' };
    }
    const invitation = summaryOf(row);
    if (revoked.count === 0) {
      await writeAudit(tx, { ...audit, outcome: 'REJECTED', before: { email: row.email, status: invitation.status }, after: { error: invitation.status } });
      return { outcome: 'ENDED', invitation };
    }
    await writeAudit(tx, { ...audit, outcome: 'APPLIED', before: { email: row.email, role: row.role, status: 'PENDING' }, after: { status: 'REVOKED' } });
    return { outcome: 'APPLIED', invitation };
  });
}
