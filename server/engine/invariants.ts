import { Prisma, type RawDb } from '../db';
import { executionIsActive } from './claims/fragments';

// The invariants of docs/architecture.md ("Invariants"), each checked by one SQL query that counts
// violations (test/engine/invariants.test.ts: zero on a healthy run full of every state,
// and each one fires on a hand-made violation). Tests, the race suite, the bench, the fault drills and the console's health
// panel all call these: one concept, one home. Zero everywhere is the only healthy answer.

export type InvariantId = 'I1' | 'I2' | 'I3' | 'I4' | 'I5' | 'I6' | 'I7' | 'I8' | 'I9';

export interface InvariantCheck {
  id: InvariantId;
  title: string;
  /** What a violation is, in the words an operator would use. */
  violation: string;
  /**
   * The unique index that makes a violation impossible (docs/architecture.md, "Invariants": "a unique constraint").
   * While it is in place, valid and exactly this (columns, predicate), PostgreSQL itself
   * guarantees zero, so the check reads the catalog instead of grouping a table of
   * millions of rows; without it (dropped, being rebuilt, changed) the count is taken.
   */
  enforcedBy?: UniqueIndex;
  /** Violations in one project (its console's health panel), or in the whole deployment (null: tests, drills, the CLI). */
  count(db: RawDb, projectId: string | null): Promise<number>;
}

export interface UniqueIndex {
  table: string;
  index: string;
  columns: string[];
  /** The partial index's predicate as pg_get_expr prints it, or null for a whole-table index. */
  predicate: string | null;
}

export interface InvariantResult {
  id: InvariantId;
  title: string;
  violation: string;
  violations: number;
  /** The unique index whose presence proved zero without counting, or null when the rows were counted. */
  provenBy: string | null;
}

/**
 * Whether `u` is in place as a valid, immediately enforced unique index on exactly its
 * columns and predicate, with their types' default operator classes.
 */
export async function uniqueIndexInPlace(db: RawDb, u: UniqueIndex): Promise<boolean> {
  const quoted = (name: string) => `"${name.replace(/"/g, '""')}"`;
  const [row] = await db.$queryRaw<{ inPlace: boolean }[]>`
    -- uniqueIndexInPlace
    SELECT EXISTS (
      SELECT 1 FROM pg_index i
       WHERE i.indexrelid = to_regclass(${quoted(u.index)}) AND i.indrelid = to_regclass(${quoted(u.table)})
         AND i.indisunique AND i.indisvalid AND i.indisready AND i.indimmediate AND i.indexprs IS NULL
         -- uniqueness under each column type's own equality: an index whose operator class
         -- compares otherwise (test/race/index-controls.test.ts makes one that never says
         -- "equal") proves nothing
         AND NOT EXISTS (SELECT 1 FROM unnest(i.indclass::oid[]) k(opclass)
                           JOIN pg_opclass o ON o.oid = k.opclass WHERE NOT o.opcdefault)
         AND pg_get_expr(i.indpred, i.indrelid) IS NOT DISTINCT FROM ${u.predicate}::text
         AND array(SELECT a.attname::text
                     FROM unnest(i.indkey) WITH ORDINALITY k(attnum, n)
                     JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
                    ORDER BY k.n) = ${u.columns}::text[]) AS "inPlace"`;
  return row?.inPlace === true;
}

/** `AND <column> = projectId`, or nothing for the whole deployment. */
function inProject(column: Prisma.Sql, projectId: string | null): Prisma.Sql {
  return projectId ? Prisma.sql`AND ${column} = ${projectId}::uuid` : Prisma.empty;
}

async function scalar(rows: Promise<{ n: bigint | number }[]>): Promise<number> {
  const [row] = await rows;
  return Number(row?.n ?? 0);
}

/**
 * Audit entry `a` names step row `s` (of workflow step `ws`): by its step execution id
 * when the entry records one, else by the step's key (an execution has at most one row
 * per step, I2). Repairs record the step they acted on in `before` (actions.ts stateOf).
 */
function namesStep(s: Prisma.Sql, ws: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`(a.before->>'stepExecutionId' = ${s}.id::text
                     OR (a.before->>'stepExecutionId' IS NULL AND a.before->>'step' = ${ws}.key))`;
}

/**
 * The execution audit entry `a` is about, as a uuid for its primary key (null when the
 * target is not a uuid), so that a join from the audit log reaches it by its index. (Any
 * uuid target: retention, server/retention/batches.ts, keeps an entry whose execution,
 * email or event is still there.)
 */
