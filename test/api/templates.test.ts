import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SMTPServer } from 'smtp-server';
import type { AddressInfo } from 'node:net';
import type { Actor } from '../../server/auth/actor';
import { TEST_SENDS_PER_MINUTE } from '../../server/trpc/routers/templates.render';
import { actorFor, callerFor, expectCode } from '../support/callers';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createProject } from '../support/fixtures';

// templates.preview and templates.testSend against real PostgreSQL and a real SMTP server
// on localhost (the smtp-server package, as test/engine/sender.test.ts delivers to):
// rendered for a real contact of the caller's project (its data's fields as
// {{contact.firstName}}), unknown fields empty, a syntax error an answer in `issues`,
// another project's contact NOT_FOUND, and one test email to the caller's own address
// through the configured transport (SMTP_URL), audited, with no Message row.

let t: TestDatabase;
let smtp: SMTPServer;
const received: { from: string; to: string; raw: string }[] = [];
let projectId: string;
let emptyProjectId: string;
let marketer: Actor;
let viewer: Actor;
let outsider: Actor;
let ada: { id: string; email: string };
let foreignContactId: string;

const as = (actor: Actor) => callerFor(t.db, actor);

async function contact(project: string, email: string, data: Record<string, unknown>, createdAt: Date) {
  return t.db.contact.create({ data: { projectId: project, email, data: data as object, createdAt } });
}

