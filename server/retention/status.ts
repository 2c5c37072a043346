import type { RawDb } from '../db';
import { NEVER_REMOVED, RETENTION_VARIABLES, type Removed, type RetentionKind } from './policy';

// What the Settings page shows about retention (retention.status): each kind's policy as
// this process is configured, the deployment's last sweep of it (or the one running), and
// what that sweep removed in the caller's project.

export interface RetentionPolicy {
  historyDays: number;
  auditDays: number;
}

export interface KindStatus {
  kind: RetentionKind;
  variable: string;
  /** Null: off (the variable unset or 0). */
  days: number | null;
  /** Since when a sweep of this kind has been running, or null. */
  runningSince: Date | null;
  last: {
    startedAt: Date;
    finishedAt: Date;
    durationMs: number | null;
    /** The period the sweeping worker had (it may differ from this process's). */
    days: number | null;
    cutoff: Date | null;
    outcome: string | null;
    error: string | null;
  } | null;
  /** What the last sweep removed in this project, and when it was there. */
  project: { sweptAt: Date; cutoff: Date; removed: Removed } | null;
}

export interface RetentionStatus {
  history: KindStatus;
  audit: KindStatus;
  neverRemoved: readonly string[];
}

interface Row {
  kind: RetentionKind;
  runningSince: Date | null;
  lastStartedAt: Date | null;
  lastFinishedAt: Date | null;
  lastDurationMs: number | null;
  lastDays: number | null;
  lastCutoff: Date | null;
  lastOutcome: string | null;
  lastError: string | null;
  sweptAt: Date | null;
  projectCutoff: Date | null;
  removed: Removed | null;
}

export async function retentionStatus(db: RawDb, projectId: string, policy: RetentionPolicy): Promise<RetentionStatus> {
  const rows = await db.$queryRaw<Row[]>`
    -- retentionStatus
    SELECT r.kind, r."runningSince", r."lastStartedAt", r."lastFinishedAt", r."lastDurationMs", r."lastDays",
           r."lastCutoff", r."lastOutcome", r."lastError", p."sweptAt", p.cutoff AS "projectCutoff", p.removed
      FROM "RetentionSweep" r
      LEFT JOIN "RetentionProjectSweep" p ON p.kind = r.kind AND p."projectId" = ${projectId}::uuid`;
  const of = (kind: RetentionKind, days: number): KindStatus => {
    const r = rows.find((row) => row.kind === kind);
    return {
      kind,
      variable: RETENTION_VARIABLES[kind],
      days: days > 0 ? days : null,
      runningSince: r?.runningSince ?? null,
      last:
        r?.lastStartedAt && r.lastFinishedAt
          ? {
              startedAt: r.lastStartedAt,
              finishedAt: r.lastFinishedAt,
              durationMs: r.lastDurationMs,
              days: r.lastDays,
              cutoff: r.lastCutoff,
              outcome: r.lastOutcome,
              error: r.lastError,
            }
          : null,
      project: r?.sweptAt && r.projectCutoff && r.removed ? { sweptAt: r.sweptAt, cutoff: r.projectCutoff, removed: r.removed } : null,
    };
  };
  return { history: of('history', policy.historyDays), audit: of('audit', policy.auditDays), neverRemoved: NEVER_REMOVED };
}
