import { Prisma, type DbTx } from '../db';
import { executionIsActive } from '../engine/claims/fragments';
import type { WorkflowGraph } from '../engine/workflow-graph';
import { readEventsResumingWait } from '../engine/claims';
import { loadVersionGraph, versionIdOf } from '../engine/graphs';
import type { RepairAction, RepairChoices } from './planner';
import type { EventSnapshot, ExecutionSnapshot, MigrationContext } from './snapshot';
import { stuckReasonsOf } from '../stuck/predicates';

// Loading a repair's target: the execution (with its current step, step row, message and
// stuck reasons) or the tracked event an operator acts on, as one snapshot the planner
// reads and the applier fences on.

/** How many in-window events a snapshot lists (the first is the one that resumes the wait). */
export const IN_WINDOW_EVENTS = 5;

export class RepairNotFound extends Error {
  override name = 'RepairNotFound';
}

export interface RepairRequest {
  projectId: string;
  action: RepairAction;
  executionId?: string | null;
  eventId?: string | null;
  /** What the operator chose beside the action (FORCE_TIMEOUT: ignoreInWindowEvents). */
  choices?: RepairChoices;
}

export interface RepairOptions {
  graceSeconds: number;
}

/**
 * The target a request names, and its workflow's graph for an execution; RepairNotFound
 * when it names none (or an event DELIVER_EVENT may not use).
 */
export async function loadTarget(
  db: DbTx,
  req: RepairRequest,
  opts: RepairOptions,
): Promise<{ target: ExecutionSnapshot | EventSnapshot; graph: WorkflowGraph | null }> {
  if (req.action === 'REDRIVE_EVENT') {
    if (!req.eventId) throw new RepairNotFound('REDRIVE_EVENT needs the eventId of a tracked event');
    const event = await loadEvent(db, req.projectId, req.eventId);
    if (!event) throw new RepairNotFound('event not found');
    return { target: event, graph: null };
  }
  if (!req.executionId) throw new RepairNotFound(`${req.action} needs an executionId`);
  const execution = await loadExecution(db, req.projectId, req.executionId, opts.graceSeconds);
  if (!execution) throw new RepairNotFound('execution not found');
  if (req.action === 'DELIVER_EVENT' && req.eventId) {
    // The event delivered must be one of this contact's, in this project: neither the
    // preview nor the action may reveal or use another's.
    const [event] = await db.$queryRaw<{ id: string }[]>`
      -- loadTarget.deliveredEvent
      SELECT id FROM "Event"
       WHERE id = ${req.eventId}::uuid AND "projectId" = ${req.projectId}::uuid AND "contactId" = ${execution.contactId}::uuid`;
    if (!event) throw new RepairNotFound('event not found for this contact');
  }
  if (req.action === 'MIGRATE') execution.migration = await loadMigration(db, execution, req.choices?.toVersion);
  return { target: execution, graph: await loadVersionGraph(db, execution.workflowVersionId) };
}

/** MIGRATE's context: the version to move to (default the latest) with its graph, the keys of emails already sent, the wait's start. */
export async function loadMigration(db: DbTx, execution: ExecutionSnapshot, toVersion: number | undefined): Promise<MigrationContext> {
  const versionId = await versionIdOf(db, execution.workflowId, toVersion);
  const [row] = await db.$queryRaw<{ sentKeys: string[]; waitStartedAt: Date | null }[]>`
    -- loadMigration
    SELECT ARRAY(SELECT DISTINCT ws.key FROM "Message" m
                   JOIN "StepExecution" s ON s.id = m."stepExecutionId"
                   JOIN "WorkflowStep" ws ON ws.id = s."stepId"
                  WHERE m."executionId" = ${execution.id}::uuid) AS "sentKeys",
           (SELECT s."startedAt" FROM "StepExecution" s WHERE s.id = ${execution.stepRow?.id ?? null}::uuid) AS "waitStartedAt"`;
  return {
    to: versionId ? await loadVersionGraph(db, versionId).then((graph) => ({ number: graph.versionNumber, graph })) : null,
    sentKeys: row?.sentKeys ?? [],
    waitStartedAt: row?.waitStartedAt ?? null,
  };
}