beforeAll(async () => {
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    onData(stream, session, callback) {
      let raw = '';
      stream.on('data', (c: Buffer) => (raw += c.toString()));
      stream.on('end', () => {
        received.push({ from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '', to: session.envelope.rcptTo.map((r) => r.address).join(','), raw });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', () => resolve()));
  // The deployment's transport, as the web process reads it (server/env.ts, read on first use).
  vi.stubEnv('SMTP_URL', `smtp://127.0.0.1:${(smtp.server.address() as AddressInfo).port}`);
  vi.stubEnv('MAIL_FROM', 'Waypost Tests <tests@waypost.example>');
  t = await freshDatabase();
  projectId = (await createProject(t.db, 'templates')).id;
  emptyProjectId = (await createProject(t.db, 'no contacts')).id;
  const otherProjectId = (await createProject(t.db, 'other')).id;
  marketer = actorFor(projectId, 'MARKETER');
  viewer = actorFor(projectId, 'VIEWER');
  outsider = actorFor(otherProjectId, 'OWNER');
  await contact(projectId, 'older@example.com', { firstName: 'Old' }, new Date('2026-01-01T00:00:00Z'));
  const newest = await contact(projectId, 'ada@example.com', { firstName: 'Ada', plan: 'pro', email: 'not-this@example.com', tags: ['a', 'b'] }, new Date('2026-02-01T00:00:00Z'));
  ada = { id: newest.id, email: newest.email };
  foreignContactId = (await contact(otherProjectId, 'foreign@example.com', { firstName: 'Foreign' }, new Date('2026-03-01T00:00:00Z'))).id;
});
afterAll(async () => {
  vi.unstubAllEnvs();
  await new Promise<void>((resolve) => smtp.close(() => resolve()));
  await t?.drop();
});

describe('templates.preview', () => {
  it('renders for the contact named: its data as {{contact.firstName}}, unknown fields empty', async () => {
    const older = await t.db.contact.findFirstOrThrow({ where: { projectId, email: 'older@example.com' } });
    const preview = await as(viewer).templates.preview({
      subject: 'Hi {{contact.firstName}}',
      body: 'Plan {{ contact.data.plan }} for {{contact.email}}, {{contact.nope}}{{contact.data.nope.deeper}}|{{ context.order.total }}|',
      contactId: older.id,
    });
    expect(preview).toEqual({
      subject: 'Hi Old',
      body: 'Plan  for older@example.com, ||',
      contact: { id: older.id, email: 'older@example.com' },
      issues: [],
    });
  });

  it("without contactId, the project's most recently created contact; its own email wins over data.email", async () => {
    const preview = await as(viewer).templates.preview({ subject: '{{contact.firstName | upcase}}', body: '{{contact.email}} {{contact.tags}} {{contact.plan | default: "free"}}' });
    expect(preview).toEqual({ subject: 'ADA', body: 'ada@example.com ["a","b"] pro', contact: ada, issues: [] });
  });

  it('a project with no contacts renders a sample and says so: contact null', async () => {
    const preview = await as(actorFor(emptyProjectId, 'VIEWER')).templates.preview({ subject: 'Hi {{contact.firstName}}', body: 'To {{contact.email}}' });
    expect(preview).toEqual({ subject: 'Hi ', body: 'To sample.contact@example.com', contact: null, issues: [] });
  });

  it('a syntax error is an answer, not an exception: in issues with its place, that field null', async () => {
    const preview = await as(viewer).templates.preview({
      subject: 'Hi {{contact.firstName}}',
      body: 'Hello\n\n    {% if contact.plan %}pro',
      contactId: ada.id,
    });
    expect(preview).toEqual({
      subject: 'Hi Ada',
      body: null,
      contact: ada,
      issues: [{ field: 'body', message: 'tag {% if contact.plan %} not closed', line: 3, column: 5 }],
    });
    const both = await as(viewer).templates.preview({ subject: '{{ contact.email | shout }}', body: '{% include "secrets" %}' });
    expect(both.subject).toBeNull();
    expect(both.body).toBeNull();
    expect(both.issues).toEqual([
      { field: 'subject', message: 'undefined filter: shout', line: 1, column: 1 },
      { field: 'body', message: '{% include %} is not available in email templates', line: 1, column: 1 },
    ]);
  });

  it("another project's contact is NOT_FOUND, to preview and to testSend alike", async () => {
    await expectCode(as(viewer).templates.preview({ subject: 's', body: 'b', contactId: foreignContactId }), 'NOT_FOUND');
    await expectCode(as(marketer).templates.testSend({ subject: 's', body: 'b', contactId: foreignContactId }), 'NOT_FOUND');
    await expectCode(as(outsider).templates.preview({ subject: 's', body: 'b', contactId: ada.id }), 'NOT_FOUND');
    expect(received.filter((m) => m.raw.includes('Foreign'))).toEqual([]);
  });
});

describe('templates.testSend', () => {
  it("sends one email to the caller's own address through the configured transport, audited, no Message row", async () => {
    const before = received.length;
    const sent = await as(marketer).templates.testSend({ subject: 'Welcome, {{contact.firstName}}', body: 'Your plan: {{contact.plan}}.' });
    expect(sent).toEqual({
      to: marketer.label,
      subject: '[Test] Welcome, Ada',
      body: 'Your plan: pro.',
      contact: ada,
      transport: 'smtp',
      providerId: expect.stringMatching(/^smtp:/),
    });
    expect(received.slice(before)).toHaveLength(1);
    const mail = received[received.length - 1]!;
    expect(mail.to).toBe(marketer.label);
    expect(mail.from).toBe('tests@waypost.example');
    expect(mail.raw).toContain('Subject: [Test] Welcome, Ada');
    expect(mail.raw).toContain('Your plan: pro.');
    const entries = await t.db.auditEntry.findMany({ where: { projectId, action: 'templates.testSend', actor: marketer.id } });
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      targetType: 'contact',
      targetId: ada.id,
      outcome: 'APPLIED',
      after: { to: marketer.label, subject: '[Test] Welcome, Ada', transport: 'smtp', providerId: sent.providerId },
    });
    expect(await t.db.message.count()).toBe(0);
  });

  it('an API key has no address of its own: BAD_REQUEST, nothing sent', async () => {
    const key: Actor = { kind: 'apikey', id: 'apikey:k', label: 'integration', userId: null, apiKeyId: 'k', projectId, role: 'OWNER' };
    const before = received.length;
    const error = await expectCode(as(key).templates.testSend({ subject: 'Hi', body: 'b' }), 'BAD_REQUEST');
    expect(error.message).toMatch(/API key has no email address/);
    expect(received.length).toBe(before);
  });

  it('a template that does not parse is BAD_REQUEST at its field, nothing sent; a viewer is FORBIDDEN', async () => {
    const before = received.length;
    const error = await expectCode(as(marketer).templates.testSend({ subject: 'Hi', body: 'a\n{{ contact.email' }), 'BAD_REQUEST');
    const issues = (error.cause as { issues?: { path: PropertyKey[]; message: string }[] }).issues ?? [];
    expect(issues.map((i) => [i.path.join('.'), i.message])).toEqual([['body', 'output "{{ contact.email" not closed at line 2, column 1']]);
    await expectCode(as(viewer).templates.testSend({ subject: 'Hi', body: 'b' }), 'FORBIDDEN');
    expect(received.length).toBe(before);
  });

  it(`at most ${TEST_SENDS_PER_MINUTE} test emails a minute per person: then TOO_MANY_REQUESTS`, async () => {
    const busy = actorFor(projectId, 'MARKETER', 'busy');
    for (let i = 0; i < TEST_SENDS_PER_MINUTE; i++) await as(busy).templates.testSend({ subject: `n${i}`, body: 'b' });
    const error = await expectCode(as(busy).templates.testSend({ subject: 'one more', body: 'b' }), 'TOO_MANY_REQUESTS');
    expect(error.message).toMatch(/try again in \d+ seconds/);
    expect(received.filter((m) => m.to === busy.label)).toHaveLength(TEST_SENDS_PER_MINUTE);
  });
});
