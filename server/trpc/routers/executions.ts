import { TRPCError } from '@trpc/server';
import { Prisma } from '../../db';
import { countStuck, stuckExecutionFilter, stuckReasonsOf, type StuckReason } from '../../repair/stuck';
import { id as idSchema, likePrefix } from '../inputs';
import { page, type KeysetPosition } from '../keyset';
import { requireWorkflow, stuckScope } from '../scope';
import { router, viewerProcedure } from '../trpc';
import { EXECUTION_STATUSES, executionStatsInput, getExecutionInput, listExecutionsInput } from './executions.schema';

export interface ExecutionListItem {
  id: string;
  workflowId: string;
  workflowName: string;
  contactId: string;
  contactEmail: string;
  status: string;
  version: number;
  currentStepId: string | null;
  stepKey: string | null;
  stepName: string | null;
  stepType: string | null;
  startedAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
  exitReason: string | null;
  lastError: string | null;
}

export interface ExecutionFilter {
  projectId: string;
  workflowId?: string | undefined;
  status?: string[] | undefined;
  stuck?: StuckReason[] | undefined;
  contact: { id: string } | { emailPrefix: string } | null;
  since?: Date | undefined;
  until?: Date | undefined;
  cursor?: KeysetPosition | undefined;
  limit: number;
}

/**
 * executions.list as one SQL statement: newest first on (startedAt, id), which the
 * (projectId | projectId, status | workflowId; startedAt DESC, id DESC) indexes serve in
 * order, so a page stops after LIMIT rows; stuck reasons are the predicates of
 * server/repair/stuck.ts. Fetches limit + 1 rows to know whether a next page exists.
 */
export function executionListQuery(f: ExecutionFilter): Prisma.Sql {
  const conditions: Prisma.Sql[] = [Prisma.sql`e."projectId" = ${f.projectId}::uuid`];
  if (f.workflowId) conditions.push(Prisma.sql`e."workflowId" = ${f.workflowId}::uuid`);
  if (f.status?.length) conditions.push(Prisma.sql`e.status = ANY(${f.status}::"ExecutionStatus"[])`);
  if (f.contact && 'id' in f.contact) conditions.push(Prisma.sql`e."contactId" = ${f.contact.id}::uuid`);
  if (f.contact && 'emailPrefix' in f.contact) {
    conditions.push(Prisma.sql`lower(c.email) LIKE ${likePrefix(f.contact.emailPrefix.toLowerCase())} ESCAPE '\\'`);
  }
  if (f.since) conditions.push(Prisma.sql`e."startedAt" >= ${f.since}::timestamptz`);
  if (f.until) conditions.push(Prisma.sql`e."startedAt" < ${f.until}::timestamptz`);
  if (f.stuck?.length) conditions.push(stuckExecutionFilter(f.stuck, stuckScope(f.projectId, f.workflowId)));
  if (f.cursor) conditions.push(Prisma.sql`(e."startedAt", e.id) < (${f.cursor.at}::timestamptz, ${f.cursor.id}::uuid)`);
  return Prisma.sql`
    SELECT e.id, e."workflowId", w.name AS "workflowName", e."contactId", c.email AS "contactEmail",
           e.status::text AS status, e.version, e."currentStepId",
           ws.key AS "stepKey", ws.name AS "stepName", ws.type::text AS "stepType",
           e."startedAt", e."updatedAt", e."finishedAt", e."exitReason", e."lastError"
      FROM "WorkflowExecution" e
      JOIN "Workflow" w ON w.id = e."workflowId"
      JOIN "Contact" c ON c.id = e."contactId"
      LEFT JOIN "WorkflowStep" ws ON ws.id = e."currentStepId"
     WHERE ${Prisma.join(conditions, ' AND ')}
     ORDER BY e."startedAt" DESC, e.id DESC
     LIMIT ${f.limit + 1}::int`;
}

