import { countMessages } from '../metrics/counts';
import { writeAudit } from './audit';
import { claimQueuedMessages, recordDeliveries, recordDelivery, renewMessageLeases, type DeliveryOutcome, type QueuedMessage } from './claims';
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
//
// A slow provider is not a dead sender: while the transport works, the sender renews the
// lease of every message it has not heard back about (a third of the lease apart), so
// the console calls a message unconfirmed only once its lease lapsed without renewal —
// the sender died, lost the database, or its send ran past sendTimeoutSeconds, after
// which it stops renewing on purpose. Each SMTP phase is bounded well under the lease
// (transport.ts). If an operator took the message over all the same, the sender's late
// outcome loses its fenced write, and its provider id is kept in the audit log.

/** Attempts at writing the outcome of one delivery, and the pause before each retry. */
const RECORD_ATTEMPTS = 3;
const RECORD_RETRY_MS = [50, 250];

function errorText(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).slice(0, 2000);
}

async function recordWithRetries(
  ctx: EngineContext,
  opts: { messageId: string; version: number; providerId?: string | null; error?: string | null },
): Promise<'recorded' | 'fenced' | 'unwritten'> {
  for (let attempt = 1; ; attempt++) {
    try {
      return (await recordDelivery(ctx.db, { ...opts, owner: ctx.owner })) ? 'recorded' : 'fenced';
    } catch (error) {
      if (attempt >= RECORD_ATTEMPTS) {
        ctx.log('error', 'could not record the outcome of a delivery; the message stays SENDING (MESSAGE_UNCONFIRMED)', {
          messageId: opts.messageId,
          providerId: opts.providerId ?? null,
          outcome: opts.error ? 'FAILED' : 'SENT',
          error: errorText(error),
        });
        return 'unwritten';
      }
      await new Promise((r) => setTimeout(r, RECORD_RETRY_MS[attempt - 1] ?? 250));
    }
  }
}

/**
 * Renews the leases of a sender's batch a third of the lease apart until its outcomes are
 * written (the returned stop function): an email the transport answered for keeps its
 * lease until its outcome is recorded; one still `unanswered` only until
 * sendTimeoutSeconds have passed, after which its lease is left to lapse.
 */
function keepLeases(ctx: EngineContext, batch: QueuedMessage[], unanswered: Set<string>): () => void {
  const started = Date.now();
  let timedOut = false;
  const renewal = setInterval(() => {
    if (!timedOut && Date.now() - started > ctx.config.sendTimeoutSeconds * 1000) {
      timedOut = true;
      ctx.log('warn', 'the transport has not answered within the send timeout; the leases of these emails are left to lapse (MESSAGE_UNCONFIRMED)', {
        messageIds: [...unanswered],
        sendTimeoutSeconds: ctx.config.sendTimeoutSeconds,
      });
    }
    const messages = batch.filter((m) => !timedOut || !unanswered.has(m.id)).map((m) => ({ messageId: m.id, version: m.version }));
    renewMessageLeases(ctx.db, { owner: ctx.owner, leaseSeconds: ctx.config.leaseSeconds, messages }).catch((error) =>
      ctx.log('warn', 'could not renew the leases of emails being sent', { error: errorText(error) }),
    );
  }, Math.max(200, (ctx.config.leaseSeconds * 1000) / 3));
  return () => clearInterval(renewal);
}

/**
 * A sent email whose outcome lost its fenced write: an operator resent it, marked it sent
 * or gave up on it after its lease lapsed. The provider has it all the same; its id goes
 * to the audit log (and the log), where the operator looks, rather than being dropped.
 */
async function keepLateDelivery(ctx: EngineContext, message: QueuedMessage, outcome: DeliveryOutcome): Promise<void> {
  ctx.log('error', 'an email was delivered after an operator had taken it over; its provider id is in the audit log', {
    messageId: message.id,
    providerId: outcome.providerId ?? null,
  });
  await writeAudit(ctx.db, {
    projectId: message.projectId,
    actor: ctx.owner,
    action: 'sender.lateDelivery',
    targetType: 'message',
    targetId: message.id,
    reason: 'the provider accepted the email after its lease had lapsed and an operator had changed it',
    before: { status: 'SENDING', version: message.version },
    after: { providerId: outcome.providerId ?? null },
    outcome: 'LOST',
  }).catch((error) => ctx.log('error', 'could not keep a late delivery in the audit log', { messageId: message.id, error: errorText(error) }));
}

export async function deliverQueuedMessages(ctx: EngineContext, opts: { from: string; limit: number }): Promise<number> {
  const messages = await claimQueuedMessages(ctx.db, {
    owner: ctx.owner,
    leaseSeconds: ctx.config.leaseSeconds,
    limit: opts.limit,
  });
  if (messages.length === 0) return 0;
  const unanswered = new Set(messages.map((m) => m.id));
  const stopRenewing = keepLeases(ctx, messages, unanswered);
  try {
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
        } finally {
          unanswered.delete(message.id);
        }
      }),
    );
    await recordOutcomes(ctx, messages, outcomes);
  } finally {
    stopRenewing();
  }
  return messages.length;
}

/**
 * The batch's outcomes in one statement; if that fails, each on its own with retries, so
 * one message's failing write never holds back the others'. A sent email whose write lost
 * its fence (an operator took it over) is kept in the audit log.
 */
async function recordOutcomes(ctx: EngineContext, messages: QueuedMessage[], outcomes: DeliveryOutcome[]): Promise<void> {
  let recorded: Set<string>;
  const unwritten = new Set<string>();
  try {
    recorded = new Set(await recordDeliveries(ctx.db, { owner: ctx.owner, outcomes }));
  } catch {
    const written = await Promise.all(outcomes.map((outcome) => recordWithRetries(ctx, outcome)));
    recorded = new Set(outcomes.filter((_, i) => written[i] === 'recorded').map((o) => o.messageId));
    // An outcome that could not be written at all stays SENDING (MESSAGE_UNCONFIRMED): not a lost fence.
    for (const [i, o] of outcomes.entries()) if (written[i] === 'unwritten') unwritten.add(o.messageId);
  }
  for (const outcome of outcomes) {
    if (recorded.has(outcome.messageId)) countMessages(outcome.error ? 'failed' : 'sent');
    else if (unwritten.has(outcome.messageId)) countMessages('unconfirmed');
    if (outcome.error || recorded.has(outcome.messageId) || unwritten.has(outcome.messageId)) continue;
    countMessages('late');
    await keepLateDelivery(ctx, messages.find((m) => m.id === outcome.messageId)!, outcome);
  }
}
