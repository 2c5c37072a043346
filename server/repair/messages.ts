import { Prisma, type Db, type DbTx } from '../db';
import { writeAudit, type AuditInput } from '../engine/audit';
import {
  abandonMessage,
  markMessageSent,
  readMessageState,
  requeueMessage,
  type MessageClaimResult,
  type MessageState,
  type MessageStatus,
} from '../engine/claims';
import { messageAwaitsOperator } from '../engine/claims/fragments';
import { notifyWorkers } from '../engine/wakeup';
import type { Winner } from './explain';
import { RepairNotFound } from './target';
import { inRepairTransaction, type RepairBusy } from './transaction';

// Repairs of emails whose fate is unknown (MESSAGE_UNCONFIRMED: the sender died while
// SENDING) or that failed (MESSAGE_FAILED). The workers never resend an email by
// themselves (I5: at most once), so a person decides, after checking the provider:
//
//   MARK_SENT  the provider has it: record SENT, send nothing
//   RESEND     back to QUEUED (the same row): a sender delivers it once more, which may
//              be a duplicate if the provider did accept the first attempt
//   GIVE_UP    ABANDONED: never sent again, no longer listed as stuck
//
// Each one is a claim in server/engine/claims/operator.ts, a CAS on the message's status
// and the version the operator saw in the preview; every attempt (applied, lost or
// refused) is audited in the transaction of its change (I8), as action "repair.<ACTION>"
// on the message, with the execution it belongs to.

export const MESSAGE_REPAIR_ACTIONS = ['MARK_SENT', 'RESEND', 'GIVE_UP'] as const;
export type MessageRepairAction = (typeof MESSAGE_REPAIR_ACTIONS)[number];

export function isMessageRepairAction(action: string): action is MessageRepairAction {
  return (MESSAGE_REPAIR_ACTIONS as readonly string[]).includes(action);
}

/** A message as an operator previews it: its state, and where it sits (workflow, step, contact). */
export interface MessageSnapshot extends MessageState {
  kind: 'message';
  workflowId: string;
  workflowName: string;
  contactId: string;
  stepName: string;
  to: string;
  subject: string;
  createdAt: Date;
  /** Its fate is an operator's to decide: the claims' own guard (fragments.ts, messageAwaitsOperator), read with the row. */
  awaitsOperator: boolean;
}

export interface MessagePlan {
  allowed: boolean;
  refusal: string | null;
  change: string;
  sideEffect: { emailMayBeSent: boolean; mayDuplicate: boolean; note: string };
}

export interface MessagePreview {
  action: MessageRepairAction;
  expectedVersion: number;
  target: MessageSnapshot;
  plan: MessagePlan;
}

export type MessageConflict = {
  reason: 'STALE_VERSION';
  currentVersion: number | null;
  status: MessageStatus | null;
  winner: Winner;
};

export type MessageApplyResult =
  | { ok: true; action: MessageRepairAction; messageId: string; executionId: string; version: number; status: MessageStatus; change: string }
  | { ok: false; code: 'CONFLICT'; conflict: MessageConflict }
  | { ok: false; code: 'NOT_ALLOWED'; message: string; target: MessageSnapshot }
  | { ok: false; code: 'NOT_FOUND'; message: string }
  | RepairBusy;

export interface MessageRepairRequest {
  projectId: string;
  action: MessageRepairAction;
  messageId: string;
}

export async function loadMessage(db: DbTx, projectId: string, messageId: string): Promise<MessageSnapshot | null> {
  const rows = await db.$queryRaw<Omit<MessageSnapshot, 'kind'>[]>`
    -- loadMessage
    SELECT m.id, m."projectId", m."executionId", m."stepExecutionId", e."workflowId", w.name AS "workflowName",
           e."contactId", ws.name AS "stepName", m."to", m.subject, m.status::text AS status, m.version,
           m."leaseOwner", m."leaseExpiresAt", m."providerId", m.error, m."createdAt", m."sentAt",
           COALESCE(${messageAwaitsOperator}, false) AS "awaitsOperator"
      FROM "Message" m
      JOIN "WorkflowExecution" e ON e.id = m."executionId"
      JOIN "Workflow" w ON w.id = e."workflowId"
      JOIN "StepExecution" s ON s.id = m."stepExecutionId"
      JOIN "WorkflowStep" ws ON ws.id = s."stepId"
     WHERE m.id = ${messageId}::uuid AND m."projectId" = ${projectId}::uuid`;
  return rows[0] ? { kind: 'message', ...rows[0] } : null;
}

