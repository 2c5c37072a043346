import { claimQueuedMessages, recordDeliveries, recordDelivery, type DeliveryOutcome } from './claims';
import type { EngineContext } from './context';

// The email sender: delivers queued messages through the configured transport. A
// message is claimed (QUEUED -> SENDING) before it is handed to the transport, so two
// senders never deliver the same message (I5). A transport error marks it FAILED rather
// than retrying blindly: an email is sent at most once.
//
// What happened at the transport and what is written afterwards are kept apart: once
// the transport has accepted a message, only SENT may be recorded. If that write fails
// (the database is briefly unreachable, say), it is retried a few times; if it still
// fails, the message stays SENDING, and once its lease runs out the console lists it as
// MESSAGE_UNCONFIRMED for an operator, who can check the provider (its id is in the
// log). It is never recorded FAILED: an operator would resend it, and the contact would
// get the email twice.

/** Attempts at writing the outcome of one delivery, and the pause before each retry. */
const RECORD_ATTEMPTS = 3;
const RECORD_RETRY_MS = [50, 250];

function errorText(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).slice(0, 2000);
}

async function recordWithRetries(
  ctx: EngineContext,
  opts: { messageId: string; version: number; providerId?: string | null; error?: string | null },
): Promise<boolean> {
  for (let attempt = 1; ; attempt++) {
    try {
      await recordDelivery(ctx.db, { ...opts, owner: ctx.owner });
      return true;
    } catch (error) {
      if (attempt >= RECORD_ATTEMPTS) {
        ctx.log('error', 'could not record the outcome of a delivery; the message stays SENDING (MESSAGE_UNCONFIRMED)', {
          messageId: opts.messageId,
          providerId: opts.providerId ?? null,
          outcome: opts.error ? 'FAILED' : 'SENT',
          error: errorText(error),
        });
        return false;
      }
      await new Promise((r) => setTimeout(r, RECORD_RETRY_MS[attempt - 1] ?? 250));
    }
  }
}

export async function deliverQueuedMessages(ctx: EngineContext, opts: { from: string; limit: number }): Promise<number> {
  const messages = await claimQueuedMessages(ctx.db, {
    owner: ctx.owner,
    leaseSeconds: ctx.config.leaseSeconds,
    limit: opts.limit,
  });
  const outcomes = await Promise.all(
    messages.map(async (message): Promise<DeliveryOutcome> => {
      try {
        const { providerId } = await ctx.transport.send({ to: message.to, subject: message.subject, body: message.body, from: opts.from, messageId: message.id });
        // Sent. Whatever happens to the write below, this message is never recorded FAILED.
        ctx.log('debug', 'message sent', { messageId: message.id, providerId });
        return { messageId: message.id, version: message.version, providerId };
      } catch (error) {
        // The transport refused it: it was not sent, and FAILED is the truth.
        const text = errorText(error);
        ctx.log('warn', 'message delivery failed', { messageId: message.id, error: text });
        return { messageId: message.id, version: message.version, error: text };
      }
    }),
  );
  // The batch's outcomes in one statement; if that fails, each on its own with retries,
  // so one message's failing write never holds back the others'.
  try {
    await recordDeliveries(ctx.db, { owner: ctx.owner, outcomes });
  } catch {
    await Promise.all(outcomes.map((outcome) => recordWithRetries(ctx, outcome)));
  }
  return messages.length;
}
