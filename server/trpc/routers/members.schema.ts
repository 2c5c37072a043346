import { z } from 'zod';
import { ROLES } from '../../common/roles';
import { email, id, label, reason } from '../../common/inputs';

export const addMemberInput = z.object({
  email: email,
  role: z.enum(ROLES),
  /**
   * No longer accepted: an owner never sets someone's password, the invitee chooses it.
   * Refused with a sentence rather than ignored, so a program that sends one learns why
   * no account with that password appears.
   */
  password: z.unknown().optional(),
  /** Ignored: the invitee gives their own name when they create their account. */
  name: label(100).optional(),
});

export const revokeInvitationInput = z.object({ id, reason: reason.optional() });

export const setMemberRoleInput = z.object({ userId: label(100), role: z.enum(ROLES) });
export const removeMemberInput = z.object({ userId: label(100), reason: reason.optional() });
