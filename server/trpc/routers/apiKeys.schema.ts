import { z } from 'zod';
import { ROLES } from '../../common/roles';
import { label, reason } from '../../common/inputs';

export const createApiKeyInput = z.object({
  /** What the key is for, e.g. "shop backend": the audit log names keys by it. */
  name: label(100),
  role: z.enum(ROLES),
});

export const revokeApiKeyInput = z.object({ id: z.uuid(), reason: reason.optional() });
