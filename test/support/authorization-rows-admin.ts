import { expect } from 'vitest';
import { type MatrixRow, unique, uuid, ok, refused, FIRST_OWNER, type Row } from './authorization-cells';

// The matrix's rows for repairs, the audit log, API keys, members, invitations and retention.
export const ADMIN_ROWS: Record<string, MatrixRow> = {
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

  // Read-only and about the caller's project: every member may know how long its history is kept.
  'retention.status': {
    minimum: 'VIEWER',
    input: () => undefined,
    answer: (reply, _own, _input, cell) => {
      const status = ok(reply, cell);
      // Neither variable is set for the tests: both off, and nothing ever swept here.
      expect(status.history, cell).toMatchObject({ variable: 'RETENTION_DAYS', days: null, project: null });
      expect(status.audit, cell).toMatchObject({ variable: 'AUDIT_RETENTION_DAYS', days: null, project: null });
      expect(status.neverRemoved.length, cell).toBeGreaterThan(3);
    },
  },
};
