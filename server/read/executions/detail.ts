import { type DbTx } from '../../db';
import { DEFAULT_ENGINE_CONFIG } from '../../engine/context';
import type { StuckItem, StuckScope } from '../../stuck/predicates';
import { actorLabels } from '../actors';
import { stuckOfExecutionsQuery, type ExecutionListItem } from './list';


// ---------------------------------------------------------------------------
// One execution's story

export interface StepExecutionRow {
  id: string;
  stepId: string;
  stepKey: string;
  stepName: string;
  stepType: string;
  /** The step's configuration (a wait's event name and timeout, a delay's seconds). */
  stepConfig: unknown;
  status: string;
  attempt: number;
  /** True while a worker holds the step (a claim token is set). */
  held: boolean;
  dueAt: Date | null;
  leaseExpiresAt: Date | null;
  /** The worker that holds (or last held) the step's lease, e.g. `worker:host:pid`. */
  leaseOwner: string | null;
  resolvedBy: string | null;
  resolvedAt: Date | null;
  resolvedBranch: string | null;
  resumeEventId: string | null;
  output: unknown;
  error: string | null;
  startedAt: Date;
  finishedAt: Date | null;
}

/** What happens next to an execution, as the engine will do it with nobody's help. */
export type NextUp =
  | { kind: 'timer'; at: Date; stepName: string; stepType: string }
  | { kind: 'lease'; until: Date; stepName: string; attempt: number; maxAttempts: number; owner: string | null }
  | { kind: 'worker'; at: Date | null; stepName: string | null }
  | { kind: 'continuation'; since: Date | null; stepName: string }
  | { kind: 'operator'; why: string }
  | { kind: 'done'; status: string; at: Date | null; exitReason: string | null };

function nextUp(
  e: { status: string; readyAt: Date | null; finishedAt: Date | null; exitReason: string | null; currentStepId: string | null; stepName: string | null },
  steps: StepExecutionRow[],
): NextUp {
  const current = steps.find((s) => s.stepId === e.currentStepId);
  switch (e.status) {
    case 'WAITING':
      if (current?.status === 'WAITING' && current.resolvedBy) {
        return { kind: 'continuation', since: current.resolvedAt, stepName: current.stepName };
      }
      if (current?.status === 'WAITING' && current.dueAt) {
        return { kind: 'timer', at: current.dueAt, stepName: current.stepName, stepType: current.stepType };
      }
      return { kind: 'operator', why: 'waiting without a wait step in place' };
    case 'RUNNING':
      if (current?.status === 'RUNNING' && current.leaseExpiresAt) {
        // Workers re-claim an expired lease until the step has had its attempts (a poison step is left to an operator).
        return { kind: 'lease', until: current.leaseExpiresAt, stepName: current.stepName, attempt: current.attempt, maxAttempts: DEFAULT_ENGINE_CONFIG.maxStepAttempts, owner: current.leaseOwner };
      }
      return { kind: 'worker', at: e.readyAt, stepName: e.stepName };
    case 'FAILED':
      return { kind: 'operator', why: 'failed: a worker never retries it by itself once its attempts are spent' };
    default:
      return { kind: 'done', status: e.status, at: e.finishedAt, exitReason: e.exitReason };
  }
}

