import { Prisma, savepoint, type DbTx, type RawDb } from '../../db';
import { stepFrom } from '../transitions';
import { readExecutionState, type ExecutionState } from './execution';
import {
  activeSiblingOf,
  executionMayMove,
  messageAwaitsOperator,
  moveTo,
  noLiveWorkerHoldsStep,
  stepRowMayMove,
  stepStatuses,
} from './fragments';
import { countMessages } from '../../metrics/counts';
import { lost, type Lost, type Won } from './result';
import { readMessageState, type MessageState, type MessageStatus } from './outbox';

// Operators' claims (server/repair): the same fences as workers', carrying the version
// the operator saw in the preview. A step a live worker holds (unexpired lease) is never
// taken from it. Their from-statuses come from the transitions table
// (server/engine/transitions.ts), which the repair planner reads too.

/** The unique index of I1: at most one active execution per (workflow, contact). */
export const ACTIVE_EXECUTION_INDEX = 'WorkflowExecution_active_workflowId_contactId_key';

/** A repair refused because it would make a second active execution of a (workflow, contact) (I1). */
export interface ActiveExecutionLoss {
  won: false;
  reason: 'ACTIVE_EXECUTION';
  /** The execution that is active. */
  executionId: string;
  current: ExecutionState | null;
}

export type OperatorClaimResult = Won<{ version: number }> | Lost<ExecutionState | null> | ActiveExecutionLoss;

/** Is this error the I1 index refusing a second active execution (unique_violation)? */
export function isActiveExecutionViolation(error: unknown): boolean {
  // node-postgres's own error (the engine's prepared statements, server/db/prepared.ts, preparedRaw)
  const direct = error as { code?: unknown; constraint?: unknown } | null;
  if (direct?.code === '23505' && typeof direct.constraint === 'string') return direct.constraint === ACTIVE_EXECUTION_INDEX;
  const cause = (error as { meta?: { driverAdapterError?: { cause?: { originalCode?: string; constraint?: { index?: string } } } } } | null)
    ?.meta?.driverAdapterError?.cause;
  if (cause?.originalCode !== '23505') return false;
  return cause.constraint?.index === ACTIVE_EXECUTION_INDEX || String((error as Error).message).includes(ACTIVE_EXECUTION_INDEX);
}

/**
 * Run a claim's one statement so that I1 refusing it is a value, not an exception: the
 * statement checks for an active sibling itself, but one enrolled concurrently (its
 * insert not yet committed) is only seen by the unique index. The statement runs in its
 * own savepoint (a nested transaction; inside no transaction, a transaction of its own),
 * which alone rolls back, so the caller's transaction can still record the loss.
 */
async function unlessActiveExecution<T>(db: DbTx, statement: (db: DbTx) => Promise<T>): Promise<{ refused: false; value: T } | { refused: true }> {
  try {
    return { refused: false, value: await savepoint(db, statement) };
  } catch (error) {
    if (isActiveExecutionViolation(error)) return { refused: true };
    throw error;
  }
}

