import type { RawDb } from '../db';
import {
  removeAuditEntries,
  removeEvents,
  removeExecutions,
  removeWebhookMessages,
  START,
  webhookEndpointsOf,
  type Batch,
  type BatchScope,
  type Cursor,
} from './batches';
import { addRemoved, DEFAULT_TIMING, NOTHING_REMOVED, type Removed, type RetentionKind, type SweepTiming } from './policy';

// A retention sweep (docs/deploy.md, "Retention"): project by project, each kind of row
// walked oldest first a batch at a time (server/retention/batches.ts), a pause after every
// batch. Which worker sweeps is decided by a compare-and-swap on the kind's RetentionSweep
// row (claimSweep), kept by a heartbeat after every batch, so several worker processes
// never sweep one kind at the same time and a dead sweeper's claim lapses; even two sweeps
// at once (a claim taken over from a sweeper that was only slow) remove each row once, as
// every batch locks what it removes with SKIP LOCKED. No session state: every statement
// stands alone, as PgBouncer's transaction mode needs.

export interface SweepSettings {
  days: number;
  /** STUCK_GRACE_SECONDS. */
  graceSeconds: number;
  timing?: Partial<SweepTiming>;
  /** Asked between batches: true ends the sweep there (the worker is shutting down). */
  shouldStop?: () => boolean;
  /** Called after every batch; false ends the sweep (its claim was lost). */
  afterBatch?: () => Promise<boolean>;
  /** Told how long each batch's statement took (the bench's figures, a log). */
  onBatch?: (ms: number, removed: Removed) => void;
}