/** Is the action allowed on this message now, and what will it do? (pure) */
export function planMessageAction(action: MessageRepairAction, m: MessageSnapshot): MessagePlan {
  if (!m.awaitsOperator) {
    const why =
      m.status === 'SENDING'
        ? `a sender is delivering this email right now (its lease runs until ${m.leaseExpiresAt?.toISOString() ?? '—'}); wait for the outcome`
        : m.status === 'QUEUED'
          ? 'the email is queued: a sender will deliver it'
          : m.status === 'SENT'
            ? `the email was already sent${m.sentAt ? ` (${m.sentAt.toISOString()})` : ''}`
            : 'the email was given up on already';
    return {
      allowed: false,
      refusal: `only an unconfirmed (SENDING, its sender gone) or FAILED email can be repaired: ${why}`,
      change: 'nothing',
      sideEffect: { emailMayBeSent: false, mayDuplicate: false, note: 'nothing is sent' },
    };
  }
  const fate =
    m.status === 'SENDING'
      ? `its sender (${m.leaseOwner ?? 'unknown'}) stopped renewing its lease (it lapsed ${m.leaseExpiresAt?.toISOString() ?? '—'}): it died, lost the database, or its provider did not answer within the send timeout; the provider may or may not have it`
      : `its last send failed (${m.error ?? 'no error recorded'})`;
  switch (action) {
    case 'MARK_SENT':
      return {
        allowed: true,
        refusal: null,
        change: `record the email "${m.subject}" to ${m.to} as SENT; ${fate}`,
        sideEffect: { emailMayBeSent: false, mayDuplicate: false, note: 'nothing is sent: do this only after checking the provider has it' },
      };
    case 'RESEND':
      return {
        allowed: true,
        refusal: null,
        change: `queue the email "${m.subject}" to ${m.to} again; a sender delivers it once more`,
        sideEffect: {
          emailMayBeSent: true,
          mayDuplicate: true,
          note:
            m.status === 'SENDING'
              ? `WARNING: this may send a duplicate: ${fate}. Check the provider first; if it has the email, use MARK_SENT instead`
              : `WARNING: this may send a duplicate if the provider accepted the email despite the error: ${fate}`,
        },
      };
    case 'GIVE_UP':
      return {
        allowed: true,
        refusal: null,
        change: `give up on the email "${m.subject}" to ${m.to} (ABANDONED): it is never sent again and no longer listed as stuck; ${fate}`,
        sideEffect: { emailMayBeSent: false, mayDuplicate: false, note: 'nothing is sent' },
      };
  }
}

async function loadTarget(db: DbTx, req: MessageRepairRequest): Promise<MessageSnapshot> {
  const m = await loadMessage(db, req.projectId, req.messageId);
  if (!m) throw new RepairNotFound('message not found');
  return m;
}

export async function previewMessageRepair(db: DbTx, req: MessageRepairRequest): Promise<MessagePreview> {
  const target = await loadTarget(db, req);
  return { action: req.action, expectedVersion: target.version, target, plan: planMessageAction(req.action, target) };
}

/** The ids of one execution's emails whose fate waits for an operator: a Message(executionId) lookup. */
export function awaitingMessagesQuery(projectId: string, executionId: string): Prisma.Sql {
  return Prisma.sql`
    -- awaitingMessages
    SELECT m.id FROM "Message" m
     WHERE m."executionId" = ${executionId}::uuid AND m."projectId" = ${projectId}::uuid AND ${messageAwaitsOperator}
     ORDER BY m."createdAt", m.id`;
}

/**
 * The emails of one execution whose fate waits for an operator (unconfirmed or failed),
 * each with what MARK_SENT, RESEND and GIVE_UP would do now: the console's repair panel.
 */
export async function messageRepairOptionsFor(
  db: DbTx,
  projectId: string,
  executionId: string,
): Promise<{ message: MessageSnapshot; expectedVersion: number; actions: { action: MessageRepairAction; plan: MessagePlan }[] }[]> {
  const ids = await db.$queryRaw<{ id: string }[]>(awaitingMessagesQuery(projectId, executionId));
  const out = [];
  for (const { id } of ids) {
    const message = await loadMessage(db, projectId, id);
    if (!message?.awaitsOperator) continue;
    out.push({
      message,
      expectedVersion: message.version,
      actions: MESSAGE_REPAIR_ACTIONS.map((action) => ({ action, plan: planMessageAction(action, message) })),
    });
  }
  return out;
}

