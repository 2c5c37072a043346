import type { Db } from '../../server/db';
import type { SweepTiming } from '../../server/retention/policy';
import type { TestDatabase } from './database';
import { mailWorkflow, workflowFrom } from './fixtures';

// Retention tests' helpers (test/retention/, test/race/retention.test.ts): making a
// project's history old, seeding many finished executions at once, and counting rows.

/** Batches as small as the test wants and no pauses, so a test sweeps in milliseconds. */
export const FAST: Partial<SweepTiming> = { minPauseMs: 0, pauseRatio: 0 };

/**
 * Move every timestamp of a project's history `days` days back (executions, their step
 * rows and emails, events, audit entries, webhook messages), keeping every one's place
 * relative to the others: as if it had all happened that long ago.
 */
export async function ageProject(t: TestDatabase, projectId: string, days: number, executionIds?: string[]): Promise<void> {
  const shift = `interval '${days} days'`;
  const only = executionIds ? `AND id = ANY($2::uuid[])` : '';
  const params = executionIds ? [projectId, executionIds] : [projectId];
  await t.query(
    `UPDATE "WorkflowExecution" SET "startedAt" = "startedAt" - ${shift}, "updatedAt" = "updatedAt" - ${shift},
            "finishedAt" = "finishedAt" - ${shift}, "readyAt" = "readyAt" - ${shift}
      WHERE "projectId" = $1 ${only}`,
    params,
  );
  await t.query(
    `UPDATE "StepExecution" s SET "startedAt" = s."startedAt" - ${shift}, "finishedAt" = s."finishedAt" - ${shift},
            "dueAt" = s."dueAt" - ${shift}, "resolvedAt" = s."resolvedAt" - ${shift}, "leaseExpiresAt" = s."leaseExpiresAt" - ${shift}
       FROM "WorkflowExecution" e WHERE e.id = s."executionId" AND e."projectId" = $1 ${only.replace('id =', 'e.id =')}`,
    params,
  );
  await t.query(
    `UPDATE "Message" SET "createdAt" = "createdAt" - ${shift}, "sentAt" = "sentAt" - ${shift}, "leaseExpiresAt" = "leaseExpiresAt" - ${shift}
      WHERE "projectId" = $1 ${only.replace('id =', '"executionId" =')}`,
    params,
  );
  if (executionIds) return;
  await t.query(
    `UPDATE "Event" SET "createdAt" = "createdAt" - ${shift}, "processedAt" = "processedAt" - ${shift}, "deadAt" = "deadAt" - ${shift},
            "nextDispatchAt" = "nextDispatchAt" - ${shift}, "leaseExpiresAt" = "leaseExpiresAt" - ${shift}
      WHERE "projectId" = $1`,
    [projectId],
  );
  await t.query(`UPDATE "AuditEntry" SET at = at - ${shift} WHERE "projectId" = $1`, [projectId]);
  await t.query(
    `UPDATE "WebhookMessage" SET "createdAt" = "createdAt" - ${shift}, "nextAttemptAt" = "nextAttemptAt" - ${shift},
            "deliveredAt" = "deliveredAt" - ${shift}, "leaseExpiresAt" = "leaseExpiresAt" - ${shift}
      WHERE "projectId" = $1`,
    [projectId],
  );
}

/**
 * `n` COMPLETED executions of mailWorkflow that finished `daysAgo` days ago, each with its
 * two step rows and its SENT email, as the engine leaves them, seeded set-based (one
 * contact each). Returns the workflow's id.
 */
export async function seedFinished(t: TestDatabase, db: Db, projectId: string, n: number, daysAgo: number): Promise<string> {
  const workflow = await workflowFrom(db, projectId, mailWorkflow());
  await t.query(
    `WITH steps AS (
       SELECT v.id AS version,
              (SELECT id FROM "WorkflowStep" WHERE "versionId" = v.id AND key = 'start') AS start,
              (SELECT id FROM "WorkflowStep" WHERE "versionId" = v.id AND key = 'mail') AS mail
         FROM "WorkflowVersion" v WHERE v."workflowId" = $2 AND v.number = 1
     ), rows AS (
       SELECT g, gen_random_uuid() AS contact, gen_random_uuid() AS execution, gen_random_uuid() AS s1, gen_random_uuid() AS s2,
              now() - $4::int * interval '1 day' - g * interval '1 second' AS at
         FROM generate_series(1, $3::int) g
     ), contacts AS (
       INSERT INTO "Contact" (id, "projectId", email) SELECT contact, $1, 'old-' || execution || '@example.com' FROM rows
     ), executions AS (
       INSERT INTO "WorkflowExecution" (id, "projectId", "workflowId", "workflowVersionId", "contactId", status, "currentStepId",
                                        version, "startedAt", "updatedAt", "finishedAt")
       SELECT execution, $1, $2, steps.version, contact, 'COMPLETED', steps.mail, 3, at, at, at FROM rows, steps
     ), step_rows AS (
       INSERT INTO "StepExecution" (id, "executionId", "stepId", status, output, "startedAt", "finishedAt")
       SELECT s1, execution, steps.start, 'COMPLETED'::"StepStatus", '{}'::jsonb, at, at FROM rows, steps
       UNION ALL
       SELECT s2, execution, steps.mail, 'COMPLETED'::"StepStatus", '{"queued": true}'::jsonb, at, at FROM rows, steps
     )
     INSERT INTO "Message" ("projectId", "executionId", "stepExecutionId", "to", subject, body, status, "sentAt", "createdAt")
     SELECT $1, execution, s2, 'old@example.com', 'Hi', 'Hello', 'SENT', at, at FROM rows`,
    [projectId, workflow.id, n, daysAgo],
  );
  return workflow.id;
}

/** Rows of a project in the tables retention touches. */
export async function rowsOf(t: TestDatabase, projectId: string): Promise<Record<string, number>> {
  const [row] = await t.query(
    `SELECT (SELECT count(*) FROM "WorkflowExecution" WHERE "projectId" = $1)::int AS executions,
            (SELECT count(*) FROM "StepExecution" s JOIN "WorkflowExecution" e ON e.id = s."executionId" WHERE e."projectId" = $1)::int AS steps,
            (SELECT count(*) FROM "Message" WHERE "projectId" = $1)::int AS emails,
            (SELECT count(*) FROM "Event" WHERE "projectId" = $1)::int AS events,
            (SELECT count(*) FROM "AuditEntry" WHERE "projectId" = $1)::int AS "auditEntries",
            (SELECT count(*) FROM "WebhookMessage" WHERE "projectId" = $1)::int AS "webhookMessages"`,
    [projectId],
  );
  return row;
}
