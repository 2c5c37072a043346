import { claimQueuedMessages, recordDelivery } from './claims';
import type { EngineContext } from './context';

// The email sender: delivers queued messages through the configured transport. A
// message is claimed (QUEUED -> SENDING) before it is handed to the transport, so two
// senders never deliver the same message (I5). A transport error marks it FAILED rather
// than retrying blindly: an email is sent at most once.

export async function deliverQueuedMessages(ctx: EngineContext, opts: { from: string; limit: number }): Promise<number> {
  const messages = await claimQueuedMessages(ctx.db, {
    owner: ctx.owner,
    leaseSeconds: ctx.config.leaseSeconds,
    limit: opts.limit,
  });
  await Promise.all(
    messages.map(async (message) => {
      try {
        const { providerId } = await ctx.transport.send({ ...message, from: opts.from });
        await recordDelivery(ctx.db, { messageId: message.id, owner: ctx.owner, providerId });
      } catch (error) {
        const text = (error instanceof Error ? error.message : String(error)).slice(0, 2000);
        ctx.log('warn', 'message delivery failed', { messageId: message.id, error: text });
        await recordDelivery(ctx.db, { messageId: message.id, owner: ctx.owner, error: text });
      }
    }),
  );
  return messages.length;
}