/** The active execution of this execution's (workflow, contact), other than itself. */
export async function readActiveSibling(db: RawDb, executionId: string): Promise<string | null> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    -- readActiveSibling
    SELECT x.id FROM "WorkflowExecution" e
      JOIN LATERAL (${activeSiblingOf(Prisma.sql`e`)} LIMIT 1) x ON true
     WHERE e.id = ${executionId}::uuid`;
  return rows[0]?.id ?? null;
}

/**
 * The answer of an operator claim that may make an execution active again (retryStep,
 * skipStep), run by unlessActiveExecution: won, with the new version; or lost, to the
 * active execution its statement saw or the unique index refused it for (I1), or to
 * whoever moved the execution.
 */
async function reactivationAnswer(
  db: RawDb,
  claim: 'retryStep' | 'skipStep',
  executionId: string,
  claimed: { refused: false; value: { version: number | null; sibling: string | null }[] } | { refused: true },
): Promise<OperatorClaimResult> {
  const row = claimed.refused ? null : claimed.value[0];
  if (row?.version != null) return { won: true, version: row.version };
  const activeExecutionId = claimed.refused ? await readActiveSibling(db, executionId) : (row?.sibling ?? null);
  const current = await readExecutionState(db, executionId);
  const answer = lost(claim, current);
  return activeExecutionId ? { ...answer, reason: 'ACTIVE_EXECUTION', executionId: activeExecutionId } : answer;
}

/**
 * I6, I8: cancel an active or failed execution, fenced by the version the operator saw.
 * Its current step row, if still open, becomes SKIPPED in the same statement, so a wait
 * cannot be resolved afterwards and a worker's completion of it loses.
 */
export async function cancelExecution(
  db: RawDb,
  opts: { executionId: string; expectedVersion: number; reason: string },
): Promise<Won<{ version: number }> | Lost<ExecutionState | null>> {
  const rows = await db.$queryRaw<{ version: number }[]>`
    -- cancelExecution
    WITH exec AS (
      UPDATE "WorkflowExecution" e
         SET version = e.version + 1, status = 'CANCELLED', "readyAt" = NULL, "finishedAt" = now(),
             "exitReason" = ${opts.reason}, "updatedAt" = now()
       WHERE e.id = ${opts.executionId}::uuid AND e.version = ${opts.expectedVersion}
         AND ${executionMayMove('cancelExecution')}
      RETURNING e.id, e.version, e."currentStepId"
    ), step AS (
      UPDATE "StepExecution" s
         SET status = 'SKIPPED', "finishedAt" = now(), "leaseExpiresAt" = NULL,
             error = COALESCE(s.error, 'cancelled by an operator')
        FROM exec
       WHERE s."executionId" = exec.id AND s."stepId" = exec."currentStepId"
         AND s.status IN (${stepStatuses(stepFrom('cancelExecution'))})
      RETURNING s.id
    )
    SELECT exec.version FROM exec`;
  if (rows[0]) return { won: true, version: rows[0].version };
  return lost('cancelExecution', await readExecutionState(db, opts.executionId));
}

/**
 * I1, I5, I6: give the current step a new attempt: a FAILED execution, or a RUNNING one
 * whose step no live worker holds (lease expired, or never claimed), becomes due now.
 * The step row goes back to PENDING, so the next claim is attempt + 1; a SEND_EMAIL
 * step whose message exists does not send again (the message is unique per step
 * execution). A FAILED execution whose (workflow, contact) has since got another active
 * execution stays FAILED: the claim answers ACTIVE_EXECUTION naming it (I1), whether it
 * sees that execution or the unique index does.
 */
export async function retryStep(
  db: DbTx,
  opts: { executionId: string; expectedVersion: number },
): Promise<OperatorClaimResult> {
  const claimed = await unlessActiveExecution(db, (inner) => inner.$queryRaw<{ version: number | null; sibling: string | null }[]>`
    -- retryStep
    WITH target AS (
      SELECT (${activeSiblingOf(Prisma.sql`x`)} LIMIT 1) AS sibling
        FROM "WorkflowExecution" x WHERE x.id = ${opts.executionId}::uuid
    ), exec AS (
      UPDATE "WorkflowExecution" e
         SET version = e.version + 1, status = 'RUNNING', "readyAt" = now(), "finishedAt" = NULL,
             "lastError" = NULL, "updatedAt" = now()
       WHERE e.id = ${opts.executionId}::uuid AND e.version = ${opts.expectedVersion}
         AND ${executionMayMove('retryStep')}
         AND ${stepRowMayMove('retryStep')}
         AND ${noLiveWorkerHoldsStep}
         AND NOT EXISTS (${activeSiblingOf(Prisma.sql`e`)})
      RETURNING e.id, e.version, e."currentStepId"
    ), step AS (
      UPDATE "StepExecution" s
         SET status = 'PENDING', "claimToken" = NULL, "leaseExpiresAt" = NULL, "finishedAt" = NULL
        FROM exec
       WHERE s."executionId" = exec.id AND s."stepId" = exec."currentStepId"
         AND s.status IN (${stepStatuses(stepFrom('retryStep'))})
      RETURNING s.id
    )
    SELECT (SELECT version FROM exec) AS version, (SELECT sibling FROM target) AS sibling`);
  return reactivationAnswer(db, 'retryStep', opts.executionId, claimed);
}

/**
 * I1, I6: skip the current step: record it SKIPPED (creating its row if it never ran)
 * and move the execution along its plain next transition. Allowed on a FAILED
 * execution, a RUNNING one whose step no live worker holds, or one WAITING on an
 * unresolved DELAY. Moving a FAILED execution on (to RUNNING) while its (workflow,
 * contact) has another active execution answers ACTIVE_EXECUTION naming it (I1).
 */
export async function skipStep(
  db: DbTx,
  opts: {
    executionId: string;
    expectedVersion: number;
    stepId: string;
    nextStepId: string;
    status: 'RUNNING' | 'COMPLETED';
    note: string;
  },
): Promise<OperatorClaimResult> {
  const claimed = await unlessActiveExecution(db, (inner) => inner.$queryRaw<{ version: number | null; sibling: string | null }[]>`
    -- skipStep
    WITH target AS (
      SELECT (${activeSiblingOf(Prisma.sql`x`)} LIMIT 1) AS sibling
        FROM "WorkflowExecution" x WHERE x.id = ${opts.executionId}::uuid AND ${opts.status}::text = 'RUNNING'
    ), exec AS (
      UPDATE "WorkflowExecution" e
         SET version = e.version + 1, ${moveTo(opts.status, opts.nextStepId)},
             "lastError" = NULL, "updatedAt" = now()
       WHERE e.id = ${opts.executionId}::uuid AND e.version = ${opts.expectedVersion}
         AND e."currentStepId" = ${opts.stepId}::uuid
         AND ${executionMayMove('skipStep')}
         AND ${stepRowMayMove('skipStep')}
         AND (e.status <> 'WAITING' OR EXISTS (
               SELECT 1 FROM "StepExecution" w JOIN "WorkflowStep" ws ON ws.id = w."stepId"
                WHERE w."executionId" = e.id AND w."stepId" = e."currentStepId"
                  AND ws.type = 'DELAY' AND w.status = 'WAITING' AND w."resolvedBy" IS NULL))
         AND ${noLiveWorkerHoldsStep}
         AND (${opts.status}::text <> 'RUNNING' OR NOT EXISTS (${activeSiblingOf(Prisma.sql`e`)}))
      RETURNING e.id, e.version
    ), step AS (
      INSERT INTO "StepExecution" AS s (id, "executionId", "stepId", status, attempt, output, "startedAt", "finishedAt")
      SELECT gen_random_uuid(), exec.id, ${opts.stepId}::uuid, 'SKIPPED', 1,
             jsonb_build_object('skipped', ${opts.note}::text), now(), now()
        FROM exec
      ON CONFLICT ("executionId", "stepId") DO UPDATE
         SET status = 'SKIPPED', "finishedAt" = now(), "leaseExpiresAt" = NULL, "claimToken" = NULL,
             output = COALESCE(s.output, '{}'::jsonb) || jsonb_build_object('skipped', ${opts.note}::text)
      RETURNING s.id
    )
    SELECT (SELECT version FROM exec) AS version, (SELECT sibling FROM target) AS sibling`);
  return reactivationAnswer(db, 'skipStep', opts.executionId, claimed);
}

/**
 * I7: send a dead-lettered or stuck-pending event round again: due now, lease freed,
 * fenced by the attempt count the operator saw (an event's version).
 */
export async function redriveEvent(
  db: RawDb,
  opts: { eventId: string; expectedAttempts: number },
): Promise<boolean> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    -- redriveEvent
    UPDATE "Event"
       SET "deadAt" = NULL, "nextDispatchAt" = now(), "leaseOwner" = NULL, "leaseExpiresAt" = NULL
     WHERE id = ${opts.eventId}::uuid AND "processedAt" IS NULL AND "dispatchAttempts" = ${opts.expectedAttempts}
       AND ("leaseExpiresAt" IS NULL OR "leaseExpiresAt" < now())
    RETURNING id`;
  return rows.length > 0;
}

