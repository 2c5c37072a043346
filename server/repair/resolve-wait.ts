import type { Db, DbTx } from '../db';
import { writeAudit, type AuditOutcome } from '../engine/audit';
import { createEngineContext } from '../engine/context';
import { readEventContext } from '../engine/event-context';
import { resolveWait } from '../engine/runner';
import { notifyWorkers } from '../engine/wakeup';
import { inRepairTransaction } from './transaction';

// A person or a program resolving a wait by hand (waits.resolve): by EVENT with one of the
// contact's tracked events, or by TIMEOUT. It goes through the engine's one wait claim
// (I4), so it races events, the timer and operators fairly and resolves at most once. A
// TIMEOUT before the wait is due is someone forcing it: recorded as resolved by OPERATOR.
// Every attempt, won, lost or refused, is audited in its own transaction (I8); one the
// database was too busy to finish is rolled back and audited FAILED (server/repair/transaction.ts).

export interface WaitResolutionRequest {
  projectId: string;
  /** The audit log's actor: "user:<id>" or "apikey:<id>". */
  actor: string;
  stepExecutionId: string;
  outcome: 'EVENT' | 'TIMEOUT';
  eventId?: string | undefined;
  /** The execution's version the caller saw: a move since then makes this lose. */
  expectedVersion: number;
}

export type WaitResolution =
  | { kind: 'resolved'; executionId: string; branch: string | null }
  | { kind: 'not-found'; message: string }
  | { kind: 'refused'; reason: 'NOT_AN_EVENT_WAIT' | 'NOT_WAITING'; message: string; status?: string | null }
  | { kind: 'lost'; conflict: WaitConflict }
  /** The database was too busy to finish it: nothing changed (audited FAILED); retry. */
  | { kind: 'busy'; message: string };

export type WaitConflict =
  | { reason: 'WAIT_RESOLVED'; resolvedBy: string | null; at: Date | null }
  | { reason: 'STALE_VERSION'; currentVersion: number | null; status: string | null };

interface WaitRow {
  executionId: string;
  contactId: string;
  stepType: string;
  /** The wait's timeout has come: resolving it by TIMEOUT is the timer's own outcome. */
  due: boolean;
}

export async function resolveWaitByHand(db: Db, request: WaitResolutionRequest): Promise<WaitResolution> {
  const answer = await inRepairTransaction(
    db,
    (tx) => resolveIn(tx, request),
    () => ({
      projectId: request.projectId,
      actor: request.actor,
      action: 'waits.resolve',
      targetType: 'execution',
      targetId: request.stepExecutionId,
      before: { stepExecutionId: request.stepExecutionId, expectedVersion: request.expectedVersion, outcome: request.outcome },
    }),
  );
  if ('code' in answer) return { kind: 'busy', message: answer.message };
  if (answer.kind === 'resolved') await notifyWorkers(db).catch(() => {});
  return answer;
}

async function resolveIn(tx: DbTx, request: WaitResolutionRequest): Promise<WaitResolution> {
  const [wait] = await tx.$queryRaw<WaitRow[]>`
    SELECT s."executionId", e."contactId", ws.type::text AS "stepType", COALESCE(s."dueAt" <= now(), false) AS due
      FROM "StepExecution" s
      JOIN "WorkflowExecution" e ON e.id = s."executionId"
      JOIN "WorkflowStep" ws ON ws.id = s."stepId"
     WHERE s.id = ${request.stepExecutionId}::uuid AND e."projectId" = ${request.projectId}::uuid`;
  const record = (outcome: AuditOutcome, after: unknown) =>
    writeAudit(tx, {
      projectId: request.projectId,
      actor: request.actor,
      action: 'waits.resolve',
      targetType: 'execution',
      targetId: wait?.executionId ?? request.stepExecutionId,
      outcome,
      before: { stepExecutionId: request.stepExecutionId, expectedVersion: request.expectedVersion, outcome: request.outcome },
      after,
    });
  const refuse = async <R extends Exclude<WaitResolution, { kind: 'resolved' | 'lost' }>>(refusal: R): Promise<R> => {
    const { kind: _kind, ...audited } = refusal;
    await record('REJECTED', refusal.kind === 'not-found' ? { code: 'NOT_FOUND', ...audited } : { code: 'PRECONDITION_FAILED', ...audited });
    return refusal;
  };

  if (!wait) return refuse({ kind: 'not-found', message: 'No such step execution in this project.' });
  if (wait.stepType === 'DELAY' && request.outcome === 'EVENT') {
    return refuse({ kind: 'refused', reason: 'NOT_AN_EVENT_WAIT', message: 'A delay waits for time, not for an event: resolve it by TIMEOUT.' });
  }
  let contextPatch: Record<string, unknown> = {};
  if (request.eventId) {
    const patch = await readEventContext(tx, request.eventId, { projectId: request.projectId, contactId: wait.contactId });
    if (!patch) return refuse({ kind: 'not-found', message: "No such event of this execution's contact." });
    contextPatch = patch;
  }
  const resolvedBy = request.outcome === 'EVENT' ? 'EVENT' : wait.due ? 'TIMEOUT' : 'OPERATOR';
  const result = await resolveWait(createEngineContext(tx, { owner: request.actor }), {
    stepExecutionId: request.stepExecutionId,
    resolvedBy,
    branch: request.outcome,
    eventId: request.eventId ?? null,
    expectedVersion: request.expectedVersion,
    contextPatch,
  });
  if (result.resumed) {
    await record('APPLIED', { resolvedBy, branch: result.branch, version: result.version });
    return { kind: 'resolved', executionId: result.executionId, branch: result.branch };
  }
  if (result.reason === 'NOT_WAITING') {
    return refuse({ kind: 'refused', reason: 'NOT_WAITING', message: 'This step is not waiting.', status: result.state?.status ?? null });
  }
  const conflict: WaitConflict =
    result.reason === 'WAIT_RESOLVED'
      ? { reason: result.reason, resolvedBy: result.resolvedBy, at: result.at }
      : { reason: result.reason, currentVersion: result.currentVersion, status: result.status };
  await record('LOST', { conflict });
  return { kind: 'lost', conflict };
}
