import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../server/db';
import { createEngineContext } from '../../server/engine/context';
import type { WorkflowInput } from '../../server/common/workflow-definition';
import { enroll } from '../../server/engine/enrollment';
import { storeEvent, trackEvent } from '../../server/engine/events';
import { checkInvariants, type InvariantResult } from '../../server/engine/invariants';
import { deliverQueuedMessages } from '../../server/engine/sender';
import type { MailTransport } from '../../server/engine/transport';
import { runWorkerOnce } from '../../server/engine/worker';
import {
  claimEventDispatch,
  claimQueuedMessages,
  claimStep,
  claimWait,
  failEventDispatch,
  failStep,
} from '../../server/engine/claims';
import { countStuck } from '../../server/stuck/counts';
import type { Actor } from '../../server/auth/actor';
import { actorFor, callerFor } from '../support/callers';
import { freshDatabase, type TestDatabase } from '../support/database';
import { runStepsOnly } from '../support/drive';
import { createContact, createProject, delayWorkflow, waitWorkflow, workflowFrom } from '../support/fixtures';

// The invariant queries (server/engine/invariants.ts) must see nothing
// wrong on a healthy database full of real executions in every state the engine and its
// operators leave, and each one must fire on a hand-made violation of it. The healthy
// database is made only by the engine (enrollment, workers, events, timers, failures,
// repairs through the tRPC router); each violation is made by hand in a database of its
// own, dropping the index or constraint that would refuse it.

type Counts = Partial<Record<InvariantResult['id'], number>>;

async function violations(db: Db, projectId?: string): Promise<Counts> {
  const results = await checkInvariants(db, { projectId });
  return Object.fromEntries(results.filter((r) => r.violations > 0).map((r) => [r.id, r.violations]));
}