export async function loadExecution(
  db: DbTx,
  projectId: string,
  executionId: string,
  graceSeconds: number,
): Promise<ExecutionSnapshot | null> {
  const rows = await db.$queryRaw<
    (Omit<ExecutionSnapshot, 'kind' | 'step' | 'stepRow' | 'message' | 'stuck'> & {
      currentStepId: string | null;
      stepKey: string | null;
      stepName: string | null;
      stepType: string | null;
      rowId: string | null;
      rowStatus: string | null;
      attempt: number | null;
      leaseExpiresAt: Date | null;
      dueAt: Date | null;
      resolvedBy: string | null;
      resolvedAt: Date | null;
      resolvedBranch: string | null;
      rowError: string | null;
      messageId: string | null;
      messageStatus: string | null;
      messageSubject: string | null;
      messageSentAt: Date | null;
      messageCreatedAt: Date | null;
      activeExecutionId: string | null;
    })[]
  >`
    -- loadExecution
    SELECT e.id, e."projectId", e."workflowId", e."workflowVersionId", v.number AS "workflowVersionNumber", w.name AS "workflowName", e."contactId", c.email AS "contactEmail",
           e.status::text AS status, e.version, e."updatedAt", e."currentStepId",
           ws.key AS "stepKey", ws.name AS "stepName", ws.type::text AS "stepType",
           s.id AS "rowId", s.status::text AS "rowStatus", s.attempt, s."leaseExpiresAt", s."dueAt",
           s."resolvedBy"::text AS "resolvedBy", s."resolvedAt", s."resolvedBranch", s.error AS "rowError",
           m.id AS "messageId", m.status::text AS "messageStatus", m.subject AS "messageSubject",
           m."sentAt" AS "messageSentAt", m."createdAt" AS "messageCreatedAt",
           (SELECT o.id FROM "WorkflowExecution" o
             WHERE o."workflowId" = e."workflowId" AND o."contactId" = e."contactId" AND o.id <> e.id
               AND ${executionIsActive(Prisma.sql`o.status`)}
             LIMIT 1) AS "activeExecutionId"
      FROM "WorkflowExecution" e
      JOIN "Workflow" w ON w.id = e."workflowId"
      JOIN "WorkflowVersion" v ON v.id = e."workflowVersionId"
      JOIN "Contact" c ON c.id = e."contactId"
      LEFT JOIN "WorkflowStep" ws ON ws.id = e."currentStepId"
      LEFT JOIN "StepExecution" s ON s."executionId" = e.id AND s."stepId" = e."currentStepId"
      LEFT JOIN "Message" m ON m."stepExecutionId" = s.id
     WHERE e.id = ${executionId}::uuid AND e."projectId" = ${projectId}::uuid`;
  const row = rows[0];
  if (!row) return null;
  return {
    kind: 'execution',
    id: row.id,
    projectId: row.projectId,
    workflowId: row.workflowId,
    workflowVersionId: row.workflowVersionId,
    workflowVersionNumber: row.workflowVersionNumber,
    workflowName: row.workflowName,
    contactId: row.contactId,
    contactEmail: row.contactEmail,
    status: row.status,
    version: row.version,
    updatedAt: row.updatedAt,
    step: row.currentStepId ? { id: row.currentStepId, key: row.stepKey!, name: row.stepName!, type: row.stepType! } : null,
    stepRow: row.rowId
      ? {
          id: row.rowId,
          status: row.rowStatus!,
          attempt: row.attempt!,
          leaseExpiresAt: row.leaseExpiresAt,
          dueAt: row.dueAt,
          resolvedBy: row.resolvedBy,
          resolvedAt: row.resolvedAt,
          resolvedBranch: row.resolvedBranch,
          error: row.rowError,
        }
      : null,
    message: row.messageId
      ? { id: row.messageId, status: row.messageStatus!, subject: row.messageSubject!, sentAt: row.messageSentAt, createdAt: row.messageCreatedAt! }
      : null,
    stuck: await stuckReasonsOf(db, { projectId, graceSeconds }, executionId),
    inWindowEvents:
      row.stepType === 'WAIT_FOR_EVENT' && row.rowId && row.rowStatus === 'WAITING' && !row.resolvedBy
        ? (await readEventsResumingWait(db, { stepExecutionId: row.rowId, limit: IN_WINDOW_EVENTS })).map(({ id, name, createdAt }) => ({ id, name, createdAt }))
        : [],
    activeExecutionId: row.activeExecutionId,
  };
}

export async function loadEvent(db: DbTx, projectId: string, eventId: string): Promise<EventSnapshot | null> {
  const rows = await db.$queryRaw<Omit<EventSnapshot, 'kind'>[]>`
    -- loadEvent
    SELECT id, "projectId", name, "contactId", "dispatchAttempts" AS version, "processedAt", "deadAt", "lastError", "leaseExpiresAt"
      FROM "Event" WHERE id = ${eventId}::uuid AND "projectId" = ${projectId}::uuid`;
  return rows[0] ? { kind: 'event', ...rows[0] } : null;
}