export const auditedExecution = Prisma.sql`(CASE WHEN a."targetId" ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
                                          THEN a."targetId"::uuid END)`;

/** Audit entry `a` is a manual resolution of wait row `w`: a FORCE_TIMEOUT, a DELIVER_EVENT or a waits.resolve. */
function resolutionOf(w: Prisma.Sql, ws: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`((a.action IN ('repair.FORCE_TIMEOUT', 'repair.DELIVER_EVENT') AND ${namesStep(w, ws)})
                     OR (a.action = 'waits.resolve' AND a.before->>'stepExecutionId' = ${w}.id::text))`;
}

export const INVARIANTS: readonly InvariantCheck[] = [
  {
    id: 'I1',
    title: 'One active execution per workflow and contact',
    violation: '(workflow, contact) pairs with more than one RUNNING or WAITING execution',
    enforcedBy: {
      table: 'WorkflowExecution',
      index: 'WorkflowExecution_active_workflowId_contactId_key',
      columns: ['workflowId', 'contactId'],
      predicate: `(status = ANY (ARRAY['RUNNING'::"ExecutionStatus", 'WAITING'::"ExecutionStatus"]))`,
    },
    count: (db, p) =>
      scalar(db.$queryRaw`
        -- invariantViolations.I1
        SELECT count(*) AS n FROM (
          SELECT 1 FROM "WorkflowExecution"
           WHERE ${executionIsActive(Prisma.sql`status`)} ${inProject(Prisma.sql`"projectId"`, p)}
           GROUP BY "workflowId", "contactId" HAVING count(*) > 1) v`),
  },
  {
    id: 'I2',
    title: 'One step-execution row per execution and step',
    violation: '(execution, step) pairs with more than one step-execution row',
    enforcedBy: { table: 'StepExecution', index: 'StepExecution_executionId_stepId_key', columns: ['executionId', 'stepId'], predicate: null },
    count: (db, p) =>
      scalar(db.$queryRaw`
        -- invariantViolations.I2
        SELECT count(*) AS n FROM (
          SELECT 1 FROM "StepExecution" s JOIN "WorkflowExecution" e ON e.id = s."executionId"
           WHERE true ${inProject(Prisma.sql`e."projectId"`, p)}
           GROUP BY s."executionId", s."stepId" HAVING count(*) > 1) v`),
  },
  {
    id: 'I3',
    title: 'Enrollment idempotent per workflow and source event',
    violation: '(workflow, source event) pairs enrolled more than once',
    enforcedBy: {
      table: 'WorkflowExecution',
      index: 'WorkflowExecution_workflowId_sourceEventId_key',
      columns: ['workflowId', 'sourceEventId'],
      predicate: null,
    },
    count: (db, p) =>
      scalar(db.$queryRaw`
        -- invariantViolations.I3
        SELECT count(*) AS n FROM (
          SELECT 1 FROM "WorkflowExecution" WHERE "sourceEventId" IS NOT NULL ${inProject(Prisma.sql`"projectId"`, p)}
           GROUP BY "workflowId", "sourceEventId" HAVING count(*) > 1) v`),
  },
  {
    id: 'I4',
    title: 'A wait is resolved at most once, by exactly one resolver',
    violation:
      'waits resolved twice or inconsistently: completed with no resolver, a resolver that disagrees with its branch or event, ' +
      'a resolution rewritten after the wait completed, or more than one (or another party\'s) audited operator resolution',
    // Counted from what the step rows and the audit log record, never from the path the
    // execution took afterwards: two branches may legally merge (EVENT -> A and
    // TIMEOUT -> B -> A), so "both branch targets have step rows" proves nothing.
    //
    // Three parts, each read the cheap way round: the row's own columns in one pass over
    // the wait rows; the resuming event's contact by a join (not a lookup per row); the
    // audit log from its side, since manual resolutions are few and waits are many (a
    // correlated lookup of the audit log per wait row took 12 s at 1,000,000 executions).
    // A row broken in several ways counts once.
    count: (db, p) =>
      scalar(db.$queryRaw`
        -- invariantViolations.I4
        SELECT count(*) AS n FROM (
          SELECT w.id
            FROM "StepExecution" w
            JOIN "WorkflowStep" ws ON ws.id = w."stepId" AND ws.type IN ('WAIT_FOR_EVENT', 'DELAY')
            JOIN "WorkflowExecution" e ON e.id = w."executionId" ${inProject(Prisma.sql`e."projectId"`, p)}
            LEFT JOIN "Event" ev ON ev.id = w."resumeEventId" AND ev."contactId" = e."contactId"
           WHERE (w.status = 'COMPLETED' AND w."resolvedBy" IS NULL)
              -- half-written resolutions
              OR (w."resolvedBy" IS NULL AND (w."resolvedAt" IS NOT NULL OR w."resolvedBranch" IS NOT NULL OR w."resumeEventId" IS NOT NULL))
              OR (w."resolvedBy" IS NOT NULL AND w."resolvedAt" IS NULL)
              -- the resolver and the branch or event it recorded disagree
              OR (ws.type = 'DELAY' AND (w."resolvedBy" = 'EVENT' OR w."resolvedBranch" IS NOT NULL OR w."resumeEventId" IS NOT NULL))
              OR (ws.type = 'WAIT_FOR_EVENT' AND w."resolvedBy" IS NOT NULL AND (
                    w."resolvedBranch" IS NULL OR w."resolvedBranch" NOT IN ('EVENT', 'TIMEOUT')
                 OR (w."resolvedBy" = 'TIMEOUT' AND (w."resolvedBranch" <> 'TIMEOUT' OR w."resumeEventId" IS NOT NULL))
                 OR (w."resolvedBy" = 'EVENT' AND w."resolvedBranch" <> 'EVENT')
                 OR (w."resolvedBranch" = 'TIMEOUT' AND w."resumeEventId" IS NOT NULL)))
              -- resumed by an event that is not its contact's
              OR (w."resumeEventId" IS NOT NULL AND ev.id IS NULL)
              -- resolved again after it completed: the resolution its completion recorded differs
              OR (w.status = 'COMPLETED' AND w.output ? 'resolvedBy'
                  AND (w.output->>'resolvedBy' IS DISTINCT FROM w."resolvedBy"::text
                       OR w.output->>'branch' IS DISTINCT FROM w."resolvedBranch"))
          UNION
          -- audited manual resolutions: more than one, or one by a party other than the row's resolver
          SELECT w.id
            FROM "AuditEntry" a
            JOIN "WorkflowExecution" e ON e.id = ${auditedExecution} AND e."projectId" = a."projectId"
            JOIN "StepExecution" w ON w."executionId" = e.id
            JOIN "WorkflowStep" ws ON ws.id = w."stepId" AND ws.type IN ('WAIT_FOR_EVENT', 'DELAY')
           WHERE a.outcome = 'APPLIED' AND a.action IN ('repair.FORCE_TIMEOUT', 'repair.DELIVER_EVENT', 'waits.resolve')
             ${inProject(Prisma.sql`a."projectId"`, p)}
             AND ${resolutionOf(Prisma.sql`w`, Prisma.sql`ws`)}
           GROUP BY w.id
          HAVING count(*) > 1
              -- the entry says who resolved it (waits.resolve always; a repair since FORCE_TIMEOUT
              -- follows the timer's rule, where an in-window event may resolve it); older repairs, OPERATOR
              OR bool_or(COALESCE(a.after->>'resolvedBy', 'OPERATOR') IS DISTINCT FROM w."resolvedBy"::text)) v`),
  },
  {
    id: 'I5',
    title: 'An email is sent at most once per step execution',
    violation: 'step executions with more than one message',
    enforcedBy: { table: 'Message', index: 'Message_stepExecutionId_key', columns: ['stepExecutionId'], predicate: null },
    count: (db, p) =>
      scalar(db.$queryRaw`
        -- invariantViolations.I5
        SELECT count(*) AS n FROM (
          SELECT 1 FROM "Message" WHERE true ${inProject(Prisma.sql`"projectId"`, p)}
           GROUP BY "stepExecutionId" HAVING count(*) > 1) v`),
  },
  {
    id: 'I6',
    title: 'Stale writers lose',
    violation:
      'step executions still RUNNING or WAITING although their execution has moved on (a stale writer won)',
    count: (db, p) =>
      scalar(db.$queryRaw`
        -- invariantViolations.I6
        SELECT count(*) AS n
          FROM "StepExecution" s
          JOIN "WorkflowExecution" e ON e.id = s."executionId" ${inProject(Prisma.sql`e."projectId"`, p)}
         WHERE s.status IN ('RUNNING', 'WAITING')
           AND (NOT ${executionIsActive(Prisma.sql`e.status`)} OR e."currentStepId" IS DISTINCT FROM s."stepId")`),
  },
  {
    id: 'I7',
    title: 'Nothing accepted is lost',
    violation:
      'accepted work with no way forward and no stuck reason: an active execution with no wake-up time or no wait row, ' +
      'an event both processed and dead-lettered, an email SENDING with no lease, or a step that queued an email which is gone',
    // Everything else is either moving (the workers take it) or listed by a stuck reason
    // (server/stuck/predicates.ts): a pending event (EVENT_PENDING), a dead one (EVENT_DEAD),
    // an email left SENDING past its lease (MESSAGE_UNCONFIRMED) or FAILED (MESSAGE_FAILED).
    count: (db, p) =>
      scalar(db.$queryRaw`
        -- invariantViolations.I7
        SELECT
          (SELECT count(*) FROM "WorkflowExecution" e
            WHERE ((e.status = 'RUNNING' AND e."readyAt" IS NULL)
               OR (e.status = 'WAITING' AND NOT EXISTS (
                     SELECT 1 FROM "StepExecution" s
                      WHERE s."executionId" = e.id AND s."stepId" = e."currentStepId" AND s.status = 'WAITING')))
              ${inProject(Prisma.sql`e."projectId"`, p)})
          +
          (SELECT count(*) FROM "Event" ev WHERE ev."processedAt" IS NOT NULL AND ev."deadAt" IS NOT NULL ${inProject(Prisma.sql`ev."projectId"`, p)})
          +
          (SELECT count(*) FROM "Message" m WHERE m.status = 'SENDING' AND m."leaseExpiresAt" IS NULL ${inProject(Prisma.sql`m."projectId"`, p)})
          +
          (SELECT count(*) FROM "StepExecution" s
             JOIN "WorkflowStep" ws ON ws.id = s."stepId" AND ws.type = 'SEND_EMAIL'
             JOIN "WorkflowExecution" e ON e.id = s."executionId" ${inProject(Prisma.sql`e."projectId"`, p)}
            WHERE s.status = 'COMPLETED' AND s.output->>'queued' = 'true'
              AND NOT EXISTS (SELECT 1 FROM "Message" m WHERE m."stepExecutionId" = s.id))
          AS n`),
  },
  {
    id: 'I8',
    title: 'Every manual action is audited',
    violation:
      'manual changes with no audit entry of their own: a cancel, an operator resolution of a wait, a skipped step, a step left by a move to another version, ' +
      'a step reset for a retry, or an email given up on',
    // Each change is matched to the entry its own action writes (server/repair/actions.ts:
    // action "repair.<ACTION>" on the execution, naming the step; waits.resolve; message
    // repairs on the message), never to just any entry on the execution.
    count: (db, p) =>
      scalar(db.$queryRaw`
        -- invariantViolations.I8
        SELECT
          (SELECT count(*) FROM "WorkflowExecution" e
            WHERE e.status = 'CANCELLED' ${inProject(Prisma.sql`e."projectId"`, p)}
              AND NOT EXISTS (SELECT 1 FROM "AuditEntry" a
                               WHERE a."projectId" = e."projectId" AND a."targetId" = e.id::text
                                 AND a.action = 'repair.CANCEL' AND a.outcome = 'APPLIED'))
          +
          -- The step rows an operator changed, in one pass over the step rows: resolved a
          -- wait; skipped a step; reset it for a retry (only retryStep puts a row back to PENDING).
          (SELECT count(*) FILTER (WHERE s."resolvedBy" = 'OPERATOR'
                    AND NOT EXISTS (SELECT 1 FROM "AuditEntry" a
                                     WHERE a."projectId" = e."projectId" AND a."targetId" = e.id::text AND a.outcome = 'APPLIED'
                                       AND ${resolutionOf(Prisma.sql`s`, Prisma.sql`ws`)}
                                       AND (a.action <> 'waits.resolve' OR a.after->>'resolvedBy' = 'OPERATOR')))
                + count(*) FILTER (WHERE s.status = 'SKIPPED' AND s.output ? 'skipped'
                    AND NOT EXISTS (SELECT 1 FROM "AuditEntry" a
                                     WHERE a."projectId" = e."projectId" AND a."targetId" = e.id::text AND a.outcome = 'APPLIED'
                                       AND a.action = 'repair.SKIP_STEP' AND ${namesStep(Prisma.sql`s`, Prisma.sql`ws`)}))
                + count(*) FILTER (WHERE s.status = 'SKIPPED' AND s.output ? 'migrated'
                    AND NOT EXISTS (SELECT 1 FROM "AuditEntry" a
                                     WHERE a."projectId" = e."projectId" AND a."targetId" = e.id::text AND a.outcome = 'APPLIED'
                                       AND a.action = 'repair.MIGRATE' AND ${namesStep(Prisma.sql`s`, Prisma.sql`ws`)}))
                + count(*) FILTER (WHERE s.status = 'PENDING'
                    AND NOT EXISTS (SELECT 1 FROM "AuditEntry" a
                                     WHERE a."projectId" = e."projectId" AND a."targetId" = e.id::text AND a.outcome = 'APPLIED'
                                       AND a.action = 'repair.RETRY_STEP' AND ${namesStep(Prisma.sql`s`, Prisma.sql`ws`)}))
             FROM "StepExecution" s
             JOIN "WorkflowStep" ws ON ws.id = s."stepId"
             JOIN "WorkflowExecution" e ON e.id = s."executionId" ${inProject(Prisma.sql`e."projectId"`, p)}
            WHERE s."resolvedBy" = 'OPERATOR' OR s.status IN ('SKIPPED', 'PENDING'))
          +
          (SELECT count(*) FROM "Message" m
            WHERE m.status = 'ABANDONED' ${inProject(Prisma.sql`m."projectId"`, p)}
              AND NOT EXISTS (SELECT 1 FROM "AuditEntry" a
                               WHERE a."projectId" = m."projectId" AND a."targetId" = m.id::text
                                 AND a.action = 'repair.GIVE_UP' AND a.outcome = 'APPLIED'))
          AS n`),
  },
  {
    id: 'I9',
    title: 'Every execution runs on its own version',
    violation:
      'active executions at a step their workflow version does not have, on a version of another workflow, ' +
      'or with an unfinished step row of another version (docs/versions.md)',
    // The composite foreign key WorkflowExecution_step_in_version_fkey refuses the first
    // while it is in place; the count is what proves it stayed so.
    count: (db, p) =>
      scalar(db.$queryRaw`
        -- invariantViolations.I9
        SELECT
          (SELECT count(*) FROM "WorkflowExecution" e
             JOIN "WorkflowVersion" v ON v.id = e."workflowVersionId"
             LEFT JOIN "WorkflowStep" ws ON ws.id = e."currentStepId"
            WHERE ${executionIsActive(Prisma.sql`e.status`)} ${inProject(Prisma.sql`e."projectId"`, p)}
              AND (v."workflowId" <> e."workflowId" OR (e."currentStepId" IS NOT NULL AND ws."versionId" IS DISTINCT FROM e."workflowVersionId")))
          +
          (SELECT count(*) FROM "StepExecution" s
             JOIN "WorkflowStep" ws ON ws.id = s."stepId"
             JOIN "WorkflowExecution" e ON e.id = s."executionId" ${inProject(Prisma.sql`e."projectId"`, p)}
            WHERE s.status IN ('PENDING', 'RUNNING', 'WAITING') AND ws."versionId" <> e."workflowVersionId")
          AS n`),
  },
];

/**
 * Every invariant with its violation count: in one project (`projectId`: what a project's
 * members may see), or, without it, in the whole deployment (tests, drills, the CLI).
 */
export async function checkInvariants(db: RawDb, opts: { projectId?: string | null } = {}): Promise<InvariantResult[]> {
  const results: InvariantResult[] = [];
  for (const inv of INVARIANTS) {
    const proven = inv.enforcedBy && (await uniqueIndexInPlace(db, inv.enforcedBy));
    results.push({
      id: inv.id,
      title: inv.title,
      violation: inv.violation,
      violations: proven ? 0 : await inv.count(db, opts.projectId ?? null),
      provenBy: proven ? inv.enforcedBy!.index : null,
    });
  }
  return results;
}

/** Total violations; for tests and drills: `expect(await totalViolations(db)).toBe(0)`. */
export async function totalViolations(db: RawDb): Promise<number> {
  return (await checkInvariants(db)).reduce((sum, r) => sum + r.violations, 0);
}