export async function executionDetail(db: DbTx, s: StuckScope, id: string) {
  const projectId = s.projectId;
  const [execution] = await db.$queryRaw<
    (ExecutionListItem & { context: unknown; sourceEventId: string | null; readyAt: Date | null; enrollOnce: boolean })[]
  >`
    -- executionDetail
    SELECT e.id, e."workflowId", w.name AS "workflowName", e."contactId", c.email AS "contactEmail",
           e.status::text AS status, e.version, v.number AS "workflowVersion", w."latestVersion", e."currentStepId",
           ws.key AS "stepKey", ws.name AS "stepName", ws.type::text AS "stepType",
           e."startedAt", e."updatedAt", e."finishedAt", e."exitReason", e."lastError", e.context, e."sourceEventId",
           e."readyAt", e."enrollOnce"
      FROM "WorkflowExecution" e
      JOIN "Workflow" w ON w.id = e."workflowId"
      JOIN "WorkflowVersion" v ON v.id = e."workflowVersionId"
      JOIN "Contact" c ON c.id = e."contactId"
      LEFT JOIN "WorkflowStep" ws ON ws.id = e."currentStepId"
     WHERE e.id = ${id}::uuid AND e."projectId" = ${projectId}::uuid`;
  if (!execution) return null;

  const [steps, messages, audit, stuck] = await Promise.all([
    db.$queryRaw<StepExecutionRow[]>`
      -- executionDetail.steps
      SELECT s.id, s."stepId", ws.key AS "stepKey", ws.name AS "stepName", ws.type::text AS "stepType", ws.config AS "stepConfig",
             s.status::text AS status, s.attempt, s."claimToken" IS NOT NULL AS held, s."dueAt", s."leaseExpiresAt", s."leaseOwner",
             s."resolvedBy"::text AS "resolvedBy", s."resolvedAt", s."resolvedBranch", s."resumeEventId",
             s.output, s.error, s."startedAt", s."finishedAt"
        FROM "StepExecution" s
        JOIN "WorkflowStep" ws ON ws.id = s."stepId"
       WHERE s."executionId" = ${execution.id}::uuid
       ORDER BY s."startedAt", s.id`,
    db.message.findMany({
      where: { executionId: execution.id, projectId },
      orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
      select: {
        id: true,
        stepExecutionId: true,
        to: true,
        subject: true,
        body: true,
        status: true,
        version: true,
        providerId: true,
        error: true,
        leaseExpiresAt: true,
        createdAt: true,
        sentAt: true,
      },
    }),
    db.auditEntry.findMany({
      where: { projectId, targetId: execution.id },
      orderBy: [{ at: 'desc' }, { id: 'desc' }],
      take: 100,
    }),
    db.$queryRaw<StuckItem[]>`-- executionDetail.stuck
      SELECT * FROM (${stuckOfExecutionsQuery(s, [execution])}) x`,
  ]);

  const resumers = steps.map((st) => st.resumeEventId).filter((v): v is string => v !== null);
  const eventIds = [...new Set([...(execution.sourceEventId ? [execution.sourceEventId] : []), ...resumers])];
  const [events, labels] = await Promise.all([
    eventIds.length
      ? db.event.findMany({
          where: { projectId, id: { in: eventIds } },
          orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
          select: {
            id: true,
            name: true,
            data: true,
            idempotencyKey: true,
            createdAt: true,
            processedAt: true,
            deadAt: true,
            dispatchAttempts: true,
            nextDispatchAt: true,
            lastError: true,
          },
        })
      : Promise.resolve([]),
    actorLabels(db, projectId, audit.map((a) => a.actor)),
  ]);

  // Who enrolled it: the event it was started by, else the person or key whose
  // enrollments.enroll call created it (its audit entry), else the engine itself.
  const enrollEntry = audit.find((a) => a.action === 'enrollments.enroll' && a.outcome === 'APPLIED');
  const sourceEvent = events.find((ev) => ev.id === execution.sourceEventId);
  const enrolledBy = sourceEvent
    ? { kind: 'event' as const, eventId: sourceEvent.id, eventName: sourceEvent.name, at: sourceEvent.createdAt }
    : enrollEntry
      ? { kind: 'actor' as const, actor: enrollEntry.actor, actorLabel: labels.get(enrollEntry.actor) ?? null, at: enrollEntry.at }
      : { kind: 'engine' as const };

  return {
    ...execution,
    enrolledBy,
    steps,
    messages,
    events: events.map((ev) => ({
      ...ev,
      role: ev.id === execution.sourceEventId ? ('source' as const) : ('resumed' as const),
      stepExecutionIds: steps.filter((st) => st.resumeEventId === ev.id).map((st) => st.id),
    })),
    audit: audit.map((a) => ({ ...a, actorLabel: labels.get(a.actor) ?? null })),
    stuck,
    /** How long a state may last before it counts as stuck (STUCK_GRACE_SECONDS). */
    graceSeconds: s.graceSeconds,
    next: nextUp(execution, steps),
  };
}
