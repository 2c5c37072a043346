import { Prisma, type Db, type DbTx } from '../db';
import { findWaitsWithInWindowEvents } from '../engine/claims';
import { applyRepair } from './actions';
import { applyMessageRepair, isMessageRepairAction, type MessageRepairAction } from './messages';
import type { ActiveExecutionConflict, RepairAction, RepairChoices } from './planner';
import { MESSAGE_REASONS, type StuckReason } from '../common/stuck-reasons';
import { listStuck } from '../stuck/list';
import type { StuckItem } from '../stuck/predicates';
import { migrationGroups } from './migration-groups';
import { RepairNotFound, type RepairOptions } from './target';

// Bulk repair on a filter: first a count (a dry run the operator confirms), then one
// claim per execution at a bounded rate, each fenced by the version and step execution
// the row had when selected, and reported as applied, skipped because it changed since
// (SKIPPED_CHANGED), or refused with why (SKIPPED).
// Every execution is its own transaction, so interrupting the run (abort, crash) leaves
// each one either repaired or untouched, never half-way.

export interface BulkFilter {
  reason?: StuckReason;
  workflowId?: string;
  /**
   * With a reason, one stuck group (stuckGroups): its step (null: items without one, such
   * as events) and its normalised error (null: items without an error). Undefined: any.
   */
  stepId?: string | null;
  errorPattern?: string | null;
  status?: 'RUNNING' | 'WAITING' | 'FAILED';
  executionIds?: string[];
  /** The active executions standing at this step (of one version): the publish dialog's "move them" (MIGRATE). */
  atStep?: string;
}

/** What became of one selected row. */
export type BulkOutcome =
  /** Repaired. */
  | 'APPLIED'
  /** Left alone: it changed since it was selected (another version or another step execution). */
  | 'SKIPPED_CHANGED'
  /** Left alone: the action is refused in its state (see detail, and conflict for ACTIVE_EXECUTION). */
  | 'SKIPPED';

export interface BulkItem {
  executionId: string | null;
  eventId: string | null;
  /** The email, for the message repairs (MARK_SENT, RESEND, GIVE_UP) of a MESSAGE_* group. */
  messageId: string | null;
  outcome: BulkOutcome;
  /** What was done, or why not. */
  detail: string;
  /** A row refused because repairing it would make a second active execution (I1). */
  conflict?: ActiveExecutionConflict;
}

/**
 * One selected row, as it was when selected: the version and the step execution the
 * repair is fenced by. An execution that has moved on since (a newer wait, a newer step)
 * is reported SKIPPED_CHANGED, never repaired in its new state.
 */
export interface BulkTarget {
  executionId: string | null;
  eventId: string | null;
  /** A MESSAGE_* row: the email (its version is then the message's). */
  messageId?: string | null;
  /** The execution's version (an event's: its dispatch attempts; a message's: its own) at selection. */
  version: number;
  /** The execution's current step execution at selection (null: the step had no row); null for events. */
  stepExecutionId: string | null;
}

export const BULK_MAX = 10_000;

/** An execution's or event's repair, or (for a MESSAGE_* group) an email's. */
export type BulkAction = RepairAction | MessageRepairAction;

interface SelectedRow {
  id: string;
  version: number;
  stepExecutionId: string | null;
}

/** Executions with the version and current step execution they have right now. */
function selectExecutions(db: DbTx, where: Prisma.Sql): Promise<SelectedRow[]> {
  return db.$queryRaw<SelectedRow[]>`
    -- bulkSelectExecutions
    SELECT e.id, e.version, s.id AS "stepExecutionId"
      FROM "WorkflowExecution" e
      LEFT JOIN "StepExecution" s ON s."executionId" = e.id AND s."stepId" = e."currentStepId"
     WHERE ${where}
     ORDER BY e."startedAt" DESC LIMIT ${BULK_MAX}::int`;
}

const asTarget = (r: SelectedRow): BulkTarget => ({ executionId: r.id, eventId: null, version: r.version, stepExecutionId: r.stepExecutionId });

