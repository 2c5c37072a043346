import type pg from 'pg';
import { progress } from './support';

// The retention bench's project, seeded set-based (INSERT ... SELECT generate_series), in
// the shapes a year of production leaves, consistent with every invariant and with no
// work due for a worker (so the throughput rounds beside it run only their own):
//
//   60%  COMPLETED 31 to 400 days ago: trigger and email step rows, the email SENT   -> removed
//   15%  COMPLETED in the last 29 days                                              -> kept (recent)
//    5%  CANCELLED 31 to 400 days ago by an operator (with its audit entry)         -> removed
//    5%  FAILED 31 to 400 days ago, unrepaired: its email step FAILED                -> kept (FAILED)
//    3%  COMPLETED long ago whose email failed                                      -> kept (MESSAGE_FAILED)
//    2%  COMPLETED long ago, enrolled once only (no re-entry)                       -> reduced to its row
//   10%  WAITING since 60 days for an event (a 90-day wait), each its own contact   -> kept (active)
//
// plus 3 processed events per 10 executions, 31 to 400 days old, of random contacts
// (those of a waiting contact accepted since its wait began are kept: a wait may take them).

export interface RetentionSeeded {
  executions: number;
  stepRows: number;
  emails: number;
  events: number;
  auditEntries: number;
  /** Executions old, finished and not stuck: what a sweep at 30 days removes (or reduces). */
  removable: number;
}

