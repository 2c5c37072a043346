import type { Db, DbTx } from '../db';
import { applyRepair, previewRepair, RepairNotFound, type RepairAction, type RepairOptions } from './actions';
import { listStuck, type StuckReason } from './stuck';

// Bulk repair on a filter: first a count (a dry run the operator confirms), then one
// claim per execution at a bounded rate, each reported as applied or skipped with why.
// Every execution is its own transaction, so interrupting the run (abort, crash) leaves
// each one either repaired or untouched, never half-way.

export interface BulkFilter {
  reason?: StuckReason;
  workflowId?: string;
  status?: 'RUNNING' | 'WAITING' | 'FAILED';
  executionIds?: string[];
}

export interface BulkItem {
  executionId: string | null;
  eventId: string | null;
  outcome: 'APPLIED' | 'SKIPPED';
  /** Why it was skipped: it changed since selection, or the action is not allowed in its state. */
  detail: string;
}

export const BULK_MAX = 10_000;

/** The targets a filter selects right now (bounded), as { executionId | eventId }. */
export async function selectTargets(
  db: DbTx,
  projectId: string,
  filter: BulkFilter,
  opts: RepairOptions,
): Promise<{ executionId: string | null; eventId: string | null }[]> {
  if (filter.executionIds?.length) {
    const rows = await db.$queryRaw<{ id: string }[]>`
      SELECT id FROM "WorkflowExecution"
       WHERE "projectId" = ${projectId}::uuid AND id = ANY(${filter.executionIds}::uuid[])
       ORDER BY "startedAt" DESC LIMIT ${BULK_MAX}::int`;
    return rows.map((r) => ({ executionId: r.id, eventId: null }));
  }
  if (filter.reason) {
    const targets: { executionId: string | null; eventId: string | null }[] = [];
    let cursor = null;
    do {
      const page = await listStuck(db, {
        projectId,
        workflowId: filter.workflowId ?? null,
        graceSeconds: opts.graceSeconds,
        reasons: [filter.reason],
        cursor,
        limit: 500,
      });
      targets.push(...page.items.map((i) => ({ executionId: i.executionId, eventId: i.eventId })));
      cursor = page.nextCursor;
    } while (cursor && targets.length < BULK_MAX);
    return targets.slice(0, BULK_MAX);
  }
  if (filter.status) {
    const rows = await db.$queryRaw<{ id: string }[]>`
      SELECT id FROM "WorkflowExecution"
       WHERE "projectId" = ${projectId}::uuid AND status = ${filter.status}::"ExecutionStatus"
         AND (${filter.workflowId ?? null}::uuid IS NULL OR "workflowId" = ${filter.workflowId ?? null}::uuid)
       ORDER BY "startedAt" DESC LIMIT ${BULK_MAX}::int`;
    return rows.map((r) => ({ executionId: r.id, eventId: null }));
  }
  throw new RepairNotFound('a bulk repair needs a filter: a stuck reason, a status or execution ids');
}

/** One target of a bulk repair: preview for the current version, then apply with it. */
async function repairOne(
  db: Db,
  req: { projectId: string; actor: string; action: RepairAction; reason: string },
  target: { executionId: string | null; eventId: string | null },
  opts: RepairOptions,
): Promise<Pick<BulkItem, 'outcome' | 'detail'>> {
  const request = { projectId: req.projectId, action: req.action, executionId: target.executionId, eventId: target.eventId };
  try {
    const preview = await previewRepair(db, request, opts);
    if (!preview.plan.allowed) return { outcome: 'SKIPPED', detail: preview.plan.refusal ?? 'not allowed' };
    const result = await applyRepair(
      db,
      { ...request, actor: req.actor, reason: req.reason, expectedVersion: preview.expectedVersion },
      opts,
    );
    if (result.ok) return { outcome: 'APPLIED', detail: result.change };
    if (result.code === 'CONFLICT') {
      return {
        outcome: 'SKIPPED',
        detail: `changed since selection (${result.conflict.reason}, won by ${result.conflict.winner.kind})`,
      };
    }
    return { outcome: 'SKIPPED', detail: result.message };
  } catch (error) {
    if (error instanceof RepairNotFound) return { outcome: 'SKIPPED', detail: error.message };
    throw error;
  }
}

export async function applyMany(
  db: Db,
  req: {
    projectId: string;
    actor: string;
    action: RepairAction;
    reason: string;
    filter: BulkFilter;
    dryRun: boolean;
    /** Claims per second at most (protects the workers sharing the database). */
    ratePerSecond?: number;
    signal?: AbortSignal;
    /** Called once the targets are selected, before the first claim (progress bars). */
    onSelected?: (total: number) => void | Promise<void>;
    onProgress?: (done: number, total: number) => void;
  },
  opts: RepairOptions,
): Promise<{ matched: number; dryRun: boolean; items: BulkItem[]; interrupted: boolean }> {
  const targets = await selectTargets(db, req.projectId, req.filter, opts);
  if (req.dryRun) {
    return { matched: targets.length, dryRun: true, items: [], interrupted: false };
  }
  await req.onSelected?.(targets.length);
  const gap = 1000 / (req.ratePerSecond ?? 50);
  const items: BulkItem[] = [];
  let last = 0;
  for (const target of targets) {
    if (req.signal?.aborted) return { matched: targets.length, dryRun: false, items, interrupted: true };
    const wait = last + gap - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    last = Date.now();
    items.push({ ...target, ...(await repairOne(db, req, target, opts)) });
    req.onProgress?.(items.length, targets.length);
  }
  return { matched: targets.length, dryRun: false, items, interrupted: false };
}
