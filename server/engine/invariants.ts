import type { DbTx } from '../db';

// The invariants of DESIGN.md section 3, each checked by one SQL query that counts
// violations. Tests, the race suite, the bench, the fault drills and the console's health
// panel all call these: one concept, one home. Zero everywhere is the only healthy answer.

export type InvariantId = 'I1' | 'I2' | 'I3' | 'I4' | 'I5' | 'I6' | 'I7' | 'I8';

export interface InvariantCheck {
  id: InvariantId;
  title: string;
  /** What a violation is, in the words an operator would use. */
  violation: string;
  count(db: DbTx): Promise<number>;
}

export interface InvariantResult {
  id: InvariantId;
  title: string;
  violation: string;
  violations: number;
}

async function scalar(rows: Promise<{ n: bigint | number }[]>): Promise<number> {
  const [row] = await rows;
  return Number(row?.n ?? 0);
}

export const INVARIANTS: readonly InvariantCheck[] = [
  {
    id: 'I1',
    title: 'One active execution per workflow and contact',
    violation: '(workflow, contact) pairs with more than one RUNNING or WAITING execution',
    count: (db) =>
      scalar(db.$queryRaw`
        SELECT count(*) AS n FROM (
          SELECT 1 FROM "WorkflowExecution"
           WHERE status IN ('RUNNING', 'WAITING')
           GROUP BY "workflowId", "contactId" HAVING count(*) > 1) v`),
  },
  {
    id: 'I2',
    title: 'One step-execution row per execution and step',
    violation: '(execution, step) pairs with more than one step-execution row',
    count: (db) =>
      scalar(db.$queryRaw`
        SELECT count(*) AS n FROM (
          SELECT 1 FROM "StepExecution" GROUP BY "executionId", "stepId" HAVING count(*) > 1) v`),
  },
  {
    id: 'I3',
    title: 'Enrollment idempotent per workflow and source event',
    violation: '(workflow, source event) pairs enrolled more than once',
    count: (db) =>
      scalar(db.$queryRaw`
        SELECT count(*) AS n FROM (
          SELECT 1 FROM "WorkflowExecution" WHERE "sourceEventId" IS NOT NULL
           GROUP BY "workflowId", "sourceEventId" HAVING count(*) > 1) v`),
  },
  {
    id: 'I4',
    title: 'A wait is resolved at most once, by exactly one resolver',
    violation:
      'waits whose execution took both the EVENT and the TIMEOUT branch, or that completed without a recorded resolver',
    count: (db) =>
      scalar(db.$queryRaw`
        SELECT
          (SELECT count(*) FROM "StepExecution" w
             JOIN "WorkflowStep" ws ON ws.id = w."stepId" AND ws.type = 'WAIT_FOR_EVENT'
             JOIN "WorkflowTransition" te ON te."fromStepId" = ws.id AND te.branch = 'EVENT'
             JOIN "WorkflowTransition" tt ON tt."fromStepId" = ws.id AND tt.branch = 'TIMEOUT'
            WHERE te."toStepId" <> tt."toStepId"
              AND EXISTS (SELECT 1 FROM "StepExecution" a WHERE a."executionId" = w."executionId" AND a."stepId" = te."toStepId")
              AND EXISTS (SELECT 1 FROM "StepExecution" b WHERE b."executionId" = w."executionId" AND b."stepId" = tt."toStepId"))
          +
          (SELECT count(*) FROM "StepExecution" w
             JOIN "WorkflowStep" ws ON ws.id = w."stepId" AND ws.type IN ('WAIT_FOR_EVENT', 'DELAY')
            WHERE w.status = 'COMPLETED' AND w."resolvedBy" IS NULL)
          AS n`),
  },
  {
    id: 'I5',
    title: 'An email is sent at most once per step execution',
    violation: 'step executions with more than one message',
    count: (db) =>
      scalar(db.$queryRaw`
        SELECT count(*) AS n FROM (
          SELECT 1 FROM "Message" GROUP BY "stepExecutionId" HAVING count(*) > 1) v`),
  },
  {
    id: 'I6',
    title: 'Stale writers lose',
    violation:
      'step executions still RUNNING or WAITING although their execution has moved on (a stale writer won)',
    count: (db) =>
      scalar(db.$queryRaw`
        SELECT count(*) AS n
          FROM "StepExecution" s
          JOIN "WorkflowExecution" e ON e.id = s."executionId"
         WHERE s.status IN ('RUNNING', 'WAITING')
           AND (e.status NOT IN ('RUNNING', 'WAITING') OR e."currentStepId" IS DISTINCT FROM s."stepId")`),
  },
  {
    id: 'I7',
    title: 'Nothing accepted is lost',
    violation:
      'active executions with no way forward: RUNNING with no wake-up time, or WAITING with no wait row at their step',
    count: (db) =>
      scalar(db.$queryRaw`
        SELECT count(*) AS n
          FROM "WorkflowExecution" e
         WHERE (e.status = 'RUNNING' AND e."readyAt" IS NULL)
            OR (e.status = 'WAITING' AND NOT EXISTS (
                  SELECT 1 FROM "StepExecution" s
                   WHERE s."executionId" = e.id AND s."stepId" = e."currentStepId" AND s.status = 'WAITING'))`),
  },
  {
    id: 'I8',
    title: 'Every manual action is audited',
    violation: 'executions resolved or cancelled by an operator with no audit entry recording it',
    count: (db) =>
      scalar(db.$queryRaw`
        SELECT count(*) AS n
          FROM "WorkflowExecution" e
         WHERE (e.status = 'CANCELLED'
                OR EXISTS (SELECT 1 FROM "StepExecution" s WHERE s."executionId" = e.id AND s."resolvedBy" = 'OPERATOR'))
           AND NOT EXISTS (SELECT 1 FROM "AuditEntry" a
                            WHERE a."projectId" = e."projectId" AND a."targetId" = e.id::text AND a.outcome = 'APPLIED')`),
  },
];

/** Every invariant with its violation count. */
export async function checkInvariants(db: DbTx): Promise<InvariantResult[]> {
  const results: InvariantResult[] = [];
  for (const inv of INVARIANTS) {
    results.push({ id: inv.id, title: inv.title, violation: inv.violation, violations: await inv.count(db) });
  }
  return results;
}

/** Total violations; for tests and drills: `expect(await totalViolations(db)).toBe(0)`. */
export async function totalViolations(db: DbTx): Promise<number> {
  return (await checkInvariants(db)).reduce((sum, r) => sum + r.violations, 0);
}
