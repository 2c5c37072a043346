import { readFileSync } from 'node:fs';
import type pg from 'pg';
import type { Api, ClientLog } from './api';

// After the faults: let the workers finish what they can (expired leases re-claimed,
// timers fired, continuations and pending events swept), and do what an operator would
// for the rest, through the API: each stuck item gets the repair its reason lists, after
// a preview, with the version the preview showed. Emails whose fate is unknown are
// checked against the provider's ledger first (MARK_SENT if it has them, else RESEND),
// as an operator checking the provider would.

/** Reasons the workers leave to a person. */
const OPERATOR_REASONS = ['FAILED', 'EVENT_DEAD', 'MESSAGE_FAILED', 'MESSAGE_UNCONFIRMED'] as const;
/** Reasons the workers clear themselves; repaired by hand only if they are still listed after SELF_HEAL_PATIENCE_MS. */
const SELF_HEALING = ['LEASE_EXPIRED', 'MISSING_STEP', 'CONTINUATION_PENDING', 'WAIT_OVERDUE', 'EVENT_PENDING'] as const;
const SELF_HEAL_PATIENCE_MS = 30_000;
/** A LEASE_EXPIRED step this many attempts in is a poison step: the workers leave it alone. */
const POISON_ATTEMPTS = 3;

interface StuckItem {
  reason: string;
  itemId: string;
  executionId: string | null;
  eventId: string | null;
  detail: Record<string, unknown>;
}

export interface RepairRecord {
  reason: string;
  action: string;
  itemId: string;
  executionId: string | null;
  messageId: string | null;
  eventId: string | null;
  told: string;
  code?: string;
  /** Why this action: e.g. "the provider's ledger has it". */
  why: string;
  /** A reason the workers should have cleared themselves (and did not, within the patience). */
  selfHealing: boolean;
}

export interface Outstanding {
  activeExecutions: number;
  failedExecutions: number;
  unsettledMessages: number;
  unprocessedEvents: number;
}

export async function outstanding(pool: pg.Pool): Promise<Outstanding> {
  const { rows } = await pool.query<Record<keyof Outstanding, number>>(`
    SELECT (SELECT count(*) FROM "WorkflowExecution" WHERE status IN ('RUNNING', 'WAITING'))::int AS "activeExecutions",
           (SELECT count(*) FROM "WorkflowExecution" WHERE status = 'FAILED')::int AS "failedExecutions",
           (SELECT count(*) FROM "Message" WHERE status IN ('QUEUED', 'SENDING', 'FAILED'))::int AS "unsettledMessages",
           (SELECT count(*) FROM "Event" WHERE "processedAt" IS NULL)::int AS "unprocessedEvents"`);
  return rows[0]!;
}

const settled = (o: Outstanding) => o.activeExecutions + o.failedExecutions + o.unsettledMessages + o.unprocessedEvents === 0;

/** The provider's ledger: deliveries per message id. */
export function readLedger(file: string): Map<string, { count: number; providerId: string }> {
  const map = new Map<string, { count: number; providerId: string }>();
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return map;
  }
  // Workers append to the ledger while the settle phase reads it: a line still being
  // written has no newline yet, and is left for the next read.
  for (const line of text.slice(0, text.lastIndexOf('\n') + 1).split('\n')) {
    if (!line.trim()) continue;
    const { messageId, providerId } = JSON.parse(line) as { messageId: string; providerId: string };
    const seen = map.get(messageId);
    map.set(messageId, { count: (seen?.count ?? 0) + 1, providerId: seen?.providerId ?? providerId });
  }
  return map;
}

function chooseAction(item: StuckItem, ledgerFile: string): { action: string; why: string; providerId?: string } | null {
  switch (item.reason) {
    case 'FAILED':
      return { action: 'RETRY_STEP', why: 'a failed step: retried' };
    case 'EVENT_DEAD':
    case 'EVENT_PENDING':
      return { action: 'REDRIVE_EVENT', why: item.reason === 'EVENT_DEAD' ? 'dead-lettered: redriven' : 'pending past patience: redriven' };
    case 'MESSAGE_FAILED':
    case 'MESSAGE_UNCONFIRMED': {
      const had = readLedger(ledgerFile).get(String(item.detail.messageId));
      return had
        ? { action: 'MARK_SENT', why: 'the provider has it (ledger): recorded sent, nothing sent', providerId: had.providerId }
        : { action: 'RESEND', why: 'the provider does not have it (ledger): sent again' };
    }
    case 'LEASE_EXPIRED':
      return { action: 'RETRY_STEP', why: `lease expired on attempt ${String(item.detail.attempt)}: retried` };
    case 'MISSING_STEP':
      return { action: 'RETRY_STEP', why: 'no worker picked the step up: retried' };
    case 'CONTINUATION_PENDING':
      return { action: 'RESUME_CONTINUATION', why: 'resolved wait never advanced: resumed' };
    case 'WAIT_OVERDUE':
      return { action: 'FORCE_TIMEOUT', why: 'past its timeout and no timer fired: forced' };
  }
  return null;
}

