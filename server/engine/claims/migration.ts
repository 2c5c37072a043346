import type { RawDb } from '../../db';
import { stepFrom } from '../transitions';
import { readExecutionState, type ExecutionState } from './execution';
import { executionMayMove, noLiveWorkerHoldsStep, stepStatuses } from './fragments';
import { lost, type Lost, type Won } from './result';

// Moving an execution to a later version of its workflow (the operators' MIGRATE,
// server/repair; docs/versions.md). One statement, fenced by the version the operator saw
// and by the version and step the execution was on, so a worker, the timer or an event
// that moved it first wins and the move changes nothing.

export interface MigrationMove {
  executionId: string;
  expectedVersion: number;
  /** The execution's version and step the operator planned from. */
  fromVersionId: string;
  fromStepId: string;
  /** The later version and its step the execution moves to (of the same workflow: the foreign key holds it to its version). */
  toVersionId: string;
  toStepId: string;
  /**
   * keepWait: an unresolved wait moves to a step that waits the same way (the same type,
   * and for WAIT_FOR_EVENT the same event name): its row is re-pointed, keeping startedAt
   * (the event look-back) and taking the new step's deadline, startedAt + dueSeconds.
   * Otherwise the current step row, if open, is ended SKIPPED and the execution becomes
   * RUNNING at the new step, due now.
   */
  keepWait: boolean;
  dueSeconds: number | null;
  /** Recorded on the ended step row: who moved it and why. */
  note: string;
}

/**
 * I6, I8, I9: move an active execution to another version's step. RUNNING only while no
 * live worker holds its step; WAITING only on an unresolved wait (a resolved one is the
 * continuation's to finish). The execution row is locked first, then its step row (the
 * claims' lock order, as an event's dispatch takes a wait; the timer skips locked rows).
 */
export async function migrateExecution(db: RawDb, m: MigrationMove): Promise<Won<{ version: number }> | Lost<ExecutionState | null>> {
  const rows = await db.$queryRaw<{ version: number | null }[]>`
    -- migrateExecution
    WITH exec AS (
      UPDATE "WorkflowExecution" e
         SET version = e.version + 1, "workflowVersionId" = ${m.toVersionId}::uuid, "currentStepId" = ${m.toStepId}::uuid,
             status = CASE WHEN ${m.keepWait} THEN e.status ELSE 'RUNNING' END,
             "readyAt" = CASE WHEN ${m.keepWait} THEN e."readyAt" ELSE now() END,
             "lastError" = NULL, "updatedAt" = now()
       WHERE e.id = ${m.executionId}::uuid AND e.version = ${m.expectedVersion}
         AND e."workflowVersionId" = ${m.fromVersionId}::uuid AND e."currentStepId" = ${m.fromStepId}::uuid
         AND ${executionMayMove('migrateExecution')}
         AND ${noLiveWorkerHoldsStep}
         AND (e.status <> 'WAITING' OR EXISTS (
               SELECT 1 FROM "StepExecution" w
                WHERE w."executionId" = e.id AND w."stepId" = e."currentStepId" AND w.status = 'WAITING' AND w."resolvedBy" IS NULL))
         AND (NOT ${m.keepWait} OR e.status = 'WAITING')
      RETURNING e.id, e.version
    ), kept AS (
      UPDATE "StepExecution" s
         SET "stepId" = ${m.toStepId}::uuid, "dueAt" = s."startedAt" + make_interval(secs => ${m.dueSeconds ?? 0}::double precision)
        FROM exec
       WHERE ${m.keepWait} AND s."executionId" = exec.id AND s."stepId" = ${m.fromStepId}::uuid
         AND s.status = 'WAITING' AND s."resolvedBy" IS NULL
      RETURNING s.id
    ), ended AS (
      UPDATE "StepExecution" s
         SET status = 'SKIPPED', "finishedAt" = now(), "leaseExpiresAt" = NULL, "claimToken" = NULL,
             output = COALESCE(s.output, '{}'::jsonb) || jsonb_build_object('migrated', ${m.note}::text)
        FROM exec
       WHERE NOT ${m.keepWait} AND s."executionId" = exec.id AND s."stepId" = ${m.fromStepId}::uuid
         AND s.status IN (${stepStatuses(stepFrom('migrateExecution'))})
      RETURNING s.id
    )
    SELECT (SELECT version FROM exec) AS version`;
  const version = rows[0]?.version;
  if (version != null) return { won: true, version };
  return lost('migrateExecution', await readExecutionState(db, m.executionId));
}