/** The targets a filter selects right now (bounded), each with the version and step execution it has now. */
export async function selectTargets(
  db: DbTx,
  projectId: string,
  filter: BulkFilter,
  opts: RepairOptions,
): Promise<BulkTarget[]> {
  if (filter.executionIds) {
    if (filter.executionIds.length === 0) return [];
    const rows = await selectExecutions(db, Prisma.sql`e."projectId" = ${projectId}::uuid AND e.id = ANY(${filter.executionIds}::uuid[])`);
    return rows.map(asTarget);
  }
  if (filter.reason) {
    const items: StuckItem[] = [];
    let cursor = null;
    do {
      const page = await listStuck(db, {
        projectId,
        workflowId: filter.workflowId ?? null,
        graceSeconds: opts.graceSeconds,
        reasons: [filter.reason],
        ...(filter.stepId !== undefined ? { stepId: filter.stepId } : {}),
        ...(filter.errorPattern !== undefined ? { errorPattern: filter.errorPattern } : {}),
        cursor,
        limit: 500,
      });
      items.push(...page.items);
      cursor = page.nextCursor;
    } while (cursor && items.length < BULK_MAX);
    const selected = items.slice(0, BULK_MAX);
    // A stuck item carries the version its predicate saw. The execution's current step
    // execution is read with it (an item's own stepExecutionId may be another step's: a
    // message's); it belongs to the listed version only if the version has not moved, and
    // if it has, the row has changed since selection anyway.
    const executionIds = selected.filter((item) => item.executionId).map((item) => item.executionId!);
    const now = new Map(
      (executionIds.length
        ? await selectExecutions(db, Prisma.sql`e."projectId" = ${projectId}::uuid AND e.id = ANY(${executionIds}::uuid[])`)
        : []
      ).map((execution) => [execution.id, execution]),
    );
    const targets: BulkTarget[] = [];
    const seen = new Set<string>();
    if (MESSAGE_REASONS.includes(filter.reason)) {
      // Email rows: one target per message, fenced by the message's own version.
      return selected.flatMap((item) => {
        const d = item.detail as { messageId?: string; messageVersion?: unknown };
        return d.messageId && typeof d.messageVersion === 'number'
          ? [{ executionId: item.executionId, eventId: null, messageId: d.messageId, version: d.messageVersion, stepExecutionId: null }]
          : [];
      });
    }
    for (const item of selected) {
      // An execution (or event) listed twice for one reason (two of its emails failed,
      // say) is repaired once.
      const key = item.executionId ?? item.eventId;
      if (!key || seen.has(key)) continue;
      seen.add(key);
      const detail = item.detail as { version?: unknown };
      const listedVersion = typeof detail.version === 'number' ? detail.version : null;
      if (!item.executionId) {
        if (item.eventId && listedVersion !== null) targets.push({ executionId: null, eventId: item.eventId, version: listedVersion, stepExecutionId: null });
        continue;
      }
      const row = now.get(item.executionId);
      if (!row) continue;
      const version = listedVersion ?? row.version;
      targets.push({ executionId: item.executionId, eventId: item.eventId, version, stepExecutionId: row.version === version ? row.stepExecutionId : null });
    }
    return targets;
  }
  if (filter.atStep) {
    const rows = await selectExecutions(
      db,
      Prisma.sql`e."projectId" = ${projectId}::uuid AND e."currentStepId" = ${filter.atStep}::uuid AND e.status IN ('RUNNING', 'WAITING')
         AND (${filter.workflowId ?? null}::uuid IS NULL OR e."workflowId" = ${filter.workflowId ?? null}::uuid)`,
    );
    return rows.map(asTarget);
  }
  if (filter.status) {
    const rows = await selectExecutions(
      db,
      Prisma.sql`e."projectId" = ${projectId}::uuid AND e.status = ${filter.status}::"ExecutionStatus"
         AND (${filter.workflowId ?? null}::uuid IS NULL OR e."workflowId" = ${filter.workflowId ?? null}::uuid)`,
    );
    return rows.map(asTarget);
  }
  throw new RepairNotFound('a bulk repair needs a filter: a stuck reason, a status, a step (atStep) or execution ids');
}

/**
 * One target of a bulk repair, fenced by what was selected: the version and step
 * execution of the selection, not whatever the row has become since.
 */
async function repairOne(
  db: Db,
  req: { projectId: string; actor: string; action: BulkAction; reason: string; choices?: RepairChoices | undefined },
  target: BulkTarget,
  opts: RepairOptions,
): Promise<Pick<BulkItem, 'outcome' | 'detail' | 'conflict'>> {
  if (isMessageRepairAction(req.action)) {
    if (!target.messageId) return { outcome: 'SKIPPED', detail: `${req.action} repairs an email; this row is not one` };
    const result = await applyMessageRepair(db, {
      projectId: req.projectId,
      action: req.action,
      messageId: target.messageId,
      actor: req.actor,
      reason: req.reason,
      expectedVersion: target.version,
    });
    if (result.ok) return { outcome: 'APPLIED', detail: result.change };
    if (result.code === 'CONFLICT') return { outcome: 'SKIPPED_CHANGED', detail: 'the email changed since selection; left alone' };
    return { outcome: 'SKIPPED', detail: result.message };
  }
  if (target.messageId) return { outcome: 'SKIPPED', detail: `an email's row: repair it with MARK_SENT, RESEND or GIVE_UP, not ${req.action}` };
  const action = req.action;
  try {
    const result = await applyRepair(
      db,
      {
        projectId: req.projectId,
        action,
        executionId: target.executionId,
        eventId: target.eventId,
        ...(req.choices ? { choices: req.choices } : {}),
        actor: req.actor,
        reason: req.reason,
        expectedVersion: target.version,
        ...(target.executionId ? { expectedStepExecutionId: target.stepExecutionId } : {}),
      },
      opts,
    );
    if (result.ok) return { outcome: 'APPLIED', detail: result.change };
    switch (result.code) {
      case 'CONFLICT':
        return {
          outcome: 'SKIPPED_CHANGED',
          detail: `changed since selection (${result.conflict.reason}, by ${result.conflict.winner.kind}); left alone`,
        };
      case 'ACTIVE_EXECUTION':
        return { outcome: 'SKIPPED', detail: result.message, conflict: result.conflict };
      case 'NOT_ALLOWED':
      case 'NOT_FOUND':
      case 'BUSY':
        return { outcome: 'SKIPPED', detail: result.message };
    }
  } catch (error) {
    if (error instanceof RepairNotFound) return { outcome: 'SKIPPED', detail: error.message };
    throw error;
  }
}