async function repairOne(api: Api, item: StuckItem, ledgerFile: string): Promise<RepairRecord | null> {
  const choice = chooseAction(item, ledgerFile);
  if (!choice) return null;
  const messageId = item.reason.startsWith('MESSAGE_') ? String(item.detail.messageId) : null;
  const target = messageId
    ? { action: choice.action, messageId }
    : choice.action === 'REDRIVE_EVENT'
      ? { action: choice.action, eventId: item.eventId! }
      : { action: choice.action, executionId: item.executionId! };
  const poison = item.reason === 'LEASE_EXPIRED' && Number(item.detail.attempt ?? 0) >= POISON_ATTEMPTS;
  const selfHealing = (SELF_HEALING as readonly string[]).includes(item.reason) && !poison;
  const base = { reason: item.reason, action: choice.action, itemId: item.itemId, executionId: item.executionId, messageId, eventId: item.eventId, why: choice.why, selfHealing };
  const preview = await api.trpc<{ expectedVersion: number; expectedStepExecutionId?: string | null; plan: { allowed: boolean; refusal?: string | null } }>('repair.preview', target, 'query');
  if (preview.told !== 'accepted') return { ...base, told: preview.told, code: preview.code ?? 'PREVIEW' };
  if (!preview.data!.plan.allowed) return { ...base, told: 'refused', code: `NOT_ALLOWED: ${preview.data!.plan.refusal ?? ''}` };
  const a = await api.trpc('repair.applyOne', {
    ...target,
    expectedVersion: preview.data!.expectedVersion,
    ...(preview.data!.expectedStepExecutionId !== undefined ? { expectedStepExecutionId: preview.data!.expectedStepExecutionId } : {}),
    ...(choice.providerId ? { providerId: choice.providerId } : {}),
    reason: `drill settle: ${choice.why}`,
  });
  return { ...base, told: a.told, code: a.code };
}

export interface SettleResult {
  seconds: number;
  settled: boolean;
  left: Outstanding;
  repairs: RepairRecord[];
}

export async function settle(opts: {
  pool: pg.Pool;
  operator: Api;
  log: ClientLog;
  ledgerFile: string;
  maxSeconds: number;
  progress: (line: string) => void;
}): Promise<SettleResult> {
  const t0 = Date.now();
  const repairs: RepairRecord[] = [];
  const attempts = new Map<string, number>();
  let last = await outstanding(opts.pool);
  let lastLine = 0;
  while (Date.now() - t0 < opts.maxSeconds * 1000) {
    last = await outstanding(opts.pool);
    if (settled(last)) break;
    const patient = Date.now() - t0 > SELF_HEAL_PATIENCE_MS;
    const reasons: string[] = [...OPERATOR_REASONS, ...(patient ? SELF_HEALING : ['LEASE_EXPIRED'])];
    for (const reason of reasons) {
      const list = await opts.operator.trpc<{ items: StuckItem[] }>('repair.stuck', { reason, limit: 100 }, 'query');
      if (list.told !== 'accepted') continue;
      for (const item of list.data!.items) {
        if (reason === 'LEASE_EXPIRED' && !patient && Number(item.detail.attempt ?? 0) < POISON_ATTEMPTS) continue;
        const key = `${reason}:${item.itemId}`;
        if ((attempts.get(key) ?? 0) >= 3) continue;
        attempts.set(key, (attempts.get(key) ?? 0) + 1);
        const r = await repairOne(opts.operator, item, opts.ledgerFile);
        if (!r) continue;
        repairs.push(r);
        opts.log.add({ client: 'settle-operator', op: `repair.${r.action}`, told: r.told as never, status: null, code: r.code, executionId: r.executionId ?? undefined, eventId: r.eventId ?? undefined, detail: { reason: r.reason, messageId: r.messageId, why: r.why } });
      }
    }
    if (Date.now() - lastLine > 5_000) {
      lastLine = Date.now();
      opts.progress(`settling: ${last.activeExecutions} active, ${last.failedExecutions} failed executions, ${last.unsettledMessages} emails, ${last.unprocessedEvents} events outstanding; ${repairs.length} repairs so far`);
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
  return { seconds: Math.round((Date.now() - t0) / 1000), settled: settled(last), left: last, repairs };
}
