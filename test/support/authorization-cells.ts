import { expect } from 'vitest';
import type { Role } from '../../server/db';

// The authorization matrix's vocabulary (test/support/authorization-matrix.ts): roles,
// the shapes of a row and a reply, and the checks a row's answer is written with.

export const ROLES: Role[] = ['VIEWER', 'MARKETER', 'OPERATOR', 'OWNER'];
export const RANK: Record<Role, number> = { VIEWER: 0, MARKETER: 1, OPERATOR: 2, OWNER: 3 };

/** Input keys that name a row: a procedure taking one must prove another project's row is NOT_FOUND. */
export const ID_KEYS = new Set(['id', 'contactId', 'workflowId', 'executionId', 'stepExecutionId', 'userId', 'eventId', 'executionIds', 'token', 'endpointId']);

/** The rows of one project that procedures' inputs point at. */
export interface ProjectRows {
  projectId: string;
  contactId: string;
  contactEmail: string;
  /** A contact with no executions, for contacts.erase. */
  erasableContactId: string;
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
  /** A webhook endpoint, and a PENDING webhook.test message to it. */
  webhookEndpointId: string;
  webhookMessageId: string;
  /** A second endpoint, for webhooks.delete to delete. */
  spareWebhookEndpointId: string;
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

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const uuid = () => expect.stringMatching(UUID);
export type Row = Record<string, any>;

/** An OK reply's result (failing the cell with what came instead). */
export function ok<T = Row>(reply: MatrixReply, cell: string): T {
  expect(`${reply.status} ${reply.code}`, `${cell}: ${reply.message ?? ''}`).toBe('200 OK');
  return reply.result as T;
}

/** A refusal of the procedure's own (past authorization), with its status and conflict reason. */
export function refused(reply: MatrixReply, cell: string, status: number, code: string, reason?: string): void {
  expect(`${reply.status} ${reply.code}`, `${cell}: ${reply.message ?? JSON.stringify(reply.result)}`).toBe(`${status} ${code}`);
  if (reason) expect((reply.conflict as Row | null)?.reason, cell).toBe(reason);
}

/** The first let-through cell of an OWNER-only procedure (people come before keys). */
export const FIRST_OWNER = 'OWNER person';

export const emailsOf = (items: Row[]) => items.map((item) => item.email ?? item.contactEmail);
