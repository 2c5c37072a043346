import type { Db, DbTx } from '../db';
import { writeAudit, type AuditOutcome } from '../engine/audit';
import type { Actor } from './trpc';

// How routers change things: inside one transaction that also writes the AuditEntry
// recording the change (I8), so an entry exists exactly when its change does. A refused or
// lost attempt is audited too, and committed, before the router answers with its error:
// the handler returns the refusal as a value from the transaction and throws only after
// commit, since throwing inside would roll the audit entry back with everything else.

/**
 * Waiting up to 10 s for a connection and running up to 60 s: a bulk chunk of 500
 * enrollments must not hit Prisma's 5 s default, and a busy pool must not turn into a 500.
 */
const TRANSACTION_OPTIONS = { maxWait: 10_000, timeout: 60_000 } as const;

export function inTransaction<T>(db: Db, fn: (tx: DbTx) => Promise<T>): Promise<T> {
  return db.$transaction((tx) => fn(tx), TRANSACTION_OPTIONS);
}

export interface AuditRecord {
  /** The procedure's name, e.g. "enrollments.enroll". */
  action: string;
  targetType: string;
  targetId: string;
  outcome: AuditOutcome;
  reason?: string | null;
  before?: unknown;
  after?: unknown;
}

/** The audit entry of one call by this actor, in its project. */
export function audit(tx: DbTx, actor: Actor, record: AuditRecord): Promise<string> {
  return writeAudit(tx, { projectId: actor.projectId, actor: actor.id, ...record });
}
