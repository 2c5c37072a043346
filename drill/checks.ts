import type pg from 'pg';
import type { DbTx } from '../server/db';
import { checkInvariants } from '../server/engine/invariants';
import type { ClientLog } from './api';
import { readLedger, type RepairRecord } from './settle';

// What the drill proves once everything has settled, from the database, the provider's
// ledger and the log of what every client was told. Each check names its violations;
// zero of every kind is the only passing answer.

export interface Violation {
  check: string;
  count: number;
  /** A few of the offending rows, to start the investigation from. */
  sample: unknown[];
}

async function rows<T extends pg.QueryResultRow>(pool: pg.Pool, sql: string, values: unknown[] = []): Promise<T[]> {
  return (await pool.query<T>(sql, values)).rows;
}

export async function runChecks(opts: { db: DbTx; pool: pg.Pool; log: ClientLog; ledgerFile: string; repairs: RepairRecord[] }): Promise<{ violations: Violation[]; invariants: Record<string, number> }> {
  const { pool, log } = opts;
  const violations: Violation[] = [];
  const add = (check: string, sample: unknown[], count = sample.length) => {
    if (count > 0) violations.push({ check, count, sample: sample.slice(0, 5) });
  };

  // I1-I9, the product's own queries.
  const invariants: Record<string, number> = {};
  for (const r of await checkInvariants(opts.db)) {
    invariants[r.id] = r.violations;
    if (r.violations > 0) add(`${r.id} ${r.title}`, [r.violation], r.violations);
  }

  // An outage (PostgreSQL restarting, every connection taken) is a 503 with Retry-After,
  // never another 5xx: a client must be able to tell "retry later" from a bug.
  add('server answered 5xx other than 503', log.entries.filter((e) => e.status !== null && e.status >= 500 && e.status !== 503).map((e) => ({ op: e.op, status: e.status, code: e.code, detail: e.detail })));

  // Nothing told "accepted" is missing: every accepted enrollment is its execution, of its email.
  const enrolled = log.entries.filter((e) => e.told === 'accepted' && e.executionId);
  const found = await rows<{ id: string; email: string }>(pool,
    `SELECT e.id, lower(c.email) AS email FROM "WorkflowExecution" e JOIN "Contact" c ON c.id = e."contactId" WHERE e.id = ANY($1::uuid[])`,
    [enrolled.map((e) => e.executionId)]);
  const byId = new Map(found.map((r) => [r.id, r.email]));
  add('accepted enrollment missing from the database', enrolled.filter((e) => !byId.has(e.executionId!)).map((e) => ({ op: e.op, executionId: e.executionId, email: e.email })));
  add('accepted enrollment is another contact\'s execution', enrolled.filter((e) => e.email && byId.has(e.executionId!) && byId.get(e.executionId!) !== e.email.toLowerCase()).map((e) => ({ executionId: e.executionId, email: e.email })));

  // Every accepted event is stored and processed (dispatched), none left dead.
  const tracked = log.entries.filter((e) => e.told === 'accepted' && e.eventId);
  const events = await rows<{ id: string; processed: boolean; dead: boolean }>(pool,
    `SELECT id, "processedAt" IS NOT NULL AS processed, "deadAt" IS NOT NULL AS dead FROM "Event" WHERE id = ANY($1::uuid[])`,
    [tracked.map((e) => e.eventId)]);
  const eventById = new Map(events.map((r) => [r.id, r]));
  add('accepted event missing from the database', tracked.filter((e) => !eventById.has(e.eventId!)).map((e) => ({ op: e.op, eventId: e.eventId })));
  add('accepted event never processed', events.filter((r) => !r.processed || r.dead));

  // A re-enrollment into a workflow without re-entry is refused, never accepted.
  add('contact enrolled twice into a workflow without re-entry', await rows(pool, `
    SELECT e."workflowId", e."contactId", count(*)::int AS n FROM "WorkflowExecution" e JOIN "Workflow" w ON w.id = e."workflowId"
     WHERE NOT w."allowReentry" GROUP BY 1, 2 HAVING count(*) > 1`));

  // Everything accepted is accounted for: finished (COMPLETED, EXITED, CANCELLED by an
  // audited operator: I8), after the settle's repairs. Anything else is listed.
  add('execution not finished after settling and repairs', await rows(pool, `
    SELECT e.id, e.status, ws.key AS step, s.status AS "stepStatus", e."lastError"
      FROM "WorkflowExecution" e LEFT JOIN "WorkflowStep" ws ON ws.id = e."currentStepId"
      LEFT JOIN "StepExecution" s ON s."executionId" = e.id AND s."stepId" = e."currentStepId"
     WHERE e.status NOT IN ('COMPLETED', 'EXITED', 'CANCELLED')`));

  // Exactly one message per SEND_EMAIL step execution that queued one; none left unsettled.
  add('SEND_EMAIL step execution without exactly one message', await rows(pool, `
    SELECT s.id, (SELECT count(*) FROM "Message" m WHERE m."stepExecutionId" = s.id)::int AS messages
      FROM "StepExecution" s JOIN "WorkflowStep" ws ON ws.id = s."stepId" AND ws.type = 'SEND_EMAIL'
     WHERE s.status = 'COMPLETED' AND (SELECT count(*) FROM "Message" m WHERE m."stepExecutionId" = s.id) <> 1`));
  add('email not SENT after settling (SENDING, QUEUED or FAILED)', await rows(pool, `
    SELECT id, status, "leaseOwner", "leaseExpiresAt", error FROM "Message" WHERE status NOT IN ('SENT', 'ABANDONED')`));

  // The provider's side: each SENT email delivered once, more only after an audited RESEND.
  const ledger = readLedger(opts.ledgerFile);
  const messages = await rows<{ id: string; status: string; resends: number }>(pool, `
    SELECT m.id, m.status::text AS status,
           (SELECT count(*) FROM "AuditEntry" a WHERE a."targetId" = m.id::text AND a.action = 'repair.RESEND' AND a.outcome = 'APPLIED')::int AS resends
      FROM "Message" m`);
  const known = new Set(messages.map((m) => m.id));
  add('email delivered more often than it was (re)sent', messages.filter((m) => (ledger.get(m.id)?.count ?? 0) > 1 + m.resends).map((m) => ({ id: m.id, deliveries: ledger.get(m.id)!.count, resends: m.resends })));
  add('email recorded SENT that the provider never had', messages.filter((m) => m.status === 'SENT' && !ledger.has(m.id)).map((m) => ({ id: m.id })));
  add('delivery of an email the database does not know', [...ledger.keys()].filter((id) => !known.has(id)).map((id) => ({ messageId: id })));

  // Event time decides: an EVENT resolution's event was accepted inside the wait's
  // window [startedAt, dueAt); a TIMEOUT resolution had no matching event in its window.
  add('wait resumed by an event accepted outside its window', await rows(pool, `
    SELECT w.id, w."startedAt", w."dueAt", ev."createdAt" AS "eventAt"
      FROM "StepExecution" w JOIN "WorkflowStep" ws ON ws.id = w."stepId" AND ws.type = 'WAIT_FOR_EVENT'
      LEFT JOIN "Event" ev ON ev.id = w."resumeEventId"
     WHERE w."resolvedBy" = 'EVENT'
       AND (ev.id IS NULL OR ev.name <> ws.config->>'eventName' OR ev."createdAt" < w."startedAt" OR ev."createdAt" >= w."dueAt")`));
  add('wait timed out although its event was accepted inside its window', await rows(pool, `
    SELECT w.id, w."startedAt", w."dueAt", ev.id AS "eventId", ev."createdAt" AS "eventAt"
      FROM "StepExecution" w JOIN "WorkflowStep" ws ON ws.id = w."stepId" AND ws.type = 'WAIT_FOR_EVENT'
      JOIN "WorkflowExecution" e ON e.id = w."executionId"
      JOIN "Event" ev ON ev."contactId" = e."contactId" AND ev."projectId" = e."projectId" AND ev.name = ws.config->>'eventName'
                     AND ev."createdAt" >= w."startedAt" AND ev."createdAt" < w."dueAt"
     WHERE w."resolvedBy" = 'TIMEOUT'`));
  // No wait resolved twice, seen from the path: an execution never took both its EVENT and its TIMEOUT branch.
  add('execution took both branches of a wait', await rows(pool, `
    SELECT a."executionId", te."fromStepId" AS "waitStepId"
      FROM "WorkflowTransition" te
      JOIN "WorkflowTransition" tt ON tt."fromStepId" = te."fromStepId" AND tt.branch = 'TIMEOUT'
      JOIN "StepExecution" a ON a."stepId" = te."toStepId"
      JOIN "StepExecution" b ON b."stepId" = tt."toStepId" AND b."executionId" = a."executionId"
     WHERE te.branch = 'EVENT'`));

  // What the workers heal by themselves (expired leases, due timers, continuations,
  // pending events) they must heal: one left for an operator is a lost guarantee, even
  // though the settle repaired it so the rest could be accounted for.
  add('stuck item the workers should have healed, left for an operator', opts.repairs.filter((r) => r.selfHealing).map((r) => ({ reason: r.reason, itemId: r.itemId, action: r.action, told: r.told })));

  // Every repair the settle applied cleared what it was for.
  const applied = opts.repairs.filter((r) => r.told === 'accepted');
  const stillBad: unknown[] = [];
  for (const r of applied) {
    if (r.messageId) {
      const [m] = await rows<{ status: string }>(pool, `SELECT status::text AS status FROM "Message" WHERE id = $1`, [r.messageId]);
      if (m?.status !== 'SENT') stillBad.push({ ...r, now: m?.status });
    } else if (r.action === 'REDRIVE_EVENT') {
      const [ev] = await rows<{ ok: boolean }>(pool, `SELECT "processedAt" IS NOT NULL AND "deadAt" IS NULL AS ok FROM "Event" WHERE id = $1`, [r.eventId]);
      if (!ev?.ok) stillBad.push(r);
    } else {
      const [e] = await rows<{ status: string }>(pool, `SELECT status::text AS status FROM "WorkflowExecution" WHERE id = $1`, [r.executionId]);
      if (!['COMPLETED', 'EXITED', 'CANCELLED'].includes(e?.status ?? '')) stillBad.push({ ...r, now: e?.status });
    }
  }
  add('repair applied but its target did not clear', stillBad);
  return { violations, invariants };
}