// ---------------------------------------------------------------------------
// Messages: an email whose fate is for an operator to decide (fragments.ts, messageAwaitsOperator)

export type MessageClaimResult = Won<{ version: number; status: MessageStatus }> | Lost<MessageState | null>;

/**
 * I5, I6: an operator who checked the provider records an unconfirmed or failed email as
 * SENT, without sending it again; fenced by the message version the operator saw.
 */
export async function markMessageSent(
  db: RawDb,
  opts: { messageId: string; expectedVersion: number; providerId?: string | null },
): Promise<MessageClaimResult> {
  const rows = await db.$queryRaw<{ version: number; status: MessageStatus }[]>`
    -- markMessageSent
    UPDATE "Message" m
       SET status = 'SENT', version = m.version + 1, "sentAt" = COALESCE(m."sentAt", now()),
           "providerId" = COALESCE(${opts.providerId ?? null}, m."providerId"),
           "leaseOwner" = NULL, "leaseExpiresAt" = NULL
     WHERE m.id = ${opts.messageId}::uuid AND m.version = ${opts.expectedVersion} AND ${messageAwaitsOperator}
    RETURNING m.version, m.status::text AS status`;
  if (rows[0]) {
    countMessages('marked_sent');
    return { won: true, ...rows[0] };
  }
  return lost('markMessageSent', await readMessageState(db, opts.messageId));
}

