import type { DbTx } from '../db';

// The audit log (I8): every manual action — by a person or an API key — with actor,
// action, target, reason, before/after and outcome, written by the caller inside the
// transaction of the change it records, so an entry exists exactly when the change does.
// Failed and lost attempts are written too (outcome REJECTED / LOST / FAILED).

export type AuditOutcome = 'APPLIED' | 'LOST' | 'REJECTED' | 'FAILED';

/** Who a manual action is by, and the project it acts in: what every audited change takes. */
export interface Acting {
  projectId: string;
  /** "user:<id>", "apikey:<id>", "system" */
  actor: string;
}

export interface AuditInput extends Acting {
  /** e.g. "enrollments.enroll", "repair.FORCE_TIMEOUT" */
  action: string;
  targetType: string;
  targetId: string;
  reason?: string | null;
  before?: unknown;
  after?: unknown;
  outcome: AuditOutcome;
}

/** JSON-safe copy (Dates to strings, undefined dropped) for the jsonb columns. */
function json(value: unknown): object | null {
  return value === undefined || value === null ? null : (JSON.parse(JSON.stringify(value)) as object);
}

/** Writes the entry; returns its id (a long operation may update its summary later). */
export async function writeAudit(db: DbTx, a: AuditInput): Promise<string> {
  const entry = await db.auditEntry.create({
    data: {
      projectId: a.projectId,
      actor: a.actor,
      action: a.action,
      targetType: a.targetType,
      targetId: a.targetId,
      reason: a.reason ?? null,
      before: json(a.before) ?? undefined,
      after: json(a.after) ?? undefined,
      outcome: a.outcome,
    },
    select: { id: true },
  });
  return entry.id;
}
