import type { DbTx } from '../db';
import { writeAudit, type Acting, type AuditOutcome } from '../engine/audit';
import type { Actor } from '../auth/actor';

// How routers change things: inside one transaction (server/db/transaction.ts, the
// ENGINE policy) that also writes the AuditEntry
// recording the change (I8), so an entry exists exactly when its change does. A refused or
// lost attempt is audited too, and committed, before the router answers with its error:
// the handler returns the refusal as a value from the transaction and throws only after
// commit, since throwing inside would roll the audit entry back with everything else.

/** The caller as the engine's audited changes take it: its project, and its actor id. */
export function acting(actor: Actor): Acting {
  return { projectId: actor.projectId, actor: actor.id };
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
