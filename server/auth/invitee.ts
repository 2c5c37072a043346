import { hashPassword } from 'better-auth/crypto';
import { transaction, type Db, type DbTx, type Role } from '../db';
import { writeAudit } from '../engine/audit';
import { normalizeEmail } from './admin';
import { hashInvitationToken, INVITATION_ROW, INVITATION_TOKEN_PATTERN, PENDING, statusOf, type InvitationRow, type InvitationStatus } from './invitations';

// The invitee's side of an invitation (invitations.ts has the owner's and what both
// share): the invitations addressed to a signed-in person, accepting or declining one as
// that email, and creating an account from a link for that email only. Every answer is
// audited in the invitation's project, in the transaction of its change (I8).

/** What the invitee sees: the project by name, and who invited them. */
export interface ReceivedInvitation {
  id: string;
  projectId: string;
  projectName: string;
  role: Role;
  email: string;
  /** The inviter's email, or "an API key" / "an administrator". */
  invitedBy: string;
  createdAt: Date;
  expiresAt: Date;
  status: InvitationStatus;
}

async function received(tx: DbTx, rows: (InvitationRow & { project: { name: string } })[]): Promise<ReceivedInvitation[]> {
  const userIds = [...new Set(rows.map((r) => r.invitedBy).filter((a) => a.startsWith('user:')).map((a) => a.slice(5)))];
  const users = userIds.length ? await tx.user.findMany({ where: { id: { in: userIds } }, select: { id: true, email: true } }) : [];
  const emails = new Map(users.map((u) => [`user:${u.id}`, u.email]));
  return rows.map((r) => ({
    id: r.id,
    projectId: r.projectId,
    projectName: r.project.name,
    role: r.role,
    email: r.email,
    invitedBy: emails.get(r.invitedBy) ?? (r.invitedBy.startsWith('apikey:') ? 'an API key' : 'an administrator'),
    createdAt: r.createdAt,
    expiresAt: r.expiresAt,
    status: statusOf(r),
  }));
}

/** The pending invitations addressed to a signed-in person's email, newest first. */
export async function pendingInvitationsFor(db: DbTx, email: string): Promise<ReceivedInvitation[]> {
  const rows = await db.invitation.findMany({
    where: { email: normalizeEmail(email), ...PENDING, expiresAt: { gt: new Date() } },
    select: { ...INVITATION_ROW, project: { select: { name: true } } },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    take: 50,
  });
  return received(db, rows);
}

export async function countPendingInvitationsFor(db: DbTx, email: string): Promise<number> {
  return db.invitation.count({ where: { email: normalizeEmail(email), ...PENDING, expiresAt: { gt: new Date() } } });
}

/** The invitation behind a link (any status), or null for a token that names none. */
export async function invitationByToken(db: DbTx, token: string): Promise<ReceivedInvitation | null> {
  if (!INVITATION_TOKEN_PATTERN.test(token)) return null;
  const row = await db.invitation.findUnique({
    where: { tokenHash: hashInvitationToken(token) },
    select: { ...INVITATION_ROW, project: { select: { name: true } } },
  });
  return row ? (await received(db, [row]))[0]! : null;
}

export type InviteeResult =
  | { outcome: 'ACCEPTED'; projectId: string; projectName: string; role: Role; alreadyMember: boolean }
  | { outcome: 'DECLINED' }
  /** No such invitation addressed to this person: the same answer whether it exists for someone else or not at all. */
  | { outcome: 'NOT_FOUND' }
  | { outcome: 'ENDED'; status: Exclude<InvitationStatus, 'PENDING'> };