export async function seedRetentionProject(
  client: pg.PoolClient,
  projectId: string,
  workflows: { mail: string[]; wait: string },
  executions: number,
): Promise<RetentionSeeded> {
  const timed = async (what: string, sql: string, values: unknown[]) => {
    const t0 = performance.now();
    const r = await client.query(sql, values);
    const s = (performance.now() - t0) / 1000;
    progress('retention', `${what}: ${r.rowCount ?? 0} rows in ${s.toFixed(1)} s`);
    return r.rowCount ?? 0;
  };
  const contacts = Math.max(1000, Math.round(executions / 5));
  const waiting = Math.round(executions * 0.1);
  const once = Math.round(executions * 0.02);
  await timed(
    'contacts',
    `INSERT INTO "Contact" (id, "projectId", email, "createdAt", "updatedAt")
     SELECT gen_random_uuid(), $1::uuid, 'retention-' || i || '@example.com', now() - interval '400 days', now() FROM generate_series(1, $2::int) i`,
    [projectId, Math.max(contacts, waiting + once)],
  );
  await client.query(`CREATE TEMP TABLE rc AS SELECT id, (row_number() OVER (ORDER BY email) - 1)::int AS n FROM "Contact" WHERE "projectId" = $1`, [projectId]);
  await client.query('CREATE INDEX ON rc (n)');
  await client.query(
    `CREATE TEMP TABLE rw AS
       SELECT w.n - 1 AS n, w.id AS wid, v.id AS vid,
              (SELECT id FROM "WorkflowStep" WHERE "versionId" = v.id AND key = 'start') AS s_start,
              (SELECT id FROM "WorkflowStep" WHERE "versionId" = v.id AND key = 'mail') AS s_mail
         FROM unnest($1::uuid[]) WITH ORDINALITY AS w(id, n)
         JOIN "WorkflowVersion" v ON v."workflowId" = w.id AND v.number = 1`,
    [workflows.mail],
  );
  // The finished ones: kind by a hash of i; contact i % contacts (finished executions may share one).
  const finishedCount = executions - waiting;
  await client.query(
    `CREATE TEMP TABLE rx AS
       SELECT i, gen_random_uuid() AS id, k.kind, rw.*,
              CASE WHEN k.kind = 'ONCE' THEN (SELECT id FROM rc WHERE rc.n = $3::int + 2 * (i / 90) + (bb.b - 88)) ELSE rc.id END AS contact,
              CASE WHEN k.kind = 'RECENT' THEN now() - (i % 29) * interval '1 day' - interval '1 hour'
                   ELSE now() - interval '31 days' - (i % 370) * interval '1 day' - (i % 86400) * interval '1 second' END AS finished,
              gen_random_uuid() AS se_start, gen_random_uuid() AS se_mail
         FROM generate_series(1, $1::int) i
         CROSS JOIN LATERAL (SELECT ((i::bigint * 7919) % 90)::int AS b) bb
         CROSS JOIN LATERAL (SELECT CASE WHEN b < 60 THEN 'DONE' WHEN b < 75 THEN 'RECENT' WHEN b < 80 THEN 'CANCELLED'
                                         WHEN b < 85 THEN 'FAILED' WHEN b < 88 THEN 'MAIL_FAILED' ELSE 'ONCE' END AS kind) k
         JOIN rw ON rw.n = i % 10
         JOIN rc ON rc.n = i % $2::int`,
    [finishedCount, contacts, waiting],
  );
  // ONCE rows (b of 88 or 89, two in each 90 of i) each have a contact of their own, so
  // (workflow, contact) stays unique and none is lost to the once-only index.
  let executionRows = await timed(
    'executions (finished, failed)',
    `INSERT INTO "WorkflowExecution" (id, "projectId", "workflowId", "workflowVersionId", "contactId", status, "currentStepId", version,
                                      "enrollOnce", "lastError", "startedAt", "updatedAt", "finishedAt")
     SELECT id, $1::uuid, wid, vid, contact,
            (CASE kind WHEN 'CANCELLED' THEN 'CANCELLED' WHEN 'FAILED' THEN 'FAILED' ELSE 'COMPLETED' END)::"ExecutionStatus",
            s_mail, 4, kind = 'ONCE', CASE WHEN kind = 'FAILED' THEN 'SEND_EMAIL "mail": 550 mailbox unavailable' END,
            finished - interval '1 minute', finished, finished
       FROM rx
     ON CONFLICT DO NOTHING`,
    [projectId],
  );
  const step = `INSERT INTO "StepExecution" (id, "executionId", "stepId", status, attempt, output, error, "startedAt", "finishedAt")`;
  let stepRows = await timed('step rows (trigger)', `${step} SELECT se_start, id, s_start, 'COMPLETED', 1, '{}', NULL, finished - interval '1 minute', finished - interval '1 minute' FROM rx WHERE EXISTS (SELECT 1 FROM "WorkflowExecution" x WHERE x.id = rx.id)`, []);
  stepRows += await timed(
    'step rows (email)',
    `${step} SELECT se_mail, id, s_mail, (CASE kind WHEN 'FAILED' THEN 'FAILED' ELSE 'COMPLETED' END)::"StepStatus",
            CASE WHEN kind = 'FAILED' THEN 3 ELSE 1 END, CASE WHEN kind = 'FAILED' THEN NULL ELSE '{"queued": true}'::jsonb END,
            CASE WHEN kind = 'FAILED' THEN '550 mailbox unavailable' END, finished - interval '30 seconds', finished
       FROM rx WHERE kind <> 'CANCELLED' AND EXISTS (SELECT 1 FROM "WorkflowExecution" x WHERE x.id = rx.id)`,
    [],
  );
  const emails = await timed(
    'emails',
    `INSERT INTO "Message" ("projectId", "executionId", "stepExecutionId", "to", subject, body, status, version, "providerId", error, "createdAt", "sentAt")
     SELECT $1::uuid, id, se_mail, 'retention-' || i || '@example.com', 'Hello', 'Hi there, a message of some length as a real one has.',
            (CASE WHEN kind = 'MAIL_FAILED' THEN 'FAILED' ELSE 'SENT' END)::"MessageStatus", 3,
            CASE WHEN kind <> 'MAIL_FAILED' THEN 'log:' || id END, CASE WHEN kind = 'MAIL_FAILED' THEN '421 try again later' END,
            finished - interval '20 seconds', CASE WHEN kind <> 'MAIL_FAILED' THEN finished END
       FROM rx WHERE kind NOT IN ('CANCELLED', 'FAILED') AND EXISTS (SELECT 1 FROM "WorkflowExecution" x WHERE x.id = rx.id)`,
    [projectId],
  );
  const auditEntries = await timed(
    'audit entries (cancels)',
    `INSERT INTO "AuditEntry" ("projectId", actor, action, "targetType", "targetId", reason, before, after, outcome, at)
     SELECT $1::uuid, 'user:bench-operator', 'repair.CANCEL', 'execution', id::text, 'customer asked to stop',
            '{"status": "RUNNING"}', '{"status": "CANCELLED"}', 'APPLIED', finished
       FROM rx WHERE kind = 'CANCELLED'`,
    [projectId],
  );
  // The waiting ones: each its own contact (I1), in a 90-day wait begun 60 days ago.
  const [wait] = (
    await client.query(
      `SELECT v.id AS vid, (SELECT id FROM "WorkflowStep" WHERE "versionId" = v.id AND key = 'start') AS s_start,
              (SELECT id FROM "WorkflowStep" WHERE "versionId" = v.id AND key = 'wait') AS s_wait
         FROM "WorkflowVersion" v WHERE v."workflowId" = $1 AND v.number = 1`,
      [workflows.wait],
    )
  ).rows;
  await client.query(
    `CREATE TEMP TABLE rwait AS SELECT rc.id AS contact, gen_random_uuid() AS id, now() - interval '60 days' - rc.n * interval '1 second' AS started
       FROM rc WHERE rc.n < $1::int`,
    [waiting],
  );
  executionRows += await timed(
    'executions (waiting)',
    `INSERT INTO "WorkflowExecution" (id, "projectId", "workflowId", "workflowVersionId", "contactId", status, "currentStepId", version, "startedAt", "updatedAt")
     SELECT id, $1::uuid, $2::uuid, $3::uuid, contact, 'WAITING', $4::uuid, 3, started, started FROM rwait`,
    [projectId, workflows.wait, wait.vid, wait.s_wait],
  );
  stepRows += await timed(
    'step rows (waits)',
    `${step} SELECT gen_random_uuid(), id, $1::uuid, 'COMPLETED'::"StepStatus", 1, '{}'::jsonb, NULL, started, started FROM rwait
     UNION ALL
     SELECT gen_random_uuid(), id, $2::uuid, 'WAITING'::"StepStatus", 1, '{"eventName": "purchase"}', NULL, started, NULL FROM rwait`,
    [wait.s_start, wait.s_wait],
  );
  await client.query(`UPDATE "StepExecution" SET "dueAt" = "startedAt" + interval '90 days' WHERE "stepId" = $1`, [wait.s_wait]);
  const events = await timed(
    'events (processed)',
    `INSERT INTO "Event" ("projectId", "contactId", name, data, "createdAt", "processedAt", "dispatchAttempts", "nextDispatchAt")
     SELECT $1::uuid, rc.id, 'page_view', jsonb_build_object('path', '/p/' || (g % 50)),
            now() - interval '31 days' - (g % 370) * interval '1 day', now() - interval '31 days' - (g % 370) * interval '1 day', 1, now()
       FROM generate_series(1, $2::int) g JOIN rc ON rc.n = (g * 7) % $3::int`,
    [projectId, Math.round(executions * 0.3), contacts],
  );
  const t0 = performance.now();
  await client.query('ANALYZE');
  progress('retention', `ANALYZE in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const { rows } = await client.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM rx WHERE kind IN ('DONE', 'CANCELLED', 'ONCE') AND EXISTS (SELECT 1 FROM "WorkflowExecution" x WHERE x.id = rx.id)`,
  );
  return { executions: executionRows, stepRows, emails, events, auditEntries, removable: rows[0]!.n };
}