/** Who changed the message since the operator looked: another operator (per the audit log), or a sender. */
async function whoChangedMessage(db: DbTx, projectId: string, current: MessageState | null): Promise<Winner> {
  if (!current) return { kind: 'worker', actor: null, action: null, at: null };
  const [audit] = await db.$queryRaw<{ actor: string; action: string; at: Date; version: number | null }[]>`
    -- whoChangedMessage
    SELECT actor, action, at, (after->>'version')::int AS version FROM "AuditEntry"
     WHERE "projectId" = ${projectId}::uuid AND "targetId" = ${current.id} AND "targetType" = 'message' AND outcome = 'APPLIED'
     ORDER BY at DESC LIMIT 1`;
  if (audit && audit.version === current.version) return { kind: 'operator', actor: audit.actor, action: audit.action, at: audit.at };
  return { kind: 'worker', actor: current.leaseOwner, action: null, at: current.sentAt };
}

function stateOf(m: MessageSnapshot) {
  return { status: m.status, version: m.version, executionId: m.executionId, stepExecutionId: m.stepExecutionId, providerId: m.providerId, error: m.error };
}

/**
 * Apply one message repair with the version the operator saw. The change and its audit
 * entry commit together; losing says who changed the message and its state now; a
 * message that is not there is refused NOT_FOUND, audited in the same transaction.
 */
export async function applyMessageRepair(
  db: Db,
  req: MessageRepairRequest & { actor: string; expectedVersion: number; reason: string; providerId?: string | null },
): Promise<MessageApplyResult> {
  const result = await inRepairTransaction(db, async (tx): Promise<MessageApplyResult> => {
    let target: MessageSnapshot;
    try {
      target = await loadTarget(tx, req);
    } catch (error) {
      if (!(error instanceof RepairNotFound)) throw error;
      // Refused, and audited in this transaction: it changed nothing else.
      await writeAudit(tx, {
        projectId: req.projectId,
        actor: req.actor,
        action: `repair.${req.action}`,
        targetType: 'message',
        targetId: req.messageId,
        outcome: 'REJECTED',
        reason: req.reason,
        after: { reason: 'NOT_FOUND', message: error.message },
      });
      return { ok: false, code: 'NOT_FOUND', message: error.message };
    }
    const audit = (outcome: AuditInput['outcome'], after: unknown) =>
      writeAudit(tx, {
        projectId: req.projectId,
        actor: req.actor,
        action: `repair.${req.action}`,
        targetType: 'message',
        targetId: target.id,
        reason: req.reason,
        before: stateOf(target),
        after,
        outcome,
      });
    const lost = async (current: MessageState | null): Promise<MessageApplyResult> => {
      const conflict: MessageConflict = {
        reason: 'STALE_VERSION',
        currentVersion: current?.version ?? null,
        status: current?.status ?? null,
        winner: await whoChangedMessage(tx, req.projectId, current),
      };
      await audit('LOST', { conflict, executionId: target.executionId });
      return { ok: false, code: 'CONFLICT', conflict };
    };

    if (target.version !== req.expectedVersion) return lost(await readMessageState(tx, target.id));
    const plan = planMessageAction(req.action, target);
    if (!plan.allowed) {
      await audit('REJECTED', { refusal: plan.refusal, executionId: target.executionId });
      return { ok: false, code: 'NOT_ALLOWED', message: plan.refusal!, target };
    }
    let claimed: MessageClaimResult;
    switch (req.action) {
      case 'MARK_SENT':
        claimed = await markMessageSent(tx, { messageId: target.id, expectedVersion: req.expectedVersion, providerId: req.providerId ?? null });
        break;
      case 'RESEND':
        claimed = await requeueMessage(tx, { messageId: target.id, expectedVersion: req.expectedVersion });
        break;
      case 'GIVE_UP':
        claimed = await abandonMessage(tx, { messageId: target.id, expectedVersion: req.expectedVersion });
        break;
    }
    if (!claimed.won) return lost(claimed.current);
    await audit('APPLIED', { ...plan, executionId: target.executionId, status: claimed.status, version: claimed.version });
    return {
      ok: true,
      action: req.action,
      messageId: target.id,
      executionId: target.executionId,
      version: claimed.version,
      status: claimed.status,
      change: plan.change,
    };
  }, () => ({
    projectId: req.projectId,
    actor: req.actor,
    action: `repair.${req.action}`,
    targetType: 'message',
    targetId: req.messageId,
    reason: req.reason,
    before: { expectedVersion: req.expectedVersion },
  }));
  // A resent email waits for a sender: wake the workers (best effort; they poll anyway).
  if (result.ok && req.action === 'RESEND') await notifyWorkers(db).catch(() => {});
  return result;
}