/** trigger -> wait for purchase; EVENT -> thanks; TIMEOUT -> nudge -> thanks (the branches merge). */
function mergingWorkflow(): WorkflowInput {
  return {
    name: `merge-${Math.random().toString(36).slice(2, 8)}`,
    trigger: 'MANUAL',
    allowReentry: true,
    steps: [
      { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
      { key: 'wait', type: 'WAIT_FOR_EVENT', name: 'Wait for purchase', config: { eventName: 'purchase', timeoutSeconds: 3600 } },
      { key: 'nudge', type: 'UPDATE_CONTACT', name: 'Nudge', config: { set: { nudged: true } } },
      { key: 'thanks', type: 'SEND_EMAIL', name: 'Thanks', config: { subject: 'Thanks', body: 'Thanks' } },
    ],
    transitions: [
      { from: 'start', to: 'wait', branch: null },
      { from: 'wait', to: 'thanks', branch: 'EVENT' },
      { from: 'wait', to: 'nudge', branch: 'TIMEOUT' },
      { from: 'nudge', to: 'thanks', branch: null },
    ],
  };
}

function mailWorkflow(): WorkflowInput {
  return {
    name: `mail-${Math.random().toString(36).slice(2, 8)}`,
    trigger: 'MANUAL',
    allowReentry: true,
    steps: [
      { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
      { key: 'mail', type: 'SEND_EMAIL', name: 'Mail', config: { subject: 'Hi', body: 'Hello' } },
    ],
    transitions: [{ from: 'start', to: 'mail', branch: null }],
  };
}

function updateWorkflow(): WorkflowInput {
  return {
    name: `update-${Math.random().toString(36).slice(2, 8)}`,
    trigger: 'MANUAL',
    allowReentry: true,
    steps: [
      { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
      { key: 'tag', type: 'UPDATE_CONTACT', name: 'Tag', config: { set: { tagged: true } } },
      { key: 'mail', type: 'SEND_EMAIL', name: 'Mail', config: { subject: 'Tagged', body: 'Hello' } },
    ],
    transitions: [
      { from: 'start', to: 'tag', branch: null },
      { from: 'tag', to: 'mail', branch: null },
    ],
  };
}

interface Healthy {
  projectId: string;
  operator: Actor;
  /** Executions by what happened to them. */
  ids: Record<string, string>;
  /** Messages by what happened to them. */
  messages: Record<string, string>;
}

/**
 * A database in every state the engine leaves: completed by EVENT and by TIMEOUT (also on
 * merging branches), waiting, delayed, resolved by operators (FORCE_TIMEOUT,
 * DELIVER_EVENT, waits.resolve), a continuation re-driven by RESUME_CONTINUATION, failed,
 * retried (pending and re-run), skipped, cancelled, a lease run out, emails sent, failed,
 * unconfirmed, resent, marked sent and given up on, events processed, pending and dead.
 */
async function healthyRun(t: TestDatabase): Promise<Healthy> {
  const db = t.db;
  const projectId = (await createProject(db)).id;
  const operator = actorFor(projectId, 'OPERATOR');
  const marketer = actorFor(projectId, 'MARKETER');
  const op = callerFor(db, operator);
  const ctx = createEngineContext(db);
  const ids: Record<string, string> = {};
  const messages: Record<string, string> = {};

  const waitWf = await workflowFrom(db, projectId, waitWorkflow({ allowReentry: true }));
  const mergeWf = await workflowFrom(db, projectId, mergingWorkflow());
  const delayWf = await workflowFrom(db, projectId, delayWorkflow(3600, { allowReentry: true }));
  const updateWf = await workflowFrom(db, projectId, updateWorkflow());
  const mailWf = await workflowFrom(db, projectId, mailWorkflow());
  await workflowFrom(db, projectId, { ...delayWorkflow(3600, { allowReentry: true }), trigger: 'EVENT', triggerEvent: 'signup' });

  const contacts: Record<string, string> = {};
  const enrollAs = async (name: string, workflowId: string) => {
    contacts[name] ??= (await createContact(db, projectId, `${name}@example.com`)).id;
    const r = await enroll(db, { projectId, workflowId, contactId: contacts[name] });
    if (!r.ok) throw new Error(`enroll ${name}: ${r.reason}`);
    ids[name] = r.executionId;
    return r.executionId;
  };
  const waitRowOf = async (executionId: string) => {
    const [row] = await t.query(`SELECT id FROM "StepExecution" WHERE "executionId" = $1 AND status = 'WAITING'`, [executionId]);
    return row.id as string;
  };
  const versionOf = async (executionId: string) => {
    const [row] = await t.query(`SELECT version FROM "WorkflowExecution" WHERE id = $1`, [executionId]);
    return row.version as number;
  };
  const repair = async (name: string, action: 'FORCE_TIMEOUT' | 'DELIVER_EVENT' | 'RETRY_STEP' | 'SKIP_STEP' | 'CANCEL' | 'RESUME_CONTINUATION', eventId?: string) => {
    const preview = await op.repair.preview({ executionId: ids[name]!, action, ...(eventId ? { eventId } : {}) });
    expect(preview.plan.allowed, `${action} on ${name}: ${preview.plan.refusal}`).toBe(true);
    const result = await op.repair.applyOne({
      executionId: ids[name]!,
      action,
      expectedVersion: preview.expectedVersion,
      reason: `healthy run: ${action}`,
      ...(eventId ? { eventId } : {}),
    });
    expect(result.ok).toBe(true);
  };

  // Waits: by event, by timeout, on diverging and on merging branches.
  for (const name of ['evt1', 'evt2', 'tmo1', 'tmo2', 'force', 'deliver', 'resolveApi', 'cancelWait', 'continuation', 'waiting'])
    await enrollAs(name, waitWf.id);
  for (const name of ['mergeEvt', 'mergeTmo']) await enrollAs(name, mergeWf.id);
  for (const name of ['delayed', 'skipDelay']) await enrollAs(name, delayWf.id);
  await runWorkerOnce(ctx);

  for (const name of ['evt1', 'evt2', 'mergeEvt']) {
    const r = await trackEvent(ctx, { projectId, name: 'purchase', contactId: contacts[name] });
    expect(r.ok).toBe(true);
  }
  await t.query(
    `UPDATE "StepExecution" SET "dueAt" = now() - interval '1 second' WHERE status = 'WAITING' AND "executionId" = ANY($1::uuid[])`,
    [[ids.tmo1, ids.tmo2, ids.mergeTmo, ids.continuation]],
  );
  // A timer that dies between resolving a wait and advancing it: the continuation is
  // left for an operator, who re-drives it.
  const cont = await claimWait(db, { stepExecutionId: await waitRowOf(ids.continuation!), resolvedBy: 'TIMEOUT', branch: 'TIMEOUT' });
  expect(cont.won).toBe(true);
  await runWorkerOnce(ctx);
  await repair('continuation', 'RESUME_CONTINUATION');

  // Operators resolve waits: FORCE_TIMEOUT, DELIVER_EVENT (with an event of the contact), waits.resolve.
  await repair('force', 'FORCE_TIMEOUT');
  // The contact's event, accepted but not dispatched yet: the operator delivers it.
  const stored = await storeEvent(db, { projectId, name: 'purchase', contactId: contacts.deliver }, 3600);
  if (!stored.ok) throw new Error('event');
  await repair('deliver', 'DELIVER_EVENT', stored.eventId);
  const resolved = await callerFor(db, marketer).waits.resolve({
    stepExecutionId: await waitRowOf(ids.resolveApi!),
    outcome: 'TIMEOUT',
    expectedVersion: await versionOf(ids.resolveApi!),
  });
  expect(resolved.branch).toBe('TIMEOUT');
  await repair('cancelWait', 'CANCEL');
  await repair('skipDelay', 'SKIP_STEP');

  // Failures: a step fails for good; retried (re-run, and left pending), skipped, cancelled, left failed.
  for (const name of ['retried', 'retryPending', 'skipped', 'cancelled', 'failed']) {
    const executionId = await enrollAs(name, updateWf.id);
    const c = await claimStep(db, { executionId, expectedVersion: 1, leaseSeconds: 30 });
    if (!c.won || !('claim' in c)) throw new Error('claim');
    const failed = await failStep(db, c.claim, { error: 'provider rejected the update', retryInSeconds: null });
    expect(failed.won).toBe(true);
  }
  await repair('retried', 'RETRY_STEP');
  await repair('skipped', 'SKIP_STEP');
  await repair('cancelled', 'CANCEL');
  await runWorkerOnce(ctx);

  // Emails: sent, failed, unconfirmed (the sender died mid-send), resent, marked sent, given up on.
  const down: MailTransport = { name: 'down', send: async () => Promise.reject(new Error('421 try later')) };
  for (const name of ['mailFailed', 'mailResent', 'mailGivenUp', 'mailUnconfirmed', 'mailMarked']) {
    const executionId = await enrollAs(name, mailWf.id);
    await runStepsOnly(db);
    const [m] = await t.query(`SELECT id FROM "Message" WHERE "executionId" = $1`, [executionId]);
    messages[name] = m.id;
    if (name === 'mailUnconfirmed' || name === 'mailMarked') {
      await claimQueuedMessages(db, { owner: 'worker:dead', leaseSeconds: 0, limit: 1 });
    } else {
      await deliverQueuedMessages(createEngineContext(db, { transport: down }), { from: 'x@example.com', limit: 1 });
    }
  }
  const messageRepair = async (name: string, action: 'MARK_SENT' | 'RESEND' | 'GIVE_UP') => {
    const preview = await op.repair.preview({ action, messageId: messages[name]! });
    const result = await op.repair.applyOne({ action, messageId: messages[name]!, expectedVersion: preview.expectedVersion, reason: `healthy run: ${action}` });
    expect(result.ok).toBe(true);
  };
  await messageRepair('mailResent', 'RESEND');
  await messageRepair('mailGivenUp', 'GIVE_UP');
  await messageRepair('mailMarked', 'MARK_SENT');

  // Events: processed (enrolling, resuming), pending, dead-lettered.
  await trackEvent(ctx, { projectId, name: 'signup', contactId: contacts.evt1 });
  await storeEvent(db, { projectId, name: 'browse', contactId: contacts.waiting }, 3600);
  const dead = await storeEvent(db, { projectId, name: 'browse', contactId: contacts.delayed }, 3600);
  if (!dead.ok) throw new Error('event');
  const lease = await claimEventDispatch(db, { eventId: dead.eventId, owner: 'sweeper:1', leaseSeconds: 30 });
  expect(lease).not.toBeNull();
  expect(await failEventDispatch(db, { eventId: dead.eventId, owner: 'sweeper:1', error: 'boom', maxAttempts: 1 })).toEqual({ dead: true });

  await runWorkerOnce(ctx);

  // Left for later, after the last worker pass: a retry no worker has picked up yet, and
  // a worker that died holding its step (its lease ran out: LEASE_EXPIRED).
  await repair('retryPending', 'RETRY_STEP');
  const stalled = await enrollAs('stalled', updateWf.id);
  const held = await claimStep(db, { executionId: stalled, expectedVersion: 1, leaseSeconds: 0 });
  expect(held.won).toBe(true);
  return { projectId, operator, ids, messages };
}

describe('invariant queries on a healthy run', () => {
  let t: TestDatabase;
  let run: Healthy;
  beforeAll(async () => {
    t = await freshDatabase();
    run = await healthyRun(t);
  }, 120_000);
  afterAll(async () => t?.drop());

  it('the run left executions, steps, emails and events in every state', async () => {
    const statuses = await t.query(`SELECT DISTINCT status::text AS s FROM "WorkflowExecution"`);
    expect(statuses.map((r) => r.s).sort()).toEqual(['CANCELLED', 'COMPLETED', 'FAILED', 'RUNNING', 'WAITING']);
    const resolvers = await t.query(`SELECT DISTINCT "resolvedBy"::text AS r FROM "StepExecution" WHERE "resolvedBy" IS NOT NULL`);
    expect(resolvers.map((r) => r.r).sort()).toEqual(['EVENT', 'OPERATOR', 'TIMEOUT']);
    const steps = await t.query(`SELECT DISTINCT status::text AS s FROM "StepExecution"`);
    expect(steps.map((r) => r.s).sort()).toEqual(['COMPLETED', 'FAILED', 'PENDING', 'RUNNING', 'SKIPPED', 'WAITING']);
    const mail = await t.query(`SELECT DISTINCT status::text AS s FROM "Message"`);
    expect(mail.map((r) => r.s).sort()).toEqual(['ABANDONED', 'FAILED', 'SENDING', 'SENT']);
    const stuck = await countStuck(t.db, { projectId: run.projectId, graceSeconds: 0 });
    expect(stuck).toMatchObject({ FAILED: 1, EVENT_DEAD: 1, MESSAGE_UNCONFIRMED: 1, MESSAGE_FAILED: 1 });
    // The merging branches were both taken, by different executions: EVENT -> thanks, TIMEOUT -> nudge -> thanks.
    const merged = await t.query(
      `SELECT e.id, array_agg(ws.key ORDER BY s."startedAt", ws.key) AS keys FROM "WorkflowExecution" e
         JOIN "StepExecution" s ON s."executionId" = e.id JOIN "WorkflowStep" ws ON ws.id = s."stepId"
        WHERE e.id = ANY($1::uuid[]) GROUP BY e.id`,
      [[run.ids.mergeEvt, run.ids.mergeTmo]],
    );
    const byId = Object.fromEntries(merged.map((r) => [r.id, r.keys]));
    expect(byId[run.ids.mergeEvt!]).toEqual(['start', 'wait', 'thanks']);
    expect(byId[run.ids.mergeTmo!]).toEqual(['start', 'wait', 'nudge', 'thanks']);
  });

  it('invariant queries see nothing wrong on a healthy run', async () => {
    expect(await violations(t.db)).toEqual({});
  });

  it('I1, I2, I3 and I5 are proven by their unique indexes while those are in place, and counted when one is not exactly it', async () => {
    const proof = async (db: Db) => Object.fromEntries((await checkInvariants(db)).map((r) => [r.id, r.provenBy]));
    expect(await proof(t.db)).toEqual({
      I1: 'WorkflowExecution_active_workflowId_contactId_key',
      I2: 'StepExecution_executionId_stepId_key',
      I3: 'WorkflowExecution_workflowId_sourceEventId_key',
      I4: null,
      I5: 'Message_stepExecutionId_key',
      I6: null,
      I7: null,
      I8: null,
    });
    // An index of the same name that does not enforce the same thing proves nothing.
    const replaced = [
      // not unique
      [`DROP INDEX "Message_stepExecutionId_key"`, `CREATE INDEX "Message_stepExecutionId_key" ON "Message" ("stepExecutionId")`],
      // another predicate
      [
        `DROP INDEX "WorkflowExecution_active_workflowId_contactId_key"`,
        `CREATE UNIQUE INDEX "WorkflowExecution_active_workflowId_contactId_key" ON "WorkflowExecution" ("workflowId", "contactId") WHERE status = 'RUNNING'`,
      ],
      // other columns
      [
        `DROP INDEX "StepExecution_executionId_stepId_key"`,
        `CREATE UNIQUE INDEX "StepExecution_executionId_stepId_key" ON "StepExecution" ("stepId", "executionId")`,
      ],
      // gone
      [`DROP INDEX "WorkflowExecution_workflowId_sourceEventId_key"`],
    ];
    const expected = ['I5', 'I1', 'I2', 'I3'];
    for (const [i, sql] of replaced.entries()) {
      class Rollback extends Error {}
      await t.db
        .$transaction(async (tx) => {
          for (const statement of sql) await tx.$executeRawUnsafe(statement);
          const results = await checkInvariants(tx as unknown as Db);
          const counted = results.find((r) => r.id === expected[i])!;
          expect(counted, expected[i]).toMatchObject({ provenBy: null, violations: 0 });
          throw new Rollback();
        })
        .catch((e: unknown) => {
          if (!(e instanceof Rollback)) throw e;
        });
    }
  });
});

describe('each invariant query fires on a hand-made violation', () => {
  let t: TestDatabase;
  let run: Healthy;
  /** A second, healthy project: a violation of the first is never counted in its health panel. */
  let bystander: Healthy;
  beforeAll(async () => {
    t = await freshDatabase();
    // The bystander first: a run drives every project's due work, and the states the
    // violations below are made from must be the ones the main run left.
    bystander = await healthyRun(t);
    run = await healthyRun(t);
    expect(await violations(t.db)).toEqual({});
  }, 240_000);
  afterAll(async () => t?.drop());

  /** Make a violation in a transaction, check the counts, and roll it back. */
  async function violated(sql: string[], params: unknown[][] = []): Promise<Counts> {
    let counts: Counts = {};
    await t.db
      .$transaction(async (tx) => {
        for (let i = 0; i < sql.length; i++) await tx.$executeRawUnsafe(sql[i]!, ...(params[i] ?? []));
        counts = await violationsIn(tx as unknown as Db);
        // health.invariants counts the caller's project only: the
        // violated project sees all of it, the other project none of it.
        expect(await violationsIn(tx as unknown as Db, run.projectId), 'in the violated project').toEqual(counts);
        expect(await violationsIn(tx as unknown as Db, bystander.projectId), 'in another project').toEqual({});
        throw new Rollback();
      })
      .catch((e: unknown) => {
        if (!(e instanceof Rollback)) throw e;
      });
    expect(await violations(t.db), 'rolled back').toEqual({});
    return counts;
  }
  class Rollback extends Error {}
  const violationsIn = violations;

  const exec = (name: string) => run.ids[name]!;

  it('I1: two active executions of one (workflow, contact)', async () => {
    expect(
      await violated(
        [
          `DROP INDEX "WorkflowExecution_active_workflowId_contactId_key"`,
          `INSERT INTO "WorkflowExecution"(id, "projectId", "workflowId", "contactId", status, "currentStepId", "readyAt", "updatedAt")
           SELECT gen_random_uuid(), "projectId", "workflowId", "contactId", status, "currentStepId", "readyAt", now()
             FROM "WorkflowExecution" WHERE id = $1::uuid`,
        ],
        [[], [exec('stalled')]],
      ),
    ).toEqual({ I1: 1 });
  });

  it('I2: a second step row for one (execution, step)', async () => {
    expect(
      await violated(
        [
          `DROP INDEX "StepExecution_executionId_stepId_key"`,
          `INSERT INTO "StepExecution"(id, "executionId", "stepId", status, "finishedAt")
           SELECT gen_random_uuid(), s."executionId", s."stepId", 'COMPLETED', now() FROM "StepExecution" s
             JOIN "WorkflowStep" ws ON ws.id = s."stepId" AND ws.type = 'TRIGGER'
            WHERE s."executionId" = $1::uuid`,
        ],
        [[], [exec('evt1')]],
      ),
    ).toEqual({ I2: 1 });
  });

  it('I3: one source event enrolled twice in a workflow', async () => {
    expect(
      await violated(
        [
          `DROP INDEX "WorkflowExecution_workflowId_sourceEventId_key"`,
          `DROP INDEX "WorkflowExecution_active_workflowId_contactId_key"`,
          `INSERT INTO "WorkflowExecution"(id, "projectId", "workflowId", "contactId", status, "sourceEventId", "finishedAt", "updatedAt")
           SELECT gen_random_uuid(), "projectId", "workflowId", "contactId", 'COMPLETED', "sourceEventId", now(), now()
             FROM "WorkflowExecution" WHERE "sourceEventId" IS NOT NULL AND "projectId" = $1::uuid LIMIT 1`,
        ],
        [[], [], [run.projectId]],
      ),
    ).toEqual({ I3: 1 });
  });

  it('I4: a wait resolved by TIMEOUT that took the EVENT branch', async () => {
    expect(
      await violated([`UPDATE "StepExecution" SET "resolvedBranch" = 'EVENT' WHERE "executionId" = $1::uuid AND "resolvedBy" = 'TIMEOUT'`], [[exec('tmo1')]]),
    ).toEqual({ I4: 1 });
  });

  it('I4: a wait whose resolver was overwritten after it completed (the event and the timer both resolved it)', async () => {
    expect(
      await violated([`UPDATE "StepExecution" SET "resolvedBy" = 'TIMEOUT', "resolvedBranch" = 'TIMEOUT', "resumeEventId" = NULL WHERE "executionId" = $1::uuid AND "resolvedBy" = 'EVENT'`], [[exec('evt2')]]),
    ).toEqual({ I4: 1 });
  });

  it('I4: a wait resolved by its event and, as well, forced by an operator (two resolutions)', async () => {
    expect(
      await violated(
        [
          `INSERT INTO "AuditEntry"(id, "projectId", actor, action, "targetType", "targetId", reason, before, after, outcome)
           SELECT gen_random_uuid(), "projectId", 'user:late', 'repair.FORCE_TIMEOUT', 'execution', id::text, 'late',
                  jsonb_build_object('step', 'wait', 'version', version), jsonb_build_object('version', version + 2), 'APPLIED'
             FROM "WorkflowExecution" WHERE id = $1::uuid`,
        ],
        [[exec('evt1')]],
      ),
    ).toEqual({ I4: 1 });
  });

  it('I4: a wait forced twice by operators', async () => {
    expect(
      await violated(
        [
          `INSERT INTO "AuditEntry"(id, "projectId", actor, action, "targetType", "targetId", reason, before, after, outcome)
           SELECT gen_random_uuid(), "projectId", 'user:twice', action, "targetType", "targetId", reason, before, after, outcome
             FROM "AuditEntry" WHERE "targetId" = $1 AND action = 'repair.FORCE_TIMEOUT' AND outcome = 'APPLIED'`,
        ],
        [[exec('force')]],
      ),
    ).toEqual({ I4: 1 });
  });

  it('I4: a wait completed with no resolver', async () => {
    expect(
      await violated(
        [`UPDATE "StepExecution" SET "resolvedBy" = NULL, "resolvedAt" = NULL, "resolvedBranch" = NULL, output = '{}' WHERE "executionId" = $1::uuid AND "resolvedBy" = 'TIMEOUT'`],
        [[exec('tmo2')]],
      ),
    ).toEqual({ I4: 1 });
  });

  it('I5: two messages for one step execution', async () => {
    expect(
      await violated(
        [
          `DROP INDEX "Message_stepExecutionId_key"`,
          `INSERT INTO "Message"(id, "projectId", "executionId", "stepExecutionId", "to", subject, body, status)
           SELECT gen_random_uuid(), "projectId", "executionId", "stepExecutionId", "to", subject, body, 'QUEUED' FROM "Message" WHERE id = $1::uuid`,
        ],
        [[], [run.messages.mailResent]],
      ),
    ).toEqual({ I5: 1 });
  });

  it('I6: a step row still WAITING after its execution moved on', async () => {
    expect(
      await violated([`UPDATE "StepExecution" SET status = 'WAITING' WHERE "executionId" = $1::uuid AND "resolvedBy" IS NOT NULL`], [[exec('evt1')]]),
    ).toEqual({ I6: 1 });
  });

  it('I7: a RUNNING execution with no wake-up time', async () => {
    expect(await violated([`UPDATE "WorkflowExecution" SET "readyAt" = NULL WHERE id = $1::uuid`], [[exec('stalled')]])).toEqual({ I7: 1 });
  });

  it('I7: an accepted event that is in no visible state (processed and dead-lettered at once)', async () => {
    expect(await violated([`UPDATE "Event" SET "processedAt" = now() WHERE "deadAt" IS NOT NULL AND "projectId" = $1::uuid`], [[run.projectId]])).toEqual({
      I7: 1,
    });
  });

  it('I7: an email left SENDING with no lease (never listed, never taken)', async () => {
    expect(await violated([`UPDATE "Message" SET "leaseExpiresAt" = NULL WHERE id = $1::uuid`], [[run.messages.mailUnconfirmed]])).toEqual({ I7: 1 });
  });

  it('I7: a SEND_EMAIL step recorded as queued whose email is gone', async () => {
    expect(await violated([`DELETE FROM "Message" WHERE id = $1::uuid`], [[run.messages.mailResent]])).toEqual({ I7: 1 });
  });

  it('I8: a cancelled execution whose only audit entry is another one (its enrollment)', async () => {
    expect(
      await violated(
        [
          `DELETE FROM "AuditEntry" WHERE "targetId" = $1 AND action = 'repair.CANCEL'`,
          `INSERT INTO "AuditEntry"(id, "projectId", actor, action, "targetType", "targetId", outcome)
           SELECT gen_random_uuid(), "projectId", 'user:x', 'enrollments.enroll', 'execution', id::text, 'APPLIED' FROM "WorkflowExecution" WHERE id = $1::uuid`,
        ],
        [[exec('cancelled')], [exec('cancelled')]],
      ),
    ).toEqual({ I8: 1 });
  });

  it('I8: a wait resolved by an operator with no entry for that resolution (only other repairs audited)', async () => {
    expect(
      await violated(
        [
          `UPDATE "AuditEntry" SET action = 'repair.RETRY_STEP' WHERE "targetId" = $1 AND action = 'repair.FORCE_TIMEOUT'`,
        ],
        [[exec('force')]],
      ),
    ).toEqual({ I8: 1 });
  });

  it('I8: a wait resolved by an operator through waits.resolve with no entry', async () => {
    expect(await violated([`DELETE FROM "AuditEntry" WHERE "targetId" = $1 AND action = 'waits.resolve'`], [[exec('resolveApi')]])).toEqual({ I8: 1 });
  });

  it('I8: a skipped step with no SKIP_STEP entry', async () => {
    expect(await violated([`DELETE FROM "AuditEntry" WHERE "targetId" = $1 AND action = 'repair.SKIP_STEP'`], [[exec('skipped')]])).toEqual({ I8: 1 });
  });

  it('I8: a step reset for a retry with no RETRY_STEP entry', async () => {
    expect(await violated([`DELETE FROM "AuditEntry" WHERE "targetId" = $1 AND action = 'repair.RETRY_STEP'`], [[exec('retryPending')]])).toEqual({ I8: 1 });
  });

  it('I8: an email given up on with no GIVE_UP entry', async () => {
    expect(await violated([`DELETE FROM "AuditEntry" WHERE "targetId" = $1 AND action = 'repair.GIVE_UP'`], [[run.messages.mailGivenUp]])).toEqual({ I8: 1 });
  });
});
