import { z } from 'zod';
import { INVITATION_TOKEN_PATTERN } from '../../auth/invitations';
import { id, label, text } from '../../common/inputs';

export const invitationIdInput = z.object({ id });
export const createAccountInput = z.object({
  token: z.string().regex(INVITATION_TOKEN_PATTERN, 'not an invitation link'),
  name: label(100),
  // Same bounds as better-auth's sign-in (server/auth/auth.ts), so the account can sign in.
  password: text(128, 8),
});