/** Why a compare-and-swap on an invitation of this person found it no longer pending. */
async function refusal(
  tx: DbTx,
  input: { id: string; userId: string; email: string },
  action: string,
): Promise<Extract<InviteeResult, { outcome: 'NOT_FOUND' | 'ENDED' }>> {
  const row = await tx.invitation.findUnique({ where: { id: input.id }, select: INVITATION_ROW });
  const audit = { actor: `user:${input.userId}`, action, targetType: 'invitation', targetId: input.id };
  if (!row) return { outcome: 'NOT_FOUND' };
  if (row.email !== normalizeEmail(input.email)) {
    // Someone else's invitation: recorded in its project, answered as if it did not exist.
    await writeAudit(tx, { ...audit, projectId: row.projectId, outcome: 'REJECTED', after: { error: 'NOT_THE_INVITEE' } });
    return { outcome: 'NOT_FOUND' };
  }
  const status = statusOf(row);
  await writeAudit(tx, { ...audit, projectId: row.projectId, outcome: 'REJECTED', after: { email: row.email, error: status } });
  return { outcome: 'ENDED', status: status === 'PENDING' ? 'EXPIRED' : status };
}

/**
 * Accept an invitation as the signed-in person it is addressed to. One statement is the
 * compare-and-swap: the invitation goes from pending (not accepted, declined, revoked or
 * expired, and addressed to this email) to accepted, and the membership is inserted from
 * the row that changed. Two tabs accepting at once: the second waits on the first's row
 * lock, then finds it accepted and changes nothing, so exactly one membership is made. A
 * person who is already a member (by another invitation, the CLI) keeps their role.
 */
export async function acceptInvitation(db: Db, input: { id: string; userId: string; email: string }): Promise<InviteeResult> {
  const email = normalizeEmail(input.email);
  return transaction(db, 'SHORT', async (tx) => acceptInTx(tx, { ...input, email }));
}

async function acceptInTx(tx: DbTx, input: { id: string; userId: string; email: string }): Promise<InviteeResult> {
  const claimed = await tx.$queryRaw<{ projectId: string; role: Role; joined: boolean }[]>`
    -- acceptInvitation
    WITH claimed AS (
      UPDATE "Invitation" SET "acceptedAt" = now(), "acceptedBy" = ${input.userId}
      WHERE id = ${input.id}::uuid AND email = ${input.email}
        AND "acceptedAt" IS NULL AND "declinedAt" IS NULL AND "revokedAt" IS NULL AND "expiresAt" > now()
      RETURNING "projectId", role
    ), joined AS (
      INSERT INTO "Membership" ("userId", "projectId", role)
      SELECT ${input.userId}, "projectId", role FROM claimed
      ON CONFLICT ("userId", "projectId") DO NOTHING
      RETURNING id
    )
    SELECT c."projectId", c.role, EXISTS (SELECT 1 FROM joined) AS joined FROM claimed c`;
  const won = claimed[0];
  if (!won) return refusal(tx, input, 'invitations.accept');
  const project = await tx.project.findUniqueOrThrow({ where: { id: won.projectId }, select: { name: true } });
  const membership = await tx.membership.findUniqueOrThrow({
    where: { userId_projectId: { userId: input.userId, projectId: won.projectId } },
    select: { role: true },
  });
  await writeAudit(tx, {
    projectId: won.projectId,
    actor: `user:${input.userId}`,
    action: 'invitations.accept',
    targetType: 'invitation',
    targetId: input.id,
    before: { email: input.email, status: 'PENDING' },
    after: { status: 'ACCEPTED', userId: input.userId, role: membership.role, alreadyMember: !won.joined },
    outcome: 'APPLIED',
  });
  return { outcome: 'ACCEPTED', projectId: won.projectId, projectName: project.name, role: membership.role, alreadyMember: !won.joined };
}

/** Decline an invitation addressed to the signed-in person: the same compare-and-swap, to declined. */
export async function declineInvitation(db: Db, input: { id: string; userId: string; email: string }): Promise<InviteeResult> {
  const email = normalizeEmail(input.email);
  return transaction(db, 'SHORT', async (tx) => {
    const declined = await tx.$queryRaw<{ projectId: string }[]>`
      -- declineInvitation
      UPDATE "Invitation" SET "declinedAt" = now()
      WHERE id = ${input.id}::uuid AND email = ${email}
        AND "acceptedAt" IS NULL AND "declinedAt" IS NULL AND "revokedAt" IS NULL AND "expiresAt" > now()
      RETURNING "projectId"`;
    if (!declined[0]) return refusal(tx, { ...input, email }, 'invitations.decline');
    await writeAudit(tx, {
      projectId: declined[0].projectId,
      actor: `user:${input.userId}`,
      action: 'invitations.decline',
      targetType: 'invitation',
      targetId: input.id,
      before: { email, status: 'PENDING' },
      after: { status: 'DECLINED' },
      outcome: 'APPLIED',
    });
    return { outcome: 'DECLINED' };
  });
}

