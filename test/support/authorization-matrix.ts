import { expect } from 'vitest';
import { z } from 'zod';
import type { Db, Role } from '../../server/db';
import { createEngineContext } from '../../server/engine/context';
import { enroll } from '../../server/engine/enrollment';
import { trackEvent } from '../../server/engine/events';
import { runWorkerOnce } from '../../server/engine/worker';
import { appRouter } from '../../server/trpc/root';
import { inviteMember } from '../../server/auth/invitations';
import { createPerson, newApiKey } from './auth';
import { createContact, createProject, waitWorkflow, workflowFrom } from './fixtures';

// The authorization matrix of docs/api.md, "Authentication and roles", one table for the
// in-process walk (test/api/authorization-matrix.test.ts) and the walk over HTTP
// (test/security/authorization-http.test.ts): per procedure of the real router, its
// minimum role, a well-formed input on the caller's own project, the same call naming
// another project's rows, and the procedure's real answer to that input on the fixture
// projectWithRows makes. Two procedures are not a project's: a person's own invitations
// (PERSON: any signed-in person, whatever their role or projects; API keys UNAUTHORIZED)
// and making an account from an invitation link (ANYONE: the link is the credential).

export const ROLES: Role[] = ['VIEWER', 'MARKETER', 'OPERATOR', 'OWNER'];
export const RANK: Record<Role, number> = { VIEWER: 0, MARKETER: 1, OPERATOR: 2, OWNER: 3 };

/** Input keys that name a row: a procedure taking one must prove another project's row is NOT_FOUND. */
export const ID_KEYS = new Set(['id', 'contactId', 'workflowId', 'executionId', 'stepExecutionId', 'userId', 'eventId', 'executionIds', 'token']);

/** The rows of one project that procedures' inputs point at. */
export interface ProjectRows {
  projectId: string;
  contactId: string;
  contactEmail: string;
  workflowId: string;
  executionId: string;
  /** A WAITING wait step of executionId. */
  stepExecutionId: string;
  eventId: string;
  /** A member who is not one of the matrix's callers (setRole/remove may change them). */
  memberUserId: string;
  /** A key that is not one of the matrix's callers (revoke may revoke it). */
  apiKeyId: string;
  /** A pending invitation to an email none of the matrix's callers has. */
  invitationId: string;
  invitationToken: string;
}

export interface MatrixRow {
  minimum: Role | 'PERSON' | 'ANYONE';
  /** A well-formed input on the caller's own project (its answer past authorization may be any 4xx). */
  input: (own: ProjectRows) => unknown;
  /** The same call naming another project's rows, one input per way of naming them: NOT_FOUND. */
  foreign?: (other: ProjectRows, own: ProjectRows) => unknown[];
  /**
   * A bulk procedure selects by filter: another project's ids may also select nothing at
   * all (an empty answer), as long as nothing there is touched.
   */
  foreignMaySelectNothing?: (result: unknown) => boolean;
  /** Listed for a procedure that may not exist (yet): no failure when it is absent. */
  optional?: boolean;
  /**
   * The procedure's real answer to `input(own)` on projectWithRows's fixture, asserted
   * with expect (over HTTP, test/security/authorization-http.test.ts). Let-through cells
   * run in role order, person then key, so a second call may meet the first one's work.
   */
  answer?: (reply: MatrixReply, own: ProjectRows, input: unknown, cell: string) => void;
}

/** What one call answered: OK with its result, or a tRPC error code with its HTTP status. */
export interface MatrixReply {
  status: number;
  code: string;
  result?: unknown;
  message?: string;
  conflict?: unknown;
}

/** Whether a caller (a member of `own` with this role, as a person or by key) is let through. */
export function allowed(row: MatrixRow, role: Role, kind: 'person' | 'key'): boolean {
  if (row.minimum === 'ANYONE') return true;
  if (row.minimum === 'PERSON') return kind === 'person';
  return RANK[role] >= RANK[row.minimum];
}

/** How a member not let through is refused: a key at a person's procedure is no one (UNAUTHORIZED). */
export const refusalOf = (row: MatrixRow): 'UNAUTHORIZED' | 'FORBIDDEN' => (row.minimum === 'PERSON' ? 'UNAUTHORIZED' : 'FORBIDDEN');

let sequence = 0;
export const unique = (what: string) => `${what}-${++sequence}-${Math.random().toString(36).slice(2, 6)}`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const uuid = () => expect.stringMatching(UUID);
type Row = Record<string, any>;

/** An OK reply's result (failing the cell with what came instead). */
function ok<T = Row>(reply: MatrixReply, cell: string): T {
  expect(`${reply.status} ${reply.code}`, `${cell}: ${reply.message ?? ''}`).toBe('200 OK');
  return reply.result as T;
}

