import type { DbTx } from '../db';
import type { ExecutionState } from '../engine/claims';
import type { EventSnapshot } from './snapshot';

// Explaining the loser: a repair that lost its claim (or found the target moved since the
// preview) tells the operator who won — a worker, an event, the timer or another
// operator — and the state it left, instead of a bare "conflict".

export interface Winner {
  kind: 'worker' | 'event' | 'timeout' | 'operator';
  actor: string | null;
  action: string | null;
  at: Date | null;
}

export type Conflict =
  | { reason: 'WAIT_RESOLVED'; resolvedBy: string; at: Date | null; winner: Winner; status: string; currentVersion: number }
  | { reason: 'STALE_VERSION'; currentVersion: number | null; status: string | null; winner: Winner };

/** The wait a repair targeted: one step execution, or (not known) the execution's latest resolved one. */
export type TargetedStep = { stepExecutionId: string | null } | 'LATEST';

/** How an action explains a loss on an execution (each action's entry names one). */
export type ExplainLoss = (db: DbTx, projectId: string, current: ExecutionState | null, targeted: TargetedStep) => Promise<Conflict>;

type Resolution = { resolvedBy: string; resolvedAt: Date | null };

/** The execution's most recent wait resolution, if any. */
async function latestResolution(db: DbTx, executionId: string): Promise<Resolution | undefined> {
  const [row] = await db.$queryRaw<Resolution[]>`
    -- latestResolution
    SELECT "resolvedBy"::text AS "resolvedBy", "resolvedAt" FROM "StepExecution"
     WHERE "executionId" = ${executionId}::uuid AND "resolvedBy" IS NOT NULL
     ORDER BY "resolvedAt" DESC LIMIT 1`;
  return row;
}

/** Who moved the execution since the operator looked: from the wait row, or the audit log. */
export async function whoWon(db: DbTx, projectId: string, current: ExecutionState | null): Promise<Winner> {
  if (!current) return { kind: 'worker', actor: null, action: null, at: null };
  const [audit] = await db.$queryRaw<{ actor: string; action: string; at: Date; version: number | null }[]>`
    -- whoWon
    SELECT actor, action, at, (after->>'version')::int AS version FROM "AuditEntry"
     WHERE "projectId" = ${projectId}::uuid AND "targetId" = ${current.id} AND outcome = 'APPLIED'
     ORDER BY at DESC LIMIT 1`;
  if (audit && audit.version === current.version) {
    return { kind: 'operator', actor: audit.actor, action: audit.action, at: audit.at };
  }
  const wait = await latestResolution(db, current.id);
  if (wait?.resolvedBy === 'EVENT' || wait?.resolvedBy === 'TIMEOUT') {
    // The latest resolution explains the move only if it is newer than any worker write.
    if (wait.resolvedAt && wait.resolvedAt.getTime() >= current.updatedAt.getTime() - 5_000) {
      return { kind: wait.resolvedBy === 'EVENT' ? 'event' : 'timeout', actor: null, action: null, at: wait.resolvedAt };
    }
  }
  if (wait?.resolvedBy === 'OPERATOR' && audit) return { kind: 'operator', actor: audit.actor, action: audit.action, at: audit.at };
  return { kind: 'worker', actor: null, action: null, at: current.updatedAt };
}

/** The execution moved on: its version now, and who moved it (a worker, or an operator per the audit log). */
export const explainStaleVersion: ExplainLoss = async (db, projectId, current) => ({
  reason: 'STALE_VERSION',
  currentVersion: current?.version ?? null,
  status: current?.status ?? null,
  winner: await whoWon(db, projectId, current),
});

/**
 * An action on a wait lost: the resolution of the wait the operator targeted (by an
 * event, the timer, or another operator) is the answer — not that of a later (or
 * earlier) wait of the execution. Only when the caller did not say which step execution
 * it saw and the execution has moved past its waits is the latest resolution taken.
 * With no resolution to show, the execution moved on (explainStaleVersion).
 */
export const explainWaitLoss: ExplainLoss = async (db, projectId, current, targeted) => {
  if (current && (targeted === 'LATEST' || targeted.stepExecutionId)) {
    const row =
      targeted === 'LATEST'
        ? await latestResolution(db, current.id)
        : (
            await db.$queryRaw<Resolution[]>`
              -- explainWaitLoss.resolution
              SELECT "resolvedBy"::text AS "resolvedBy", "resolvedAt" FROM "StepExecution"
               WHERE id = ${targeted.stepExecutionId}::uuid AND "executionId" = ${current.id}::uuid AND "resolvedBy" IS NOT NULL`
          )[0];
    if (row) {
      const winner: Winner =
        row.resolvedBy === 'OPERATOR'
          ? await whoWon(db, projectId, current)
          : { kind: row.resolvedBy === 'EVENT' ? 'event' : 'timeout', actor: null, action: null, at: row.resolvedAt };
      return {
        reason: 'WAIT_RESOLVED',
        resolvedBy: row.resolvedBy,
        at: row.resolvedAt,
        winner,
        status: current.status,
        currentVersion: current.version,
      };
    }
  }
  return explainStaleVersion(db, projectId, current, targeted);
};

/** A redrive whose event moved since the preview: its attempt count now, and where it stands. */
export function staleEvent(event: EventSnapshot): Conflict {
  return {
    reason: 'STALE_VERSION',
    currentVersion: event.version,
    status: event.deadAt ? 'DEAD' : event.processedAt ? 'PROCESSED' : 'PENDING',
    winner: { kind: 'worker', actor: null, action: null, at: null },
  };
}