export const executionsRouter = router({
  /**
   * Executions newest first, keyset-paginated on (startedAt, id), filtered in one SQL
   * query: the project (or workflow) index gives the order, the stuck predicates are the
   * same SQL as repair.stuck's.
   */
  list: viewerProcedure.input(listExecutionsInput).query(async ({ ctx, input }) => {
    const projectId = ctx.actor.projectId;
    await requireWorkflow(ctx.db, projectId, input.workflowId);
    let contact: ExecutionFilter['contact'] = null;
    if (input.contact && idSchema.safeParse(input.contact).success) {
      const found = await ctx.db.contact.findFirst({ where: { id: input.contact, projectId }, select: { id: true } });
      if (!found) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such contact in this project.' });
      contact = { id: found.id };
    } else if (input.contact) {
      contact = { emailPrefix: input.contact };
    }
    const rows = await ctx.db.$queryRaw<ExecutionListItem[]>(executionListQuery({ ...input, projectId, contact }));
    return page(rows, input.limit, (e) => ({ at: e.startedAt, id: e.id }));
  }),

  /**
   * One execution and its story: the step timeline (attempts, who resolved each wait,
   * when it was due, errors, outputs), its messages, the events that started and resumed
   * it, the audit entries about it, and why it is stuck right now, if it is.
   */
  get: viewerProcedure.input(getExecutionInput).query(async ({ ctx, input }) => {
    const projectId = ctx.actor.projectId;
    const [execution] = await ctx.db.$queryRaw<(ExecutionListItem & { context: unknown; sourceEventId: string | null })[]>`
      SELECT e.id, e."workflowId", w.name AS "workflowName", e."contactId", c.email AS "contactEmail",
             e.status::text AS status, e.version, e."currentStepId",
             ws.key AS "stepKey", ws.name AS "stepName", ws.type::text AS "stepType",
             e."startedAt", e."updatedAt", e."finishedAt", e."exitReason", e."lastError", e.context, e."sourceEventId"
        FROM "WorkflowExecution" e
        JOIN "Workflow" w ON w.id = e."workflowId"
        JOIN "Contact" c ON c.id = e."contactId"
        LEFT JOIN "WorkflowStep" ws ON ws.id = e."currentStepId"
       WHERE e.id = ${input.id}::uuid AND e."projectId" = ${projectId}::uuid`;
    if (!execution) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such execution in this project.' });

    const [steps, messages, audit, stuck] = await Promise.all([
      ctx.db.$queryRaw<
        {
          id: string;
          stepId: string;
          stepKey: string;
          stepName: string;
          stepType: string;
          status: string;
          attempt: number;
          dueAt: Date | null;
          leaseExpiresAt: Date | null;
          resolvedBy: string | null;
          resolvedAt: Date | null;
          resolvedBranch: string | null;
          resumeEventId: string | null;
          output: unknown;
          error: string | null;
          startedAt: Date;
          finishedAt: Date | null;
        }[]
      >`
        SELECT s.id, s."stepId", ws.key AS "stepKey", ws.name AS "stepName", ws.type::text AS "stepType",
               s.status::text AS status, s.attempt, s."dueAt", s."leaseExpiresAt",
               s."resolvedBy"::text AS "resolvedBy", s."resolvedAt", s."resolvedBranch", s."resumeEventId",
               s.output, s.error, s."startedAt", s."finishedAt"
          FROM "StepExecution" s
          JOIN "WorkflowStep" ws ON ws.id = s."stepId"
         WHERE s."executionId" = ${execution.id}::uuid
         ORDER BY s."startedAt", s.id`,
      ctx.db.message.findMany({
        where: { executionId: execution.id, projectId },
        orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
        select: {
          id: true,
          stepExecutionId: true,
          to: true,
          subject: true,
          body: true,
          status: true,
          providerId: true,
          error: true,
          createdAt: true,
          sentAt: true,
        },
      }),
      ctx.db.auditEntry.findMany({
        where: { projectId, targetId: execution.id },
        orderBy: [{ at: 'desc' }, { id: 'desc' }],
        take: 100,
      }),
      stuckReasonsOf(ctx.db, stuckScope(projectId), execution.id),
    ]);

    const resumers = steps.map((s) => s.resumeEventId).filter((v): v is string => v !== null);
    const eventIds = [...new Set([...(execution.sourceEventId ? [execution.sourceEventId] : []), ...resumers])];
    const events = eventIds.length
      ? await ctx.db.event.findMany({
          where: { projectId, id: { in: eventIds } },
          select: { id: true, name: true, data: true, idempotencyKey: true, createdAt: true, processedAt: true, deadAt: true },
        })
      : [];
    return {
      ...execution,
      steps,
      messages,
      events: events.map((e) => ({
        ...e,
        role: e.id === execution.sourceEventId ? ('source' as const) : ('resumed' as const),
        stepExecutionIds: steps.filter((s) => s.resumeEventId === e.id).map((s) => s.id),
      })),
      audit,
      stuck,
    };
  }),

  /** How many executions are in each status, and how many items are stuck for each reason. */
  stats: viewerProcedure.input(executionStatsInput).query(async ({ ctx, input }) => {
    const projectId = ctx.actor.projectId;
    await requireWorkflow(ctx.db, projectId, input.workflowId);
    const [groups, byStuckReason] = await Promise.all([
      ctx.db.workflowExecution.groupBy({
        by: ['status'],
        where: { projectId, ...(input.workflowId ? { workflowId: input.workflowId } : {}) },
        _count: { _all: true },
      }),
      countStuck(ctx.db, stuckScope(projectId, input.workflowId)),
    ]);
    const byStatus = Object.fromEntries(EXECUTION_STATUSES.map((s) => [s, 0])) as Record<(typeof EXECUTION_STATUSES)[number], number>;
    for (const g of groups) byStatus[g.status] = g._count._all;
    return { byStatus, byStuckReason, total: Object.values(byStatus).reduce((a, b) => a + b, 0) };
  }),
});