/** A refusal of the procedure's own (past authorization), with its status and conflict reason. */
function refused(reply: MatrixReply, cell: string, status: number, code: string, reason?: string): void {
  expect(`${reply.status} ${reply.code}`, `${cell}: ${reply.message ?? JSON.stringify(reply.result)}`).toBe(`${status} ${code}`);
  if (reason) expect((reply.conflict as Row | null)?.reason, cell).toBe(reason);
}

/** The first let-through cell of an OWNER-only procedure (people come before keys). */
export const FIRST_OWNER = 'OWNER person';

const emailsOf = (items: Row[]) => items.map((item) => item.email ?? item.contactEmail);

export const MATRIX: Record<string, MatrixRow> = {
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

  'repair.stuck': {
    minimum: 'OPERATOR',
    input: () => ({}),
    foreign: (other) => [{ workflowId: other.workflowId }],
    answer: (reply, own, _input, cell) => {
      const page = ok(reply, cell);
      expect((page.items as Row[]).filter((e) => e.workflowId !== own.workflowId), cell).toEqual([]);
      // The fixture's wait times out in an hour: not stuck.
      expect((page.items as Row[]).map((e) => e.id), cell).not.toContain(own.executionId);
    },
  },
  'repair.preview': {
    minimum: 'OPERATOR',
    input: (own) => ({ executionId: own.executionId, action: 'CANCEL' }),
    foreign: (other, own) => [
      { executionId: other.executionId, action: 'CANCEL' },
      { action: 'REDRIVE_EVENT', eventId: other.eventId },
      { executionId: own.executionId, action: 'DELIVER_EVENT', eventId: other.eventId },
    ],
    answer: (reply, own, _input, cell) => {
      expect(ok(reply, cell), cell).toMatchObject({
        action: 'CANCEL',
        expectedVersion: expect.any(Number),
        target: { id: own.executionId, projectId: own.projectId, contactEmail: own.contactEmail, status: 'WAITING' },
      });
    },
  },
  'repair.options': {
    minimum: 'OPERATOR',
    input: (own) => ({ executionId: own.executionId }),
    foreign: (other) => [{ executionId: other.executionId }],
    answer: (reply, own, _input, cell) => {
      expect(ok(reply, cell), cell).toMatchObject({ expectedVersion: expect.any(Number), target: { id: own.executionId, projectId: own.projectId, status: 'WAITING' } });
    },
  },
  // docs/api.md's repair.apply: tRPC reserves `apply` as a procedure name.
  'repair.applyOne': {
    minimum: 'OPERATOR',
    // Version 0 is stale by now: a CONFLICT past authorization, and nothing cancelled.
    input: (own) => ({ executionId: own.executionId, action: 'CANCEL', expectedVersion: 0, reason: 'authorization matrix' }),
    foreign: (other) => [{ executionId: other.executionId, action: 'CANCEL', expectedVersion: 0, reason: 'authorization matrix' }],
    answer: (reply, _own, _input, cell) => {
      refused(reply, cell, 409, 'CONFLICT', 'STALE_VERSION');
      expect(reply.conflict, cell).toMatchObject({ status: 'WAITING' });
    },
  },
  'repair.applyMany': {
    minimum: 'OPERATOR',
    input: (own) => ({ filter: { executionIds: [own.executionId] }, action: 'CANCEL', reason: 'authorization matrix', dryRun: true }),
    foreign: (other) => [
      { filter: { workflowId: other.workflowId, status: 'WAITING' }, action: 'CANCEL', reason: 'authorization matrix' },
      { filter: { executionIds: [other.executionId] }, action: 'CANCEL', reason: 'authorization matrix' },
    ],
    foreignMaySelectNothing: (result) => (result as { items: unknown[] }).items.length === 0,
    answer: (reply, _own, _input, cell) => expect(ok(reply, cell), cell).toMatchObject({ matched: 1, dryRun: true, items: [] }),
  },

  'repair.stuckGroups': {
    minimum: 'VIEWER',
    input: () => ({}),
    foreign: (other) => [{ workflowId: other.workflowId }],
    answer: (reply, _own, _input, cell) => expect(ok(reply, cell), cell).toMatchObject({ groups: expect.any(Array), graceSeconds: expect.any(Number) }),
  },
  'repair.applyManyLive': {
    minimum: 'OPERATOR',
    // Dead events belong to no workflow: this selects nothing and changes nothing.
    input: (own) => ({ filter: { reason: 'EVENT_DEAD', workflowId: own.workflowId }, action: 'REDRIVE_EVENT', reason: 'authorization matrix' }),
    foreign: (other) => [{ filter: { reason: 'WAIT_OVERDUE', workflowId: other.workflowId }, action: 'FORCE_TIMEOUT', reason: 'authorization matrix' }],
    answer: (reply, _own, _input, cell) => {
      const progress = ok<Row[]>(reply, cell);
      expect(progress.length, cell).toBeGreaterThan(0);
      expect(progress.at(-1), cell).toMatchObject({ matched: 0 });
    },
  },

  'audit.list': {
    minimum: 'VIEWER',
    input: () => ({}),
    answer: (reply, _own, _input, cell) => {
      const items = ok(reply, cell).items as Row[];
      expect(items.length, cell).toBeGreaterThan(0);
      // Entries about people and keys are for owners only.
      if (!cell.startsWith('OWNER')) expect(items.filter((e) => /^(members|apiKeys|invitations)\./.test(e.action)), cell).toEqual([]);
      expect(JSON.stringify(items), cell).not.toContain(`other-`);
    },
  },

  'apiKeys.list': {
    minimum: 'OWNER',
    input: () => undefined,
    answer: (reply, own, _input, cell) => {
      const keys = ok<Row[]>(reply, cell);
      expect(keys.map((k) => k.id), cell).toContain(own.apiKeyId);
      expect(keys.map((k) => k.name), cell).not.toContain('other integration');
      // Prefixes only: a stored key's secret and hash are never answered.
      expect(JSON.stringify(keys), cell).not.toMatch(/secret|hashed/i);
    },
  },
  'apiKeys.create': {
    minimum: 'OWNER',
    input: () => ({ name: unique('matrix key'), role: 'VIEWER' }),
    answer: (reply, _own, _input, cell) => {
      const key = ok(reply, cell);
      expect(key, cell).toEqual({ id: uuid(), secret: expect.stringMatching(/^wp_/), prefix: expect.any(String) });
      expect(key.secret.startsWith(key.prefix), cell).toBe(true);
    },
  },
  'apiKeys.revoke': {
    minimum: 'OWNER',
    input: (own) => ({ id: own.apiKeyId }),
    foreign: (other) => [{ id: other.apiKeyId }],
    // The first owner revokes it; the next one is told it already was.
    answer: (reply, own, _input, cell) => {
      if (cell !== FIRST_OWNER && reply.code === 'CONFLICT') return refused(reply, cell, 409, 'CONFLICT', 'ALREADY_REVOKED');
      expect(ok(reply, cell), cell).toMatchObject({ id: own.apiKeyId, name: 'own integration', revokedAt: expect.any(Date) });
    },
  },

  'members.list': {
    minimum: 'OWNER',
    input: () => undefined,
    answer: (reply, _own, _input, cell) => {
      const members = ok<Row[]>(reply, cell);
      expect(members.map((m) => m.email), cell).toEqual(expect.arrayContaining(['own-owner@example.com', 'owner@own.example.com']));
      expect(members.map((m) => m.email).filter((email) => email.includes('other')), cell).toEqual([]);
    },
  },
  'members.add': {
    minimum: 'OWNER',
    input: () => ({ email: `${unique('member')}@example.com`, role: 'VIEWER' }),
    // An invitation, the same answer whether or not the email has an account.
    answer: (reply, _own, input, cell) => {
      const answer = ok(reply, cell);
      expect(answer, cell).toMatchObject({ invitation: { id: uuid(), email: (input as Row).email, role: 'VIEWER', status: 'PENDING' }, link: expect.stringMatching(/\/invitations\/[A-Za-z0-9_-]{43}$/) });
    },
  },
  'members.invitations': {
    minimum: 'OWNER',
    input: () => undefined,
    answer: (reply, own, _input, cell) => {
      const emails = ok<Row[]>(reply, cell).map((i) => i.email);
      expect(emails, cell).toContain('own-invitee@example.com');
      expect(emails.filter((email) => email.includes('other')), cell).toEqual([]);
      expect(JSON.stringify(ok(reply, cell)), cell).not.toContain(own.invitationToken);
    },
  },
  'members.revokeInvitation': {
    minimum: 'OWNER',
    input: (own) => ({ id: own.invitationId }),
    foreign: (other) => [{ id: other.invitationId }],
    // The first owner revokes it; the next one is told it already was.
    answer: (reply, own, _input, cell) => {
      if (cell !== FIRST_OWNER && reply.code === 'CONFLICT') return refused(reply, cell, 409, 'CONFLICT', 'INVITATION_REVOKED');
      expect(ok(reply, cell), cell).toMatchObject({ id: own.invitationId, status: 'REVOKED' });
    },
  },

  // None of the callers is invited: an empty list, and another's invitation is NOT_FOUND
  // past authorization, in either project.
  'invitations.mine': { minimum: 'PERSON', input: () => undefined, answer: (reply, _own, _input, cell) => expect(ok(reply, cell), cell).toEqual([]) },
  'invitations.accept': {
    minimum: 'PERSON',
    input: (own) => ({ id: own.invitationId }),
    foreign: (other) => [{ id: other.invitationId }],
    answer: (reply, _own, _input, cell) => refused(reply, cell, 404, 'NOT_FOUND'),
  },
  'invitations.decline': {
    minimum: 'PERSON',
    input: (own) => ({ id: own.invitationId }),
    foreign: (other) => [{ id: other.invitationId }],
    answer: (reply, _own, _input, cell) => refused(reply, cell, 404, 'NOT_FOUND'),
  },
  // A token naming no invitation: NOT_FOUND, nothing created. Another project's real
  // token would make an account: the link is the credential, so there is no foreign cell
  // to refuse; the invitation tests cover what a token can and cannot do.
  'invitations.createAccount': {
    minimum: 'ANYONE',
    input: () => ({ token: 'A'.repeat(43), name: 'Matrix', password: 'a long enough password' }),
    foreign: () => [{ token: 'B'.repeat(43), name: 'Matrix', password: 'a long enough password' }],
    answer: (reply, _own, _input, cell) => refused(reply, cell, 404, 'NOT_FOUND'),
  },
  'members.setRole': {
    minimum: 'OWNER',
    input: (own) => ({ userId: own.memberUserId, role: 'VIEWER' }),
    foreign: (other) => [{ userId: other.memberUserId, role: 'OWNER' }],
    answer: (reply, own, _input, cell) => expect(ok(reply, cell), cell).toMatchObject({ userId: own.memberUserId, email: 'own-member@example.com', role: 'VIEWER' }),
  },
  'members.remove': {
    minimum: 'OWNER',
    input: (own) => ({ userId: own.memberUserId }),
    foreign: (other) => [{ userId: other.memberUserId }],
    // The first owner removes them; for the next one they are no member any more.
    answer: (reply, own, _input, cell) => {
      if (cell !== FIRST_OWNER && reply.code === 'NOT_FOUND') return refused(reply, cell, 404, 'NOT_FOUND');
      expect(ok(reply, cell), cell).toMatchObject({ userId: own.memberUserId, email: 'own-member@example.com' });
    },
  },
};

