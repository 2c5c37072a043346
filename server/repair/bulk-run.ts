import { transaction, type Db } from '../db';
import { writeAudit } from '../engine/audit';
import { applyMany, runMany, type BulkProgress, type BulkRequest } from './bulk';
import type { RepairOptions } from './target';

// A bulk repair run as a whole has one audit entry of its own beside each row's: what
// was asked (the selection as the caller gave it), how many matched, were applied and
// skipped, and whether the run was cut short. It is written however the run ends.

export interface AuditedBulkRequest extends BulkRequest {
  /** The selection as asked for (before a list's filter is resolved to ids), as the entry records it. */
  selection: unknown;
}

interface RunCounts {
  matched: number;
  applied: number;
  done: number;
  interrupted: boolean;
}

/** The audit entry of a bulk run as a whole (each row's repair has its own). */
export async function auditBulkRun(db: Db, req: Pick<AuditedBulkRequest, 'projectId' | 'actor' | 'action' | 'reason' | 'selection'>, run: RunCounts) {
  await transaction(db, 'ENGINE', (tx) =>
    writeAudit(tx, {
      projectId: req.projectId,
      actor: req.actor,
      action: 'repair.applyMany',
      targetType: 'filter',
      targetId: JSON.stringify(req.selection).slice(0, 500),
      outcome: run.applied > 0 ? 'APPLIED' : 'REJECTED',
      reason: req.reason,
      after: { action: req.action, matched: run.matched, applied: run.applied, skipped: run.done - run.applied, interrupted: run.interrupted },
    }),
  );
}

/** applyMany (a dry run counts and is not audited), with the run's own audit entry. */
export async function applyManyAudited(db: Db, req: AuditedBulkRequest & { dryRun: boolean }, opts: RepairOptions) {
  const result = await applyMany(db, req, opts);
  if (!result.dryRun) {
    const applied = result.items.filter((i) => i.outcome === 'APPLIED').length;
    await auditBulkRun(db, req, { matched: result.matched, applied, done: result.items.length, interrupted: result.interrupted });
  }
  return result;
}

/** runMany's progress, and the run's audit entry however it ends: finished, stopped, cut off or failed. */
export async function* runManyAudited(db: Db, req: AuditedBulkRequest, opts: RepairOptions): AsyncGenerator<BulkProgress, void, undefined> {
  const run: RunCounts = { matched: 0, applied: 0, done: 0, interrupted: true };
  try {
    for await (const progress of runMany(db, req, opts)) {
      if (progress.type === 'selected') run.matched = progress.total;
      if (progress.type === 'item') {
        run.done = progress.done;
        if (progress.item.outcome === 'APPLIED') run.applied++;
      }
      if (progress.type === 'finished') run.interrupted = progress.interrupted;
      yield progress;
    }
  } finally {
    await auditBulkRun(db, req, run);
  }
}
