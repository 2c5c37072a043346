import type { Db, DbTx } from '../db';
import { writeAudit, type AuditOutcome } from '../engine/audit';
import { createEngineContext } from '../engine/context';
import { lockEventChannel, readEventMisfit, readEventsResumingWait, type EventMisfit, type WaitResolver } from '../engine/claims';
import { eventContextPatch, readEventContext } from '../engine/event-context';
import { resolveWait } from '../engine/runner';
import { notifyWorkers } from '../engine/wakeup';
import { inRepairTransaction } from './transaction';

// A person or a program resolving a wait by hand (waits.resolve): by EVENT with one of the
// contact's tracked events, or by TIMEOUT. It goes through the engine's one wait claim
// (I4), so it races events, the timer and operators fairly and resolves at most once.
// Event time decides (docs/event-time.md) here as everywhere: an EVENT counts as the
// event's only with an event the wait would take (its name, accepted inside
// [startedAt, dueAt), not consumed: eventResumesWait); any other EVENT is someone forcing
// the branch, recorded as resolved by OPERATOR without the event's data. A TIMEOUT
// follows the timer's rule: an event accepted inside the window resumes the wait by EVENT
// instead, unless the caller says ignoreInWindowEvents; a TIMEOUT before the wait is due
// is someone forcing it (OPERATOR). Every attempt, won, lost or refused, is audited in its
// own transaction (I8); one the database was too busy to finish is rolled back and
// audited FAILED (server/repair/transaction.ts).

export interface WaitResolutionRequest {
  projectId: string;
  /** The audit log's actor: "user:<id>" or "apikey:<id>". */
  actor: string;
  stepExecutionId: string;
  outcome: 'EVENT' | 'TIMEOUT';
  eventId?: string | undefined;
  /** TIMEOUT: time out even though an event accepted inside the window would resume the wait. */
  ignoreInWindowEvents?: boolean | undefined;
  /** The execution's version the caller saw: a move since then makes this lose. */
  expectedVersion: number;
}

/** An event named with outcome EVENT that the wait would not take, and why (the resolution is then OPERATOR's). */
export interface EventNotTaken {
  eventId: string;
  why: EventMisfit;
}

export type WaitResolution =
  | { kind: 'resolved'; executionId: string; branch: string | null; resolvedBy: WaitResolver; eventId: string | null; eventNotTaken: EventNotTaken | null }
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
  eventName: string | null;
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
      before: beforeOf(request),
    }),
  );
  if ('code' in answer) return { kind: 'busy', message: answer.message };
  if (answer.kind === 'resolved') await notifyWorkers(db).catch(() => {});
  return answer;
}

function beforeOf(request: WaitResolutionRequest) {
  return {
    stepExecutionId: request.stepExecutionId,
    expectedVersion: request.expectedVersion,
    outcome: request.outcome,
    ...(request.eventId ? { eventId: request.eventId } : {}),
    ...(request.ignoreInWindowEvents !== undefined ? { ignoreInWindowEvents: request.ignoreInWindowEvents } : {}),
  };
}

async function resolveIn(tx: DbTx, request: WaitResolutionRequest): Promise<WaitResolution> {
  const [wait] = await tx.$queryRaw<WaitRow[]>`
    -- resolveWaitByHand
    SELECT s."executionId", e."contactId", ws.type::text AS "stepType", ws.config->>'eventName' AS "eventName",
           COALESCE(s."dueAt" <= now(), false) AS due
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
      before: beforeOf(request),
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
  let resolvedBy: WaitResolver = request.outcome === 'TIMEOUT' && wait.due ? 'TIMEOUT' : 'OPERATOR';
  let branch: 'EVENT' | 'TIMEOUT' = request.outcome;
  let eventId: string | null = null;
  let eventNotTaken: EventNotTaken | null = null;
  if (request.eventId) {
    const patch = await readEventContext(tx, request.eventId, { projectId: request.projectId, contactId: wait.contactId });
    if (!patch) return refuse({ kind: 'not-found', message: "No such event of this execution's contact." });
    const why = await readEventMisfit(tx, { stepExecutionId: request.stepExecutionId, eventId: request.eventId });
    if (why === null) {
      resolvedBy = 'EVENT';
      eventId = request.eventId;
      contextPatch = patch;
    } else {
      eventNotTaken = { eventId: request.eventId, why };
    }
  } else if (request.outcome === 'TIMEOUT' && wait.stepType === 'WAIT_FOR_EVENT' && wait.eventName !== null && !request.ignoreInWindowEvents) {
    // The timer's rule, under the event channel's lock (no event accepted before the look-back is missed).
    await lockEventChannel(tx, { contactId: wait.contactId, eventName: wait.eventName });
    const [event] = await readEventsResumingWait(tx, { stepExecutionId: request.stepExecutionId, limit: 1 });
    if (event) {
      resolvedBy = 'EVENT';
      branch = 'EVENT';
      eventId = event.id;
      contextPatch = eventContextPatch(event);
    }
  }
  const result = await resolveWait(createEngineContext(tx, { owner: request.actor }), {
    stepExecutionId: request.stepExecutionId,
    resolvedBy,
    branch,
    eventId,
    expectedVersion: request.expectedVersion,
    contextPatch,
  });
  if (result.resumed) {
    await record('APPLIED', { resolvedBy, branch: result.branch, eventId, ...(eventNotTaken ? { eventNotTaken } : {}), version: result.version });
    return { kind: 'resolved', executionId: result.executionId, branch: result.branch, resolvedBy, eventId, eventNotTaken };
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