/**
 * I5, I6: an operator resends an unconfirmed or failed email: it goes back to QUEUED (the
 * same row, still one per step execution) and a sender delivers it once more. Fenced by
 * the version the operator saw, so two operators cannot both resend it.
 */
export async function requeueMessage(
  db: RawDb,
  opts: { messageId: string; expectedVersion: number },
): Promise<MessageClaimResult> {
  const rows = await db.$queryRaw<{ version: number; status: MessageStatus }[]>`
    -- requeueMessage
    UPDATE "Message" m
       SET status = 'QUEUED', version = m.version + 1, "leaseOwner" = NULL, "leaseExpiresAt" = NULL,
           "providerId" = NULL, error = NULL, "sentAt" = NULL
     WHERE m.id = ${opts.messageId}::uuid AND m.version = ${opts.expectedVersion} AND ${messageAwaitsOperator}
    RETURNING m.version, m.status::text AS status`;
  if (rows[0]) {
    countMessages('requeued');
    return { won: true, ...rows[0] };
  }
  return lost('requeueMessage', await readMessageState(db, opts.messageId));
}

/**
 * I5, I6: an operator gives up on an unconfirmed or failed email: ABANDONED, never sent
 * again and no longer listed as stuck. Fenced by the version the operator saw.
 */
export async function abandonMessage(
  db: RawDb,
  opts: { messageId: string; expectedVersion: number },
): Promise<MessageClaimResult> {
  const rows = await db.$queryRaw<{ version: number; status: MessageStatus }[]>`
    -- abandonMessage
    UPDATE "Message" m
       SET status = 'ABANDONED', version = m.version + 1, "leaseOwner" = NULL, "leaseExpiresAt" = NULL
     WHERE m.id = ${opts.messageId}::uuid AND m.version = ${opts.expectedVersion} AND ${messageAwaitsOperator}
    RETURNING m.version, m.status::text AS status`;
  if (rows[0]) {
    countMessages('abandoned');
    return { won: true, ...rows[0] };
  }
  return lost('abandonMessage', await readMessageState(db, opts.messageId));
}