export interface SweepResult {
  cutoff: Date;
  removed: Removed;
  batches: number;
  /** True when it ended early (shouldStop, or afterBatch said no). */
  stopped: boolean;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** now() less `days` days, on the database's clock. */
async function cutoffOf(db: RawDb, days: number): Promise<Date> {
  const [row] = await db.$queryRaw<{ cutoff: Date }[]>`
    -- retention.cutoff
    SELECT now() - ${days}::int * interval '1 day' AS cutoff`;
  return row!.cutoff;
}

async function projectIds(db: RawDb): Promise<string[]> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    -- retention.projects
    SELECT id FROM "Project" ORDER BY id`;
  return rows.map((r) => r.id);
}

/** What one project's part of a sweep removed, for its Settings page. */
async function recordProject(db: RawDb, kind: RetentionKind, projectId: string, cutoff: Date, removed: Removed): Promise<void> {
  await db.$executeRaw`
    -- retention.recordProject
    INSERT INTO "RetentionProjectSweep" ("projectId", kind, "sweptAt", cutoff, removed)
    VALUES (${projectId}::uuid, ${kind}, now(), ${cutoff}::timestamptz, ${JSON.stringify(removed)}::jsonb)
    ON CONFLICT ("projectId", kind) DO UPDATE SET "sweptAt" = EXCLUDED."sweptAt", cutoff = EXCLUDED.cutoff, removed = EXCLUDED.removed`;
}

type Walk = (scope: BatchScope, after: Cursor) => Promise<Batch<Removed>>;

/** The walks of one project for a kind: executions before events (an event goes once nothing kept names it). */
async function walksOf(db: RawDb, kind: RetentionKind, projectId: string, t: SweepTiming): Promise<{ limit: number; walk: Walk }[]> {
  if (kind === 'audit') return [{ limit: t.rowBatch, walk: (s, a) => removeAuditEntries(db, s, a) }];
  const endpoints = await webhookEndpointsOf(db, projectId);
  return [
    { limit: t.executionBatch, walk: (s, a) => removeExecutions(db, s, a) },
    { limit: t.rowBatch, walk: (s, a) => removeEvents(db, s, a) },
    ...endpoints.map((endpointId) => ({ limit: t.rowBatch, walk: (s: BatchScope, a: Cursor) => removeWebhookMessages(db, { ...s, endpointId }, a) })),
  ];
}

/**
 * Remove every row of this kind older than `days` days that may go, in every project,
 * batch by batch. The sweep itself: it claims nothing (runSweep does), so tests can run
 * several at once.
 */
export async function sweep(db: RawDb, kind: RetentionKind, settings: SweepSettings): Promise<SweepResult> {
  const t: SweepTiming = { ...DEFAULT_TIMING, ...settings.timing };
  const cutoff = await cutoffOf(db, settings.days);
  const removed: Removed = { ...NOTHING_REMOVED[kind] };
  let batches = 0;
  for (const projectId of await projectIds(db)) {
    const inProject: Removed = { ...NOTHING_REMOVED[kind] };
    for (const { limit, walk } of await walksOf(db, kind, projectId, t)) {
      let after = START;
      for (;;) {
        if (settings.shouldStop?.()) return { cutoff, removed, batches, stopped: true };
        const t0 = performance.now();
        const batch = await walk({ projectId, cutoff, graceSeconds: settings.graceSeconds, limit }, after);
        settings.onBatch?.(performance.now() - t0, batch.removed);
        batches++;
        addRemoved(inProject, batch.removed);
        addRemoved(removed, batch.removed);
        if (settings.afterBatch && !(await settings.afterBatch())) return { cutoff, removed, batches, stopped: true };
        if (batch.seen < limit) break;
        after = batch.next;
        await sleep(Math.max(t.minPauseMs, (performance.now() - t0) * t.pauseRatio));
      }
    }
    await recordProject(db, kind, projectId, cutoff, inProject);
  }
  return { cutoff, removed, batches, stopped: false };
}

// ---------------------------------------------------------------------------
// The claim: one sweep of a kind at a time across every worker process.

/**
 * Take the kind's sweep, if one is due (none ran in the last `everyMs`) and nobody holds
 * it, or its holder stopped reporting `staleAfterSeconds` ago. The claim's start time,
 * the fence of the heartbeat and the outcome; null when it is not this worker's turn.
 */
export async function claimSweep(db: RawDb, kind: RetentionKind, owner: string, t: SweepTiming): Promise<Date | null> {
  const [row] = await db.$queryRaw<{ runningSince: Date }[]>`
    -- retention.claimSweep
    UPDATE "RetentionSweep"
       SET owner = ${owner}, "runningSince" = now(), "heartbeatAt" = now()
     WHERE kind = ${kind}
       AND ((owner IS NULL AND ("lastFinishedAt" IS NULL OR "lastFinishedAt" <= now() - ${t.everyMs}::int * interval '1 millisecond'))
            OR "heartbeatAt" < now() - ${t.staleAfterSeconds}::int * interval '1 second')
    RETURNING "runningSince"`;
  return row?.runningSince ?? null;
}

/** The claim's heartbeat: false when another worker has taken the sweep over. */
export async function keepSweep(db: RawDb, kind: RetentionKind, owner: string, since: Date): Promise<boolean> {
  const rows = await db.$queryRaw<{ kind: string }[]>`
    -- retention.keepSweep
    UPDATE "RetentionSweep" SET "heartbeatAt" = now()
     WHERE kind = ${kind} AND owner = ${owner} AND "runningSince" = ${since}::timestamptz
    RETURNING kind`;
  return rows.length === 1;
}

export type SweepOutcome = 'COMPLETED' | 'STOPPED' | 'FAILED';

/** Release the claim with the sweep's outcome (unless it was taken over meanwhile). */
async function finishSweep(
  db: RawDb,
  kind: RetentionKind,
  owner: string,
  since: Date,
  r: { days: number; cutoff: Date | null; outcome: SweepOutcome; error: string | null; removed: Removed },
): Promise<void> {
  await db.$executeRaw`
    -- retention.finishSweep
    UPDATE "RetentionSweep"
       SET owner = NULL, "runningSince" = NULL, "heartbeatAt" = NULL,
           "lastStartedAt" = "runningSince", "lastFinishedAt" = now(),
           "lastDurationMs" = round(extract(epoch FROM now() - "runningSince") * 1000)::int,
           "lastDays" = ${r.days}::int, "lastCutoff" = ${r.cutoff}::timestamptz, "lastOutcome" = ${r.outcome},
           "lastError" = ${r.error}, "lastRemoved" = ${JSON.stringify(r.removed)}::jsonb
     WHERE kind = ${kind} AND owner = ${owner} AND "runningSince" = ${since}::timestamptz`;
}

export interface RunSweepResult extends SweepResult {
  outcome: SweepOutcome;
  durationMs: number;
}

/**
 * One worker's turn: claim the kind's sweep if it is due, run it, record its outcome.
 * Null when it was not due or another worker holds it. A failed sweep (the database
 * went away) is recorded FAILED when it can be, and thrown.
 */
export async function runSweep(db: RawDb, kind: RetentionKind, owner: string, settings: SweepSettings): Promise<RunSweepResult | null> {
  const t: SweepTiming = { ...DEFAULT_TIMING, ...settings.timing };
  const since = await claimSweep(db, kind, owner, t);
  if (!since) return null;
  const t0 = performance.now();
  let lost = false;
  try {
    const result = await sweep(db, kind, {
      ...settings,
      afterBatch: async () => {
        lost = !(await keepSweep(db, kind, owner, since));
        return !lost;
      },
    });
    const outcome: SweepOutcome = result.stopped ? 'STOPPED' : 'COMPLETED';
    // Taken over (this worker was too slow to report): the other worker records its own.
    if (!lost) await finishSweep(db, kind, owner, since, { days: settings.days, cutoff: result.cutoff, outcome, error: null, removed: result.removed });
    return { ...result, outcome, durationMs: Math.round(performance.now() - t0) };
  } catch (error) {
    const message = String(error).split('\n').at(-1)!.slice(0, 500);
    await finishSweep(db, kind, owner, since, { days: settings.days, cutoff: null, outcome: 'FAILED', error: message, removed: {} }).catch(() => {});
    throw error;
  }
}