export type CreateAccountResult =
  | (Extract<InviteeResult, { outcome: 'ACCEPTED' }> & { email: string })
  | { outcome: 'NOT_FOUND' }
  | { outcome: 'ENDED'; status: Exclude<InvitationStatus, 'PENDING'> }
  /** The invited email has an account: its owner signs in to accept. */
  | { outcome: 'ACCOUNT_EXISTS' };

/**
 * Sign-up is off in this product; the one way to get an account without an administrator
 * is an invitation link: an account for the invited email only, with the password the
 * person chooses, and the invitation accepted in the same transaction. An email that has
 * an account is refused (its owner signs in instead), so a link can never set the
 * password of someone who already has one.
 */
export async function createAccountFromInvitation(
  db: Db,
  input: { token: string; name: string; password: string },
): Promise<CreateAccountResult> {
  if (!INVITATION_TOKEN_PATTERN.test(input.token)) return { outcome: 'NOT_FOUND' };
  // Hashing is slow on purpose (scrypt): do it before the transaction holds any lock.
  const passwordHash = await hashPassword(input.password);
  return transaction(db, 'SHORT', async (tx): Promise<CreateAccountResult> => {
    const row = await tx.invitation.findUnique({ where: { tokenHash: hashInvitationToken(input.token) }, select: INVITATION_ROW });
    if (!row) return { outcome: 'NOT_FOUND' };
    const audit = { projectId: row.projectId, actor: 'invitation', action: 'invitations.createAccount', targetType: 'invitation', targetId: row.id };
    const status = statusOf(row);
    if (status !== 'PENDING') {
      await writeAudit(tx, { ...audit, outcome: 'REJECTED', after: { email: row.email, error: status } });
      return { outcome: 'ENDED', status };
    }
    // ON CONFLICT: an account made meanwhile (the CLI, another tab) wins; this one is refused.
    const inserted = await tx.$queryRaw<{ id: string }[]>`
      -- createAccountFromInvitation
      INSERT INTO "User" (name, email, "emailVerified") VALUES (${input.name}, ${row.email}, false)
      ON CONFLICT (email) DO NOTHING
      RETURNING id`;
    if (!inserted[0]) {
      await writeAudit(tx, { ...audit, outcome: 'REJECTED', after: { email: row.email, error: 'ACCOUNT_EXISTS' } });
      return { outcome: 'ACCOUNT_EXISTS' };
    }
    const userId = inserted[0].id;
    await tx.account.create({ data: { userId, accountId: userId, providerId: 'credential', password: passwordHash } });
    await writeAudit(tx, { ...audit, actor: `user:${userId}`, outcome: 'APPLIED', after: { email: row.email, userId } });
    const accepted = await acceptInTx(tx, { id: row.id, userId, email: row.email });
    // The row was pending a moment ago and this transaction holds nothing that could end
    // it but a concurrent accept/decline/revoke, which then won: roll the account back.
    if (accepted.outcome !== 'ACCEPTED') throw new InvitationEndedMeanwhile();
    return { ...accepted, email: row.email };
  }).catch(async (error: unknown): Promise<CreateAccountResult> => {
    if (!(error instanceof InvitationEndedMeanwhile)) throw error;
    const row = await db.invitation.findUniqueOrThrow({ where: { tokenHash: hashInvitationToken(input.token) }, select: INVITATION_ROW });
    const status = statusOf(row);
    return { outcome: 'ENDED', status: status === 'PENDING' ? 'EXPIRED' : status };
  });
}

class InvitationEndedMeanwhile extends Error {}
