import type { DbTx } from '../db';
import { previewRepair } from './actions';
import type { MigrationRefusal } from './planner';
import type { RepairChoices } from './planner';
import type { RepairOptions } from './target';

// MIGRATE's bulk preview (repair.applyMany with dryRun): the selected executions planned
// one by one, as apply would plan them, and told per group: how many, from which version
// and step to which, whether a pending wait keeps its deadline and look-back, whether an
// email already sent would be sent again, and which cannot be moved and why.

/** How many executions the preview plans one by one; beyond it, the rest are counted, not planned. */
export const MIGRATION_PREVIEW_MAX = 2_000;

export interface MigrationGroup {
  count: number;
  fromVersion: number;
  fromStep: { key: string; name: string };
  toVersion: number | null;
  toStep: { key: string; name: string } | null;
  /** The pending wait keeps its row: its event window's start (look-back) and the new step's timeout. */
  keepsWait: boolean;
  /** keepsWait: how many of them get a deadline other than the one they have. */
  deadlineChanged: number;
  /** Emails these executions already sent that the move would send again (with allowResend; else they are refused). */
  resends: string[];
  allowed: boolean;
  /** Why they cannot be moved (one code per group) and, for the first of them, the sentence. */
  refusal: { code: MigrationRefusal | 'CHANGED'; example: string } | null;
  /** A few of the group's executions, for the operator to open. */
  sample: string[];
}

export async function migrationGroups(
  db: DbTx,
  projectId: string,
  /** The bulk selection (bulk.ts BulkTarget): each execution with the version it had when selected. */
  targets: { executionId: string | null; version: number }[],
  choices: RepairChoices,
  opts: RepairOptions,
): Promise<{ planned: number; groups: MigrationGroup[] }> {
  const groups = new Map<string, MigrationGroup>();
  const planned = targets.filter((t) => t.executionId).slice(0, MIGRATION_PREVIEW_MAX);
  for (const t of planned) {
    const preview = await previewRepair(db, { projectId, action: 'MIGRATE', executionId: t.executionId, choices }, opts).catch(() => null);
    if (!preview || preview.target.kind !== 'execution') continue;
    const { plan, target } = preview;
    const move = plan.migration;
    const changed = preview.expectedVersion !== t.version;
    const code = changed ? 'CHANGED' : plan.allowed ? null : (plan.migrationRefusal ?? 'NOT_ACTIVE');
    const fromStep = target.step ? { key: target.step.key, name: target.step.name } : { key: '—', name: '—' };
    const key = [target.workflowVersionNumber, fromStep.key, move?.toVersion ?? '', move?.toStep.key ?? '', move?.keepsWait ?? '', (move?.resends ?? []).join(','), code ?? 'OK'].join('|');
    let group = groups.get(key);
    if (!group) {
      group = {
        count: 0,
        fromVersion: target.workflowVersionNumber,
        fromStep,
        toVersion: move?.toVersion ?? null,
        toStep: move ? { key: move.toStep.key, name: move.toStep.name } : null,
        keepsWait: move?.keepsWait ?? false,
        deadlineChanged: 0,
        resends: move?.resends ?? [],
        allowed: code === null,
        refusal: code ? { code, example: changed ? 'it changed since it was selected' : plan.refusal! } : null,
        sample: [],
      };
      groups.set(key, group);
    }
    group.count++;
    if (group.sample.length < 5) group.sample.push(target.id);
    const deadline = move?.deadline;
    if (deadline && deadline.before?.getTime() !== deadline.after?.getTime()) group.deadlineChanged++;
  }
  // Movable first, then by size.
  const sorted = [...groups.values()].sort((a, b) => Number(b.allowed) - Number(a.allowed) || b.count - a.count);
  return { planned: planned.length, groups: sorted };
}
