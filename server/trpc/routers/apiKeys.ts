import { TRPCError } from '@trpc/server';
import { createApiKey, listApiKeys, revokeApiKey } from '../../auth/admin';
import { conflictError, ownerProcedure, router } from '../trpc';
import { createApiKeyInput, revokeApiKeyInput } from './apiKeys.schema';

// A project's API keys (OWNER only). The secret is returned once, by create; the list
// shows the prefix that tells keys apart, never the secret or its hash.

export const apiKeysRouter = router({
  list: ownerProcedure.query(({ ctx }) => listApiKeys(ctx.db, ctx.actor.projectId)),

  create: ownerProcedure
    .input(createApiKeyInput)
    .mutation(({ ctx, input }) =>
      createApiKey(ctx.db, { projectId: ctx.actor.projectId, name: input.name, role: input.role, actor: ctx.actor.id }),
    ),

  revoke: ownerProcedure.input(revokeApiKeyInput).mutation(async ({ ctx, input }) => {
    const result = await revokeApiKey(ctx.db, { projectId: ctx.actor.projectId, id: input.id, actor: ctx.actor.id, reason: input.reason ?? null });
    switch (result.outcome) {
      case 'REVOKED':
        return result.key;
      case 'ALREADY_REVOKED':
        throw conflictError({ reason: 'ALREADY_REVOKED', revokedAt: result.key.revokedAt }, 'This key was already revoked.');
      case 'NOT_FOUND':
        throw new TRPCError({ code: 'NOT_FOUND', message: 'No such API key in this project.' });
    }
  }),
});
