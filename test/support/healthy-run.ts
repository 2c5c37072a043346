import { expect } from 'vitest';
import type { Db } from '../../server/db';
import { createEngineContext } from '../../server/engine/context';
import type { WorkflowInput } from '../../server/common/workflow-definition';
import { enroll } from '../../server/engine/enrollment';
import { storeEvent, trackEvent } from '../../server/engine/events';
import { checkInvariants, type InvariantResult } from '../../server/engine/invariants';
import { deliverQueuedMessages } from '../../server/engine/sender';
import type { MailTransport } from '../../server/engine/transport';
import { runWorkerOnce } from '../../server/engine/worker';
import { claimEventDispatch, claimQueuedMessages, claimStep, claimWait, failEventDispatch, failStep } from '../../server/engine/claims';
import type { Actor } from '../../server/auth/actor';
import { actorFor, callerFor } from './callers';
import { type TestDatabase } from './database';
import { runStepsOnly } from './drive';
import { createContact, createProject, delayWorkflow, mailWorkflow, waitWorkflow, workflowFrom } from './fixtures';

// A database in every state the engine and its operators leave, made only by the engine
// (enrollment, workers, events, timers, failures, repairs through the tRPC router), for
// the invariant tests (test/engine/invariants.test.ts, invariant-violations.test.ts).

export type Counts = Partial<Record<InvariantResult['id'], number>>;

export async function violations(db: Db, projectId?: string): Promise<Counts> {
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

export interface Healthy {
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
export async function healthyRun(t: TestDatabase): Promise<Healthy> {
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