/** What a running bulk repair reports, as it goes. */
export type BulkProgress =
  /** The targets are selected; nothing is repaired yet. */
  | { type: 'selected'; total: number }
  /** One more row is done (done of total). */
  | { type: 'item'; done: number; total: number; item: BulkItem }
  /** The run is over: every row done, or stopped between rows (interrupted). */
  | { type: 'finished'; matched: number; done: number; interrupted: boolean };

export interface BulkRequest {
  projectId: string;
  actor: string;
  action: BulkAction;
  reason: string;
  filter: BulkFilter;
  /** What the operator chose beside the action, for every row (FORCE_TIMEOUT: ignoreInWindowEvents). */
  choices?: RepairChoices;
  /** Claims per second at most (protects the workers sharing the database). */
  ratePerSecond?: number;
  /** Aborting stops the run between rows: rows already done stay done. */
  signal?: AbortSignal;
}

/**
 * A bulk repair as it runs: selects the targets, then repairs them one transaction each at
 * a bounded rate, yielding after each row, so a console can show progress and a stop
 * (abort, or no longer iterating) leaves every row either repaired or untouched.
 */
export async function* runMany(db: Db, req: BulkRequest, opts: RepairOptions): AsyncGenerator<BulkProgress, void, undefined> {
  const targets = await selectTargets(db, req.projectId, req.filter, opts);
  yield { type: 'selected', total: targets.length };
  const gap = 1000 / (req.ratePerSecond ?? 50);
  let done = 0;
  let last = 0;
  for (const target of targets) {
    if (req.signal?.aborted) break;
    const wait = last + gap - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (req.signal?.aborted) break;
    last = Date.now();
    const item: BulkItem = { executionId: target.executionId, eventId: target.eventId, messageId: target.messageId ?? null, ...(await repairOne(db, req, target, opts)) };
    done++;
    yield { type: 'item', done, total: targets.length, item };
  }
  yield { type: 'finished', matched: targets.length, done, interrupted: done < targets.length };
}

export async function applyMany(
  db: Db,
  req: BulkRequest & {
    dryRun: boolean;
    /** Called once the targets are selected, before the first claim (progress bars). */
    onSelected?: (total: number) => void | Promise<void>;
    onProgress?: (done: number, total: number) => void;
  },
  opts: RepairOptions,
): Promise<{ matched: number; dryRun: boolean; items: BulkItem[]; interrupted: boolean; inWindowEvents?: number; migration?: Awaited<ReturnType<typeof migrationGroups>> }> {
  if (req.dryRun) {
    const targets = await selectTargets(db, req.projectId, req.filter, opts);
    // FORCE_TIMEOUT follows the timer's rule: say how many waits an in-window event resumes instead.
    const inWindow =
      req.action === 'FORCE_TIMEOUT'
        ? { inWindowEvents: (await findWaitsWithInWindowEvents(db, targets.flatMap((t) => (t.stepExecutionId ? [t.stepExecutionId] : [])))).length }
        : {};
    // MIGRATE: each execution planned as apply would, told per group (migration-groups.ts).
    const migration = req.action === 'MIGRATE' ? { migration: await migrationGroups(db, req.projectId, targets, req.choices ?? {}, opts) } : {};
    return { matched: targets.length, dryRun: true, items: [], interrupted: false, ...inWindow, ...migration };
  }
  const items: BulkItem[] = [];
  let matched = 0;
  let interrupted = false;
  for await (const progress of runMany(db, req, opts)) {
    if (progress.type === 'selected') {
      matched = progress.total;
      await req.onSelected?.(progress.total);
    } else if (progress.type === 'item') {
      items.push(progress.item);
      req.onProgress?.(progress.done, progress.total);
    } else {
      interrupted = progress.interrupted;
    }
  }
  return { matched, dryRun: false, items, interrupted };
}
