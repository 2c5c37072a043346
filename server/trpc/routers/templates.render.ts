import { TRPCError } from '@trpc/server';
import type { z } from 'zod';
import { poolOf, type Db } from '../../db';
import { rateCounterFor } from '../../db/rate-counter';
import type { Actor } from '../../auth/actor';
import { env } from '../../env';
import { log } from '../../log';
import { writeAudit } from '../../engine/audit';
import { logTransport, smtpTransport, transportTimeoutMs, type MailTransport } from '../../engine/transport';
import { findContact, latestContact, type ContactRecord } from '../../read/contacts';
import { renderTemplate, templateIssues, templateScope, TemplateError, type TemplateContact, type TemplateIssue } from '../../common/templates';
import type { previewTemplateInput, testSendInput } from './templates.schema';

// A SEND_EMAIL step's subject and body rendered as the worker would render them
// (server/common/templates.ts), for a real contact of the caller's project, and one test
// email of it to the signed-in person's own address. The worker renders in the
// execution's context; there is none here, so `{{context.x}}` renders empty.

type Caller = { db: Db; actor: Actor };

/** What a project with no contacts previews with (the answer says `contact: null`). */
const SAMPLE_CONTACT: TemplateContact = { email: 'sample.contact@example.com', subscribed: true, data: {} };

/** Test emails a minute per person and project: a test, not a way to send mail. */
export const TEST_SENDS_PER_MINUTE = 10;

export interface RenderedTemplate {
  /** null when the subject did not parse or render (its issue is in `issues`). */
  subject: string | null;
  body: string | null;
  /** The contact rendered for; null: none in the project, a sample contact was used. */
  contact: { id: string; email: string } | null;
  issues: (TemplateIssue & { field: 'subject' | 'body' })[];
}

/** The contact named (NOT_FOUND outside the project), else the project's newest, else null. */
async function contactFor(ctx: Caller, contactId: string | undefined): Promise<ContactRecord | null> {
  if (contactId === undefined) return latestContact(ctx.db, ctx.actor.projectId);
  const contact = await findContact(ctx.db, ctx.actor.projectId, contactId);
  if (!contact) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such contact in this project.' });
  return contact;
}

function rendered(input: { subject: string; body: string }, contact: ContactRecord | null): RenderedTemplate {
  // The worker's scope has no contact id (server/engine/run-steps.ts), so neither has this one.
  const scope = templateScope({ contact: contact ? { email: contact.email, subscribed: contact.subscribed, data: contact.data ?? {} } : SAMPLE_CONTACT, context: {} });
  const issues: RenderedTemplate['issues'] = [];
  const render = (field: 'subject' | 'body'): string | null => {
    const syntax = templateIssues(input[field]);
    if (syntax.length > 0) {
      issues.push(...syntax.map((issue) => ({ field, ...issue })));
      return null;
    }
    try {
      return renderTemplate(input[field], scope);
    } catch (error) {
      if (!(error instanceof TemplateError)) throw error;
      issues.push({ field, ...error.issue });
      return null;
    }
  };
  return { subject: render('subject'), body: render('body'), contact: contact ? { id: contact.id, email: contact.email } : null, issues };
}

/** templates.preview: a syntax error is an answer (in `issues`), not an exception. */
export async function previewTemplate(ctx: Caller, input: z.infer<typeof previewTemplateInput>): Promise<RenderedTemplate> {
  return rendered(input, await contactFor(ctx, input.contactId));
}

/** The deployment's mail transport, as the workers have it (scripts/worker.ts): SMTP_URL, else the log. */
function configuredTransport(): MailTransport {
  const config = env();
  return config.SMTP_URL
    ? smtpTransport(config.SMTP_URL, { timeoutMs: transportTimeoutMs(config.LEASE_SECONDS) })
    : logTransport((line) => log.info(`templates.testSend: ${line}`));
}

/**
 * Charged to the person in the project in PostgreSQL's shared counter (server/db/rate-counter.ts),
 * as the API's limits are: every web process counts the one allowance.
 */
async function chargeTestSend(db: Db, actor: Actor): Promise<void> {
  const pool = poolOf(db);
  if (!pool) throw new Error('templates.testSend needs a database client with a pool of its own (createDb)');
  const refusal = await rateCounterFor(pool).take([{ key: `testSend:${actor.projectId}:${actor.id}`, limit: TEST_SENDS_PER_MINUTE, windowSeconds: 60 }], 1);
  if (refusal) {
    const seconds = Math.max(1, Math.ceil(refusal.retryAfterMs / 1000));
    throw new TRPCError({ code: 'TOO_MANY_REQUESTS', message: `At most ${TEST_SENDS_PER_MINUTE} test emails a minute: try again in ${seconds} seconds.` });
  }
}

export interface TestSendResult {
  to: string;
  subject: string;
  body: string;
  contact: RenderedTemplate['contact'];
  /** "smtp" or "log" (no SMTP_URL: the email is a line in the web process's log). */
  transport: string;
  providerId: string;
}

/**
 * templates.testSend: one email, "[Test] " before its subject, to the signed-in person's
 * own address, through the deployment's transport, outside any execution (no Message
 * row); audited `templates.testSend`, APPLIED or FAILED.
 */
export async function sendTestEmail(ctx: Caller, input: z.infer<typeof testSendInput>): Promise<TestSendResult> {
  const contact = await contactFor(ctx, input.contactId);
  if (ctx.actor.kind !== 'user') {
    throw new TRPCError({
      code: 'BAD_REQUEST',
      message: 'An API key has no email address to send a test to: sign in to the console to send yourself a test email.',
    });
  }
  const result = rendered(input, contact);
  if (result.subject === null || result.body === null) {
    const what = result.issues.map((i) => `${i.field}: ${i.message}${i.line === undefined ? '' : ` at line ${i.line}, column ${i.column}`}`);
    throw new TRPCError({ code: 'BAD_REQUEST', message: `The template cannot be rendered; nothing was sent. ${what.join('; ')}` });
  }
  await chargeTestSend(ctx.db, ctx.actor);
  const to = ctx.actor.label;
  const subject = `[Test] ${result.subject}`;
  const transport = configuredTransport();
  const audited = { projectId: ctx.actor.projectId, actor: ctx.actor.id, action: 'templates.testSend', targetType: contact ? 'contact' : 'project', targetId: contact?.id ?? ctx.actor.projectId };
  let providerId: string;
  try {
    ({ providerId } = await transport.send({ to, subject, body: result.body, from: env().MAIL_FROM }));
  } catch (error) {
    const text = (error instanceof Error ? error.message : String(error)).slice(0, 500);
    await writeAudit(ctx.db, { ...audited, outcome: 'FAILED', reason: text, after: { to, subject, transport: transport.name } });
    throw new TRPCError({ code: 'BAD_GATEWAY', message: `The mail transport did not take the test email: ${text}` });
  } finally {
    transport.close?.();
  }
  await writeAudit(ctx.db, { ...audited, outcome: 'APPLIED', after: { to, subject, transport: transport.name, providerId } });
  return { to, subject, body: result.body, contact: result.contact, transport: transport.name, providerId };
}
