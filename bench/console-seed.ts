import type pg from 'pg';
import { progress } from './support';

// The console bench's project, seeded set-based (INSERT ... SELECT generate_series): executions
// in every status and stuck reason, their step rows, events, emails and audit entries,
// consistent with every invariant.

/** What was seeded. */
export interface SeededCounts {
  executions: number;
  contacts: number;
  stepRows: number;
  events: number;
  messages: number;
}

/**
 * One execution in every 1,000 per bucket: how the seeded statuses and stuck reasons are
 * mixed. Deadlines, leases and wake-ups are spread over an hour or a day, as a real
 * backlog's are, not one instant shared by every stuck item.
 */
const MIX = `
  CASE WHEN b < 300 THEN 'COMPLETED'      -- bought: EVENT branch, two emails
       WHEN b < 800 THEN 'EXITED'         -- TIMEOUT branch to the EXIT step
       WHEN b < 830 THEN 'OVERDUE'        -- WAITING past its deadline, unresolved (WAIT_OVERDUE)
       WHEN b < 840 THEN 'CONTINUATION'   -- WAITING, resolved, never advanced (CONTINUATION_PENDING)
       WHEN b < 880 THEN 'WAITING'        -- WAITING, due in two days
       WHEN b < 900 THEN 'MISSING'        -- RUNNING, due an hour ago, no step row (MISSING_STEP)
       WHEN b < 915 THEN 'LEASE'          -- RUNNING, its worker's lease ran out (LEASE_EXPIRED)
       WHEN b < 930 THEN 'RUNNING'        -- RUNNING, leased
       WHEN b < 970 THEN 'FAILED'         -- FAILED at its email step (FAILED)
       ELSE 'CANCELLED' END`;

