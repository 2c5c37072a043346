import { describe, expect, it } from 'vitest';
import { addMember } from '../../../server/auth/admin';
import { t, projectId, owner, as, expectCode, auditOf, setUpRouterTests } from './support';

setUpRouterTests();

// Removing a member, revoking an invitation or an API key take an optional reason (the
// Settings panels ask for one beside Confirm), kept in the change's audit entry.

describe('members, invitations and API keys: the reason of a destructive change', () => {
  it('members.remove records the reason given; without one the entry has none', async () => {
    const added = await addMember(t.db, { projectId, email: 'leaving@example.com', password: 'a long password', role: 'VIEWER', actor: 'system' });
    const second = await addMember(t.db, { projectId, email: 'quiet@example.com', password: 'a long password', role: 'VIEWER', actor: 'system' });
    if (added.outcome !== 'ADDED' || second.outcome !== 'ADDED') throw new Error('members not added');
    const [leaving, quiet] = await t.db.user.findMany({ where: { email: { in: ['leaving@example.com', 'quiet@example.com'] } }, orderBy: { email: 'asc' } });
    await as(owner).members.remove({ userId: leaving!.id, reason: 'left the company' });
    await as(owner).members.remove({ userId: quiet!.id });
    expect((await auditOf(leaving!.id)).filter((a) => a.action === 'members.remove').map((a) => [a.outcome, a.reason])).toEqual([['APPLIED', 'left the company']]);
    expect((await auditOf(quiet!.id)).filter((a) => a.action === 'members.remove').map((a) => [a.outcome, a.reason])).toEqual([['APPLIED', null]]);
  });

  it('members.revokeInvitation and apiKeys.revoke record it too; a reason under 3 characters is BAD_REQUEST and changes nothing', async () => {
    const { invitation } = await as(owner).members.add({ email: 'not-coming@example.com', role: 'MARKETER' });
    await expectCode(as(owner).members.revokeInvitation({ id: invitation.id, reason: 'no' }), 'BAD_REQUEST');
    expect((await t.db.invitation.findUniqueOrThrow({ where: { id: invitation.id } })).revokedAt).toBeNull();
    await as(owner).members.revokeInvitation({ id: invitation.id, reason: 'sent to the wrong address' });
    expect((await auditOf(invitation.id)).map((a) => [a.action, a.outcome, a.reason])).toEqual([
      ['members.add', 'APPLIED', null],
      ['members.revokeInvitation', 'APPLIED', 'sent to the wrong address'],
    ]);

    const key = await as(owner).apiKeys.create({ name: 'old backend', role: 'MARKETER' });
    await as(owner).apiKeys.revoke({ id: key.id, reason: 'the backend was retired' });
    expect((await auditOf(key.id)).map((a) => [a.action, a.reason])).toEqual([
      ['apiKeys.create', null],
      ['apiKeys.revoke', 'the backend was retired'],
    ]);
  });
});
