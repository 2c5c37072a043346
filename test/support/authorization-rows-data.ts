import { expect } from 'vitest';
import { enroll } from '../../server/engine/enrollment';
import { waitWorkflow } from './fixtures';
import { type MatrixRow, unique, uuid, ok, refused, emailsOf, type Row } from './authorization-cells';

/** The matrix's own workflow ("own waits", waitWorkflow) with its first email's subject changed: a version 2 to publish. */
function matrixDefinition() {
  const { steps, transitions } = waitWorkflow();
  return { steps: steps.map((s) => (s.key === 'hello' ? { ...s, config: { ...s.config, subject: 'Hello again {{contact.email}}' } } : s)), transitions };
}

// The matrix's rows for a project's data: health, contacts, workflows, enrollments,
// events, waits, executions and the overview.
export const DATA_ROWS: Record<string, MatrixRow> = {
  'health.invariants': {
    minimum: 'VIEWER',
    input: () => undefined,
    answer: (reply, _own, _input, cell) => {
      const invariants = ok<Row[]>(reply, cell);
      expect(invariants.map((i) => i.id)).toEqual(expect.arrayContaining(['I1', 'I2', 'I3', 'I4']));
      // The fixture is healthy: its project shows no violation.
      expect(invariants.filter((i) => i.violations !== 0), cell).toEqual([]);
    },
  },

  'contacts.list': {
    minimum: 'VIEWER',
    input: () => ({}),
    answer: (reply, own, _input, cell) => {
      const emails = emailsOf(ok(reply, cell).items);
      expect(emails, cell).toContain(own.contactEmail);
      expect(emails.filter((email) => email.startsWith('other-')), cell).toEqual([]);
    },
  },
  'contacts.get': {
    minimum: 'VIEWER',
    input: (own) => ({ id: own.contactId }),
    foreign: (other) => [{ id: other.contactId }],
    answer: (reply, own, _input, cell) => {
      const contact = ok(reply, cell);
      expect({ id: contact.id, email: contact.email }, cell).toEqual({ id: own.contactId, email: own.contactEmail });
      expect(contact.executions.map((e: Row) => e.id), cell).toContain(own.executionId);
    },
  },
  'contacts.upsert': {
    minimum: 'MARKETER',
    input: () => ({ email: `${unique('matrix')}@example.com`, data: { source: 'matrix' } }),
    answer: (reply, _own, input, cell) => {
      expect(ok(reply, cell), cell).toMatchObject({ id: uuid(), email: (input as Row).email, data: { source: 'matrix' }, created: true });
    },
  },
  'contacts.update': {
    minimum: 'MARKETER',
    input: (own) => ({ id: own.contactId, data: { source: 'matrix' } }),
    foreign: (other) => [{ id: other.contactId, data: { source: 'matrix' } }],
    answer: (reply, own, _input, cell) => {
      expect(ok(reply, cell), cell).toMatchObject({ id: own.contactId, email: own.contactEmail, data: { source: 'matrix' } });
    },
  },
  'contacts.find': {
    minimum: 'VIEWER',
    input: (own) => ({ id: own.contactId }),
    foreign: (other) => [{ id: other.contactId }],
    answer: (reply, own, _input, cell) => expect(ok(reply, cell), cell).toMatchObject({ id: own.contactId, email: own.contactEmail }),
  },
  'contacts.findByEmail': {
    minimum: 'VIEWER',
    input: (own) => ({ email: own.contactEmail.toUpperCase() }),
    foreign: (other) => [{ email: other.contactEmail }],
    answer: (reply, own, _input, cell) => expect(ok(reply, cell), cell).toMatchObject({ id: own.contactId, email: own.contactEmail }),
  },
  'contacts.page': {
    minimum: 'VIEWER',
    input: () => ({ limit: 200 }),
    answer: (reply, own, _input, cell) => {
      const page = ok(reply, cell);
      expect(emailsOf(page.items), cell).toContain(own.contactEmail);
      expect(emailsOf(page.items).filter((email: string) => email.startsWith('other-')), cell).toEqual([]);
      expect(page.next, cell).toBeNull();
    },
  },
  'contacts.erase': {
    minimum: 'MARKETER',
    // The fixture's contact without executions: erasing it again answers the same.
    input: (own) => ({ id: own.erasableContactId }),
    foreign: (other) => [{ id: other.erasableContactId }],
    answer: (reply, own, _input, cell) => {
      expect(ok(reply, cell), cell).toMatchObject({ id: own.erasableContactId, email: `erased-${own.erasableContactId}@erased.invalid` });
    },
  },
  'contacts.setSubscribed': {
    minimum: 'MARKETER',
    input: (own) => ({ id: own.contactId, subscribed: true }),
    foreign: (other) => [{ id: other.contactId, subscribed: false }],
    answer: (reply, own, _input, cell) => {
      expect(ok(reply, cell), cell).toMatchObject({ id: own.contactId, email: own.contactEmail, subscribed: true });
    },
  },

  'workflows.list': {
    minimum: 'VIEWER',
    input: () => undefined,
    answer: (reply, own, _input, cell) => {
      const workflows = ok<Row[]>(reply, cell);
      expect(workflows.find((w) => w.id === own.workflowId), cell).toMatchObject({ name: 'own waits', stepCount: 5 });
      expect(workflows.filter((w) => w.name === 'other waits'), cell).toEqual([]);
    },
  },
  'workflows.get': {
    minimum: 'VIEWER',
    input: (own) => ({ id: own.workflowId }),
    foreign: (other) => [{ id: other.workflowId }],
    answer: (reply, own, _input, cell) => {
      const workflow = ok(reply, cell);
      expect({ id: workflow.id, name: workflow.name }, cell).toEqual({ id: own.workflowId, name: 'own waits' });
      expect(workflow.steps.map((s: Row) => s.key).sort(), cell).toEqual(['hello', 'reminder', 'start', 'thanks', 'wait']);
    },
  },
  'workflows.page': {
    minimum: 'VIEWER',
    input: () => ({}),
    answer: (reply, own, _input, cell) => {
      const page = ok(reply, cell);
      expect(page.items.find((w: Row) => w.id === own.workflowId), cell).toMatchObject({ name: 'own waits' });
      expect(page.items.filter((w: Row) => w.name === 'other waits'), cell).toEqual([]);
      expect(page.next, cell).toBeNull();
    },
  },
  'workflows.find': {
    minimum: 'VIEWER',
    input: (own) => ({ id: own.workflowId }),
    foreign: (other) => [{ id: other.workflowId }],
    answer: (reply, own, _input, cell) => {
      const workflow = ok(reply, cell);
      expect(workflow, cell).toMatchObject({ id: own.workflowId, name: 'own waits' });
      expect(workflow.versions.map((v: Row) => v.number), cell).toContain(1);
    },
  },
  'workflows.create': {
    minimum: 'MARKETER',
    input: () => waitWorkflow({ name: unique('matrix workflow') }),
    answer: (reply, _own, _input, cell) => expect(ok(reply, cell), cell).toEqual({ id: uuid() }),
  },
  'workflows.setEnabled': {
    minimum: 'MARKETER',
    input: (own) => ({ id: own.workflowId, enabled: true }),
    foreign: (other) => [{ id: other.workflowId, enabled: false }],
    answer: (reply, own, _input, cell) => expect(ok(reply, cell), cell).toEqual({ id: own.workflowId, enabled: true }),
  },

  'workflows.versions': {
    minimum: 'VIEWER',
    input: (own) => ({ workflowId: own.workflowId }),
    foreign: (other) => [{ workflowId: other.workflowId }],
    answer: (reply, _own, _input, cell) => {
      const versions = ok(reply, cell);
      expect(versions.items.length, cell).toBeGreaterThanOrEqual(1);
      expect(versions.items.at(-1), cell).toMatchObject({ number: 1, stepCount: 5 });
    },
  },
  'workflows.publishPreview': {
    minimum: 'MARKETER',
    input: (own) => ({ workflowId: own.workflowId, basedOnVersion: 1, definition: matrixDefinition() }),
    foreign: (other) => [{ workflowId: other.workflowId, basedOnVersion: 1, definition: matrixDefinition() }],
    answer: (reply, _own, _input, cell) => {
      expect(ok(reply, cell), cell).toMatchObject({ ok: true, basedOnVersion: 1, diff: { added: [], removed: [], changed: [{ key: 'hello', fields: ['config.subject'] }] } });
    },
  },
  'workflows.publish': {
    minimum: 'MARKETER',
    // Each allowed cell publishes over version 1: the first one wins, every later one is
    // told the version is stale (a refusal of the procedure's own, past authorization).
    input: (own) => ({ workflowId: own.workflowId, basedOnVersion: 1, definition: matrixDefinition() }),
    foreign: (other) => [{ workflowId: other.workflowId, basedOnVersion: 1, definition: matrixDefinition() }],
    answer: (reply, _own, _input, cell) => {
      if (reply.status === 409) return refused(reply, cell, 409, 'CONFLICT', 'VERSION_CONFLICT');
      expect(ok(reply, cell), cell).toMatchObject({ version: 2 });
    },
  },
  'workflows.saveDraft': {
    minimum: 'MARKETER',
    input: (own) => ({ workflowId: own.workflowId, basedOnVersion: 1, definition: matrixDefinition() }),
    foreign: (other) => [{ workflowId: other.workflowId, basedOnVersion: 1, definition: matrixDefinition() }],
    answer: (reply, _own, _input, cell) => expect(ok(reply, cell), cell).toMatchObject({ savedAt: expect.anything() }),
  },
  'workflows.discardDraft': {
    minimum: 'MARKETER',
    input: (own) => ({ workflowId: own.workflowId }),
    foreign: (other) => [{ workflowId: other.workflowId }],
    answer: (reply, _own, _input, cell) => expect(typeof ok(reply, cell).discarded, cell).toBe('boolean'),
  },

  'templates.preview': {
    minimum: 'VIEWER',
    input: (own) => ({ subject: 'Hi {{contact.email}}', body: 'Body {{contact.nope}}', contactId: own.contactId }),
    foreign: (other) => [{ subject: 'Hi', body: 'Body', contactId: other.contactId }],
    answer: (reply, own, _input, cell) => {
      expect(ok(reply, cell), cell).toEqual({
        subject: `Hi ${own.contactEmail}`,
        body: 'Body ',
        contact: { id: own.contactId, email: own.contactEmail },
        issues: [],
      });
    },
  },
  'templates.testSend': {
    minimum: 'MARKETER',
    input: (own) => ({ subject: 'Hi {{contact.email}}', body: 'Body', contactId: own.contactId }),
    foreign: (other) => [{ subject: 'Hi', body: 'Body', contactId: other.contactId }],
    // To the signed-in person's own address; an API key has none.
    answer: (reply, own, _input, cell) => {
      if (cell.endsWith(' key')) return refused(reply, cell, 400, 'BAD_REQUEST');
      expect(ok(reply, cell), cell).toMatchObject({
        to: `${cell.split(' ')[0]!.toLowerCase()}@own.example.com`,
        subject: `[Test] Hi ${own.contactEmail}`,
        body: 'Body',
        contact: { id: own.contactId, email: own.contactEmail },
        providerId: expect.any(String),
      });
    },
  },

  'enrollments.enroll': {
    minimum: 'MARKETER',
    input: (own) => ({ workflowId: own.workflowId, email: `${unique('enrollee')}@example.com` }),
    foreign: (other) => [{ workflowId: other.workflowId, email: `${unique('enrollee')}@example.com` }],
    answer: (reply, _own, _input, cell) => expect(ok(reply, cell), cell).toEqual({ executionId: uuid() }),
  },
  'enrollments.enrollMany': {
    minimum: 'MARKETER',
    input: (own) => ({ workflowId: own.workflowId, contacts: [{ email: `${unique('bulk')}@example.com` }] }),
    foreign: (other) => [{ workflowId: other.workflowId, contacts: [{ email: `${unique('bulk')}@example.com` }] }],
    answer: (reply, _own, input, cell) => {
      expect(ok(reply, cell), cell).toMatchObject({
        results: [{ row: 1, email: (input as Row).contacts[0].email, executionId: uuid() }],
        summary: { rows: 1, enrolled: 1, failed: 0 },
      });
    },
  },
  'enrollments.enrollBatch': {
    minimum: 'MARKETER',
    input: (own) => ({ workflowId: own.workflowId, contacts: [{ email: `${unique('batch')}@example.com` }] }),
    foreign: (other) => [{ workflowId: other.workflowId, contacts: [{ email: `${unique('batch')}@example.com` }] }],
    answer: (reply, _own, input, cell) => {
      expect(ok(reply, cell), cell).toMatchObject({
        results: [{ row: 1, email: (input as Row).contacts[0].email, executionId: uuid() }],
        summary: { rows: 1, enrolled: 1, failed: 0 },
      });
    },
  },
  'enrollments.importCsv': {
    minimum: 'MARKETER',
    optional: true,
    input: (own) => ({ workflowId: own.workflowId, csv: `email\n${unique('csv')}@example.com\n` }),
    foreign: (other) => [{ workflowId: other.workflowId, csv: `email\n${unique('csv')}@example.com\n` }],
    answer: (reply, _own, input, cell) => {
      expect(ok(reply, cell), cell).toMatchObject({
        results: [{ row: 1, email: (input as Row).csv.split('\n')[1], executionId: uuid() }],
        summary: { rows: 1, enrolled: 1, failed: 0 },
      });
    },
  },

  'events.track': {
    minimum: 'MARKETER',
    input: (own) => ({ name: 'matrix_event', contactId: own.contactId }),
    foreign: (other) => [{ name: 'matrix_event', contactId: other.contactId }],
    answer: (reply, _own, _input, cell) => expect(ok(reply, cell), cell).toEqual({ eventId: uuid(), duplicate: false }),
  },
  'events.trackMany': {
    minimum: 'MARKETER',
    input: (own) => ({ events: [{ name: 'matrix_event', contactId: own.contactId }] }),
    // Another project's contact is each event's own answer, never a write there.
    answer: (reply, _own, _input, cell) => expect(ok(reply, cell), cell).toEqual({ results: [{ index: 0, eventId: uuid(), duplicate: false }] }),
  },
  'events.list': {
    minimum: 'VIEWER',
    input: (own) => ({ contact: own.contactEmail }),
    foreign: (other) => [{ contact: other.contactId }, { contact: other.contactEmail }],
    answer: (reply, own, _input, cell) => {
      const items = ok(reply, cell).items as Row[];
      expect(items.find((e) => e.id === own.eventId), cell).toMatchObject({ name: 'page_view', contactEmail: own.contactEmail });
      expect(items.every((e) => e.contactEmail === own.contactEmail), cell).toBe(true);
    },
  },
  'waits.resolve': {
    minimum: 'MARKETER',
    // Version 0 is stale by now: the CAS loses, and the wait stays WAITING.
    input: (own) => ({ stepExecutionId: own.stepExecutionId, outcome: 'TIMEOUT', expectedVersion: 0 }),
    foreign: (other) => [{ stepExecutionId: other.stepExecutionId, outcome: 'TIMEOUT', expectedVersion: 0 }],
    answer: (reply, _own, _input, cell) => {
      refused(reply, cell, 409, 'CONFLICT', 'STALE_VERSION');
      expect(reply.conflict, cell).toMatchObject({ status: 'WAITING', currentVersion: expect.any(Number) });
    },
  },

  'executions.list': {
    minimum: 'VIEWER',
    input: () => ({}),
    foreign: (other) => [{ workflowId: other.workflowId }],
    answer: (reply, own, _input, cell) => {
      const items = ok(reply, cell).items as Row[];
      expect(items.length, cell).toBeGreaterThan(0);
      expect(items.filter((e) => e.workflowId !== own.workflowId), cell).toEqual([]);
    },
  },
  'executions.get': {
    minimum: 'VIEWER',
    input: (own) => ({ id: own.executionId }),
    foreign: (other) => [{ id: other.executionId }],
    answer: (reply, own, _input, cell) => {
      expect(ok(reply, cell), cell).toMatchObject({ id: own.executionId, contactEmail: own.contactEmail, workflowName: 'own waits', status: 'WAITING', stepKey: 'wait' });
    },
  },
  'executions.find': {
    minimum: 'VIEWER',
    input: (own) => ({ id: own.executionId }),
    foreign: (other) => [{ id: other.executionId }],
    answer: (reply, own, _input, cell) => {
      const execution = ok(reply, cell);
      expect(execution, cell).toMatchObject({ id: own.executionId, contactEmail: own.contactEmail, status: 'WAITING', stepKey: 'wait' });
      expect(execution.steps.length, cell).toBeGreaterThan(0);
    },
  },
  'executions.page': {
    minimum: 'VIEWER',
    input: () => ({ limit: 200 }),
    foreign: (other) => [{ workflowId: other.workflowId }],
    answer: (reply, own, _input, cell) => {
      const items = ok(reply, cell).items as Row[];
      expect(items.length, cell).toBeGreaterThan(0);
      expect(items.filter((e) => e.workflowId !== own.workflowId), cell).toEqual([]);
    },
  },
  'executions.cancel': {
    minimum: 'OPERATOR',
    // Version 0 is stale by now: the CAS loses, and the execution stays WAITING.
    input: (own) => ({ id: own.executionId, expectedVersion: 0, reason: 'matrix cancel' }),
    foreign: (other) => [{ id: other.executionId, expectedVersion: 0, reason: 'matrix cancel' }],
    answer: (reply, _own, _input, cell) => refused(reply, cell, 409, 'CONFLICT', 'STALE_VERSION'),
  },
  'executions.stats': {
    minimum: 'VIEWER',
    input: () => ({}),
    foreign: (other) => [{ workflowId: other.workflowId }],
    // The fixture's one wait; enrollments other cells made are RUNNING (no worker here).
    answer: (reply, _own, _input, cell) => expect(ok(reply, cell).byStatus, cell).toMatchObject({ WAITING: 1, FAILED: 0 }),
  },

  'overview.throughput': {
    minimum: 'VIEWER',
    input: () => ({ minutes: 60 }),
    answer: (reply, _own, _input, cell) => {
      const throughput = ok(reply, cell);
      expect(throughput.minutes, cell).toBe(60);
      expect(throughput.buckets, cell).toHaveLength(60);
      // The fixture enrolled one contact within the hour.
      expect(throughput.buckets.reduce((n: number, b: Row) => n + b.enrollments, 0), cell).toBeGreaterThan(0);
    },
  },
  'overview.recentFailures': { minimum: 'VIEWER', input: () => ({ limit: 10 }), answer: (reply, _own, _input, cell) => expect(ok(reply, cell), cell).toEqual([]) },
};