export type Procedure = { _def: { type: 'query' | 'mutation' | 'subscription'; inputs: z.ZodType[] } };
export const PROCEDURES = appRouter._def.procedures as unknown as Record<string, Procedure>;

/** Every property name anywhere in a procedure's input, read from its zod schemas. */
export function inputKeys(procedure: Procedure): Set<string> {
  const keys = new Set<string>();
  const walk = (node: unknown) => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (!node || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node)) {
      if (key === 'properties' && value && typeof value === 'object') for (const name of Object.keys(value)) keys.add(name);
      walk(value);
    }
  };
  for (const schema of procedure._def.inputs) walk(z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }));
  return keys;
}

export async function projectWithRows(db: Db, name: string): Promise<ProjectRows> {
  const project = await createProject(db, name);
  const contactEmail = `${name}-contact@example.com`;
  const contact = await createContact(db, project.id, contactEmail);
  const workflow = await workflowFrom(db, project.id, waitWorkflow({ name: `${name} waits` }));
  const enrolled = await enroll(db, { projectId: project.id, workflowId: workflow.id, contactId: contact.id });
  if (!enrolled.ok) throw new Error(`fixture enrollment failed: ${JSON.stringify(enrolled)}`);
  const engine = createEngineContext(db);
  await runWorkerOnce(engine);
  const wait = await db.stepExecution.findFirstOrThrow({ where: { executionId: enrolled.executionId, status: 'WAITING' } });
  const event = await trackEvent(engine, { projectId: project.id, name: 'page_view', contactId: contact.id, data: {} });
  const member = await createPerson(db, { projectId: project.id, email: `${name}-member@example.com`, password: 'member password', role: 'MARKETER' });
  // The member the matrix may demote must not be the project's last OWNER, or setRole's
  // answer would be about that rule instead of about authorization.
  await createPerson(db, { projectId: project.id, email: `${name}-owner@example.com`, password: 'owner password', role: 'OWNER' });
  const apiKey = await newApiKey(db, project.id, 'VIEWER', `${name} integration`);
  const invited = await inviteMember(db, { projectId: project.id, email: `${name}-invitee@example.com`, role: 'OWNER', actor: 'system' });
  if (invited.outcome !== 'INVITED') throw new Error('fixture invitation not made');
  return {
    projectId: project.id,
    contactId: contact.id,
    contactEmail,
    workflowId: workflow.id,
    executionId: enrolled.executionId,
    stepExecutionId: wait.id,
    eventId: event.ok ? event.eventId : (() => { throw new Error('fixture event not stored'); })(),
    memberUserId: member.userId,
    apiKeyId: apiKey.id,
    invitationId: invited.invitation.id,
    invitationToken: invited.token,
  };
}

