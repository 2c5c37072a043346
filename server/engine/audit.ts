import type { RawDb } from '../db';

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

/** The jsonb text of a before/after (Dates as strings, undefined dropped), or NULL. */
function jsonText(value: unknown): string | null {
  return value === undefined || value === null ? null : JSON.stringify(value);
}

/**
 * Writes the entry; returns its id (a long operation may update its summary later). One
 * raw statement, so it joins a raw engine transaction (server/db/transaction.ts, rawTransaction) as
 * well as Prisma's.
 */
export async function writeAudit(db: RawDb, a: AuditInput): Promise<string> {
  const [entry] = await db.$queryRaw<{ id: string }[]>`
    -- writeAudit
    INSERT INTO "AuditEntry" ("projectId", actor, action, "targetType", "targetId", reason, before, after, outcome)
    VALUES (${a.projectId}::uuid, ${a.actor}, ${a.action}, ${a.targetType}, ${a.targetId}, ${a.reason ?? null}::text,
            ${jsonText(a.before)}::jsonb, ${jsonText(a.after)}::jsonb, ${a.outcome}::"AuditOutcome")
    RETURNING id`;
  return entry!.id;
}