export async function seedConsoleProject(
  client: pg.PoolClient,
  projectId: string,
  workflowIds: string[],
  executions: number,
): Promise<SeededCounts> {
  const contacts = Math.max(1000, Math.round(executions / 5));
  const timed = async (what: string, sql: string, values: unknown[] = []) => {
    const t0 = performance.now();
    const r = await client.query(sql, values);
    const s = (performance.now() - t0) / 1000;
    progress('console', `${what}: ${r.rowCount ?? 0} rows in ${s.toFixed(1)} s (${Math.round((r.rowCount ?? 0) / s)}/s)`);
    return r.rowCount ?? 0;
  };
  await client.query(
    `CREATE TEMP TABLE wf AS
       SELECT w.n - 1 AS n, w.id AS wid, v.id AS vid,
              (SELECT id FROM "WorkflowStep" WHERE "versionId" = v.id AND key = 'start') AS s_start,
              (SELECT id FROM "WorkflowStep" WHERE "versionId" = v.id AND key = 'hello') AS s_hello,
              (SELECT id FROM "WorkflowStep" WHERE "versionId" = v.id AND key = 'wait') AS s_wait,
              (SELECT id FROM "WorkflowStep" WHERE "versionId" = v.id AND key = 'thanks') AS s_thanks,
              (SELECT id FROM "WorkflowStep" WHERE "versionId" = v.id AND key = 'bye') AS s_bye
         FROM unnest($1::uuid[]) WITH ORDINALITY AS w(id, n)
         JOIN "WorkflowVersion" v ON v."workflowId" = w.id AND v.number = 1`,
    [workflowIds],
  );
  const contactRows = await timed(
    'contacts',
    `INSERT INTO "Contact" (id, "projectId", email, data, "createdAt", "updatedAt")
     SELECT gen_random_uuid(), $1::uuid, 'console-' || i || '@example.com',
            jsonb_build_object('plan', CASE WHEN i % 4 = 0 THEN 'pro' ELSE 'free' END, 'country', (ARRAY['fr','de','us','jp'])[1 + i % 4]),
            now() - (i % 1000) * interval '1 hour', now()
       FROM generate_series(1, $2::int) i`,
    [projectId, contacts],
  );
  await client.query(
    `CREATE TEMP TABLE ct AS SELECT id, (row_number() OVER (ORDER BY "createdAt", id) - 1)::int AS n FROM "Contact" WHERE "projectId" = $1::uuid`,
    [projectId],
  );
  await client.query('CREATE INDEX ON ct (n)');
  await client.query(
    `CREATE TEMP TABLE ex AS
       SELECT i, gen_random_uuid() AS id, k.kind, wf.*, ct.id AS contact,
              now() - ($1::int - i) * (2592000.0 / $1::int) * interval '1 second' AS started,
              gen_random_uuid() AS se_start, gen_random_uuid() AS se_hello, gen_random_uuid() AS se_wait,
              gen_random_uuid() AS se_last, gen_random_uuid() AS ev
         FROM generate_series(1, $1::int) i
         CROSS JOIN LATERAL (SELECT ((i::bigint * 7919) % 1000)::int AS b) bb
         CROSS JOIN LATERAL (SELECT ${MIX} AS kind) k
         JOIN wf ON wf.n = i % 100
         JOIN ct ON ct.n = (i / 100) % $2::int`,
    [executions, contacts],
  );
  const execRows = await timed(
    'executions',
    `INSERT INTO "WorkflowExecution" (id, "projectId", "workflowId", "workflowVersionId", "contactId", status, "currentStepId", version, context,
                                      "enrollOnce", "exitReason", "lastError", "readyAt", "startedAt", "updatedAt", "finishedAt")
     SELECT id, $1::uuid, wid, vid, contact,
            (CASE kind WHEN 'COMPLETED' THEN 'COMPLETED' WHEN 'EXITED' THEN 'EXITED' WHEN 'FAILED' THEN 'FAILED'
                       WHEN 'CANCELLED' THEN 'CANCELLED' WHEN 'MISSING' THEN 'RUNNING' WHEN 'LEASE' THEN 'RUNNING'
                       WHEN 'RUNNING' THEN 'RUNNING' ELSE 'WAITING' END)::"ExecutionStatus",
            CASE kind WHEN 'COMPLETED' THEN s_thanks WHEN 'EXITED' THEN s_bye
                      WHEN 'MISSING' THEN s_hello WHEN 'LEASE' THEN s_hello WHEN 'RUNNING' THEN s_hello WHEN 'FAILED' THEN s_hello
                      ELSE s_wait END,
            6, CASE WHEN kind = 'COMPLETED' THEN jsonb_build_object('lastEvent', jsonb_build_object('name', 'purchase')) ELSE '{}'::jsonb END,
            false,
            CASE WHEN kind = 'EXITED' THEN 'no purchase' END,
            CASE WHEN kind = 'FAILED' THEN 'SEND_EMAIL "hello": 550 mailbox unavailable (' || (i % 7) || ')' END,
            CASE kind WHEN 'MISSING' THEN now() - interval '1 hour' - (i % 3600) * interval '1 second'
                      WHEN 'LEASE' THEN now() - interval '1 hour' - (i % 3600) * interval '1 second'
                      WHEN 'RUNNING' THEN now() + interval '1 day' END,
            started, started + interval '1 hour',
            CASE WHEN kind IN ('COMPLETED', 'EXITED', 'FAILED', 'CANCELLED') THEN started + interval '1 hour' END
       FROM ex`,
    [projectId],
  );
  const eventRows =
    (await timed(
      'events (purchases)',
      `INSERT INTO "Event" (id, "projectId", "contactId", name, data, "createdAt", "processedAt", "dispatchAttempts", "nextDispatchAt")
       SELECT ev, $1::uuid, contact, 'purchase', jsonb_build_object('total', i % 200), started + interval '20 minutes',
              started + interval '20 minutes', 1, started + interval '20 minutes'
         FROM ex WHERE kind = 'COMPLETED'`,
      [projectId],
    )) +
    (await timed(
      'events (page views, pending, dead)',
      `INSERT INTO "Event" (id, "projectId", "contactId", name, data, "createdAt", "processedAt", "deadAt", "lastError", "dispatchAttempts", "nextDispatchAt")
       SELECT gen_random_uuid(), $1::uuid, ct.id, CASE WHEN g % 500 = 0 THEN 'purchase' ELSE 'page_view' END,
              jsonb_build_object('path', '/p/' || (g % 50)), now() - g * interval '7 seconds',
              CASE WHEN g % 500 = 0 OR g % 777 = 0 THEN NULL ELSE now() - g * interval '7 seconds' END,
              CASE WHEN g % 777 = 0 AND g % 500 <> 0 THEN now() - g * interval '7 seconds' END,
              CASE WHEN g % 777 = 0 AND g % 500 <> 0 THEN 'workflow lookup timed out' END,
              CASE WHEN g % 777 = 0 AND g % 500 <> 0 THEN 8 ELSE 1 END,
              now() - g * interval '7 seconds' + interval '1 hour'
         FROM generate_series(1, $2::int) g JOIN ct ON ct.n = g % $3::int`,
      [projectId, Math.round(executions / 5), contacts],
    ));
  const step = (cols: string) => `INSERT INTO "StepExecution" (id, "executionId", "stepId", status, attempt, "claimToken", "leaseOwner",
      "leaseExpiresAt", "dueAt", "resolvedBy", "resolvedAt", "resolvedBranch", "resumeEventId", output, error, "startedAt", "finishedAt") ${cols}`;
  let stepRows = await timed(
    'step rows (trigger)',
    step(`SELECT se_start, id, s_start, 'COMPLETED', 1, gen_random_uuid(), NULL, NULL, NULL, NULL, NULL, NULL, NULL, '{}'::jsonb, NULL, started, started FROM ex`),
  );
  stepRows += await timed(
    'step rows (email)',
    step(`SELECT se_hello, id, s_hello,
                 (CASE kind WHEN 'LEASE' THEN 'RUNNING' WHEN 'RUNNING' THEN 'RUNNING' WHEN 'FAILED' THEN 'FAILED' ELSE 'COMPLETED' END)::"StepStatus",
                 CASE kind WHEN 'FAILED' THEN 3 WHEN 'LEASE' THEN 2 ELSE 1 END, gen_random_uuid(),
                 CASE WHEN kind IN ('LEASE', 'RUNNING') THEN 'worker:bench:' || (i % 8) END,
                 CASE kind WHEN 'LEASE' THEN now() - interval '1 hour' - (i % 3600) * interval '1 second' WHEN 'RUNNING' THEN now() + interval '1 day' END,
                 NULL, NULL, NULL, NULL, NULL,
                 CASE WHEN kind IN ('LEASE', 'RUNNING', 'FAILED') THEN NULL ELSE '{"queued": true}'::jsonb END,
                 CASE WHEN kind = 'FAILED' THEN 'SEND_EMAIL "hello": 550 mailbox unavailable (' || (i % 7) || ')' END,
                 started + interval '1 second',
                 CASE WHEN kind IN ('LEASE', 'RUNNING') THEN NULL ELSE started + interval '2 seconds' END
            FROM ex WHERE kind <> 'MISSING'`),
  );
  stepRows += await timed(
    'step rows (wait)',
    step(`SELECT se_wait, id, s_wait,
                 (CASE WHEN kind IN ('COMPLETED', 'EXITED') THEN 'COMPLETED' ELSE 'WAITING' END)::"StepStatus",
                 1, gen_random_uuid(), NULL, NULL,
                 CASE kind WHEN 'OVERDUE' THEN now() - interval '1 day' - (i % 86400) * interval '1 second' WHEN 'WAITING' THEN now() + interval '2 days'
                           ELSE started + interval '30 minutes' END,
                 (CASE kind WHEN 'COMPLETED' THEN 'EVENT' WHEN 'EXITED' THEN 'TIMEOUT' WHEN 'CONTINUATION' THEN 'TIMEOUT' END)::"WaitResolver",
                 CASE kind WHEN 'COMPLETED' THEN started + interval '20 minutes' WHEN 'EXITED' THEN started + interval '30 minutes'
                           WHEN 'CONTINUATION' THEN now() - interval '1 hour' - (i % 3600) * interval '1 second' END,
                 CASE kind WHEN 'COMPLETED' THEN 'EVENT' WHEN 'EXITED' THEN 'TIMEOUT' WHEN 'CONTINUATION' THEN 'TIMEOUT' END,
                 CASE WHEN kind = 'COMPLETED' THEN ev END,
                 CASE kind WHEN 'COMPLETED' THEN '{"eventName": "purchase", "resolvedBy": "EVENT", "branch": "EVENT"}'::jsonb
                           WHEN 'EXITED' THEN '{"eventName": "purchase", "resolvedBy": "TIMEOUT", "branch": "TIMEOUT"}'::jsonb
                           ELSE '{"eventName": "purchase"}'::jsonb END,
                 NULL, started + interval '3 seconds',
                 CASE WHEN kind IN ('COMPLETED', 'EXITED') THEN started + interval '31 minutes' END
            FROM ex WHERE kind IN ('COMPLETED', 'EXITED', 'OVERDUE', 'CONTINUATION', 'WAITING')`),
  );
  stepRows += await timed(
    'step rows (after the wait)',
    step(`SELECT se_last, id, CASE WHEN kind = 'COMPLETED' THEN s_thanks ELSE s_bye END, 'COMPLETED', 1, gen_random_uuid(),
                 NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                 CASE WHEN kind = 'COMPLETED' THEN '{"queued": true}'::jsonb ELSE '{"exitReason": "no purchase"}'::jsonb END,
                 NULL, started + interval '32 minutes', started + interval '32 minutes'
            FROM ex WHERE kind IN ('COMPLETED', 'EXITED')`),
  );
  const msg = (from: string) => `INSERT INTO "Message" (id, "projectId", "executionId", "stepExecutionId", "to", subject, body, status, version,
        "providerId", error, "leaseOwner", "leaseExpiresAt", "createdAt", "sentAt") ${from}`;
  let messageRows = await timed(
    'emails (hello)',
    msg(`SELECT gen_random_uuid(), $1::uuid, ex.id, se_hello, 'console-' || i || '@example.com', 'Hello', 'Hi there',
                (CASE WHEN i % 211 = 0 THEN 'FAILED' WHEN i % 337 = 0 THEN 'SENDING' ELSE 'SENT' END)::"MessageStatus", 3,
                CASE WHEN i % 211 <> 0 AND i % 337 <> 0 THEN 'log:' || ex.id END,
                CASE WHEN i % 211 = 0 THEN '421 try again later' END,
                CASE WHEN i % 211 <> 0 AND i % 337 = 0 THEN 'worker:bench:1' END,
                CASE WHEN i % 211 <> 0 AND i % 337 = 0 THEN now() - interval '2 hours' - (i % 3600) * interval '1 second' END,
                started + interval '2 seconds', CASE WHEN i % 211 <> 0 AND i % 337 <> 0 THEN started + interval '3 seconds' END
           FROM ex WHERE kind NOT IN ('MISSING', 'LEASE', 'RUNNING', 'FAILED')`),
    [projectId],
  );
  messageRows += await timed(
    'emails (thanks)',
    msg(`SELECT gen_random_uuid(), $1::uuid, ex.id, se_last, 'console-' || i || '@example.com', 'Thanks', 'Thanks for buying', 'SENT', 3,
                'log:' || se_last, NULL, NULL, NULL, started + interval '32 minutes', started + interval '33 minutes'
           FROM ex WHERE kind = 'COMPLETED'`),
    [projectId],
  );
  await timed(
    'audit entries (cancels)',
    `INSERT INTO "AuditEntry" (id, "projectId", actor, action, "targetType", "targetId", reason, before, after, outcome, at)
     SELECT gen_random_uuid(), $1::uuid, 'user:bench-operator-' || (i % 5), 'repair.CANCEL', 'execution', id::text,
            'customer asked to stop', jsonb_build_object('status', 'WAITING', 'step', 'wait'), jsonb_build_object('status', 'CANCELLED'),
            'APPLIED', started + interval '1 hour'
       FROM ex WHERE kind = 'CANCELLED'`,
    [projectId],
  );
  const t0 = performance.now();
  await client.query('ANALYZE');
  progress('console', `ANALYZE in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return { executions: execRows, contacts: contactRows, stepRows, events: eventRows, messages: messageRows };
}
