import superjson from 'superjson';
import type { DbTx } from '../db';
import { env } from '../env';
import { log } from '../log';
import { processSingleton } from '../process-registry';

// Console figures: counts over a project's whole history (executions by status and stuck
// reason, stuck groups, invariant violations), which no index makes cheap at millions of
// rows. A read computes the figure live while computing it is cheap, so small projects
// (and every test) see exact, immediate counts. Once the cheaper of its last two
// computations costs more than the live budget, reads serve the last computed figure with
// its `asOf` instead, and a read that finds it stale starts one refresh in the background
// (stale-while-revalidate). The refresh is claimed by a compare-and-swap on the row's
// computedAt, so several web processes never compute the same figure at once.
// Lists (executions.list, repair.stuck) never go through here: they stay live. Neither do
// the invariant checks of tests, the bench and the drills (server/engine/invariants.ts).

export type FigureKind = 'counts' | 'stuckGroups' | 'invariants';

export interface FigureKey {
  projectId: string;
  kind: FigureKind;
  /** What the figure was computed with (filters, grace period): another setting is another figure. */
  scope: string;
}

/** A figure as the console shows it: `asOf` null when it was computed for this read (live). */
export interface Figure<T> {
  value: T;
  /** When the computation of a stored figure began (everything it counts happened before); null: live. */
  asOf: Date | null;
}

export interface FigurePolicy {
  /** Reads compute live while the cheaper of the last two computations took at most this many ms. */
  liveBudgetMs: number;
  /** A stored figure older than this (given its last cost) is refreshed when read. */
  staleAfterMs(costMs: number): number;
}

/**
 * Refresh a stored figure at most every 5 s, and no more often than every tenth of the
 * time (10 x its cost) nor less often than every 2 minutes: a figure costing 2 s of
 * database time is recomputed at most every 20 s while someone is looking at it. A refresh claimed by a
 * process that then died is taken over after 10 minutes.
 */
export function figurePolicy(): FigurePolicy {
  return {
    liveBudgetMs: env().CONSOLE_FIGURES_LIVE_MS,
    staleAfterMs: (costMs) => Math.min(120_000, Math.max(5_000, 10 * costMs)),
  };
}

interface StoredFigure {
  /** Serialized, or (parsed) this process's deserialized copy of the same computation. */
  value: unknown;
  parsed: boolean;
  computedAt: Date;
  costMs: number;
  previousCostMs: number | null;
}

/**
 * Stored figures this process has read, deserialized, by key: a read whose stored figure
 * is the one cached here (same computedAt) is not sent the value again nor parses it (a
 * big project's counts are tens of kilobytes of JSON). One cache per process, whichever
 * copy of this module reads (server/process-registry.ts).
 */
const parsed = processSingleton('read.figures.parsed', () => new Map<string, { computedAt: Date; value: unknown }>());
const PARSED_MAX = 100;

async function storedFigure(db: DbTx, key: FigureKey): Promise<StoredFigure | null> {
  const cached = parsed.get(keyText(key));
  const [row] = await db.$queryRaw<(Omit<StoredFigure, 'value'> & { value: unknown | null })[]>`
    -- storedFigure
    SELECT CASE WHEN "computedAt" = ${cached?.computedAt ?? null}::timestamptz THEN NULL ELSE value END AS value,
           "computedAt", "costMs", "previousCostMs"
      FROM "ConsoleFigure"
     WHERE "projectId" = ${key.projectId}::uuid AND kind = ${key.kind} AND scope = ${key.scope}`;
  if (!row) return null;
  if (row.value === null && cached && cached.computedAt.getTime() === row.computedAt.getTime()) return { ...row, value: cached.value, parsed: true };
  return { ...row, value: row.value, parsed: false };
}

/** The stored figure's value, deserialized once per computation and process. */
function storedValue<T>(key: FigureKey, stored: StoredFigure): T {
  if (stored.parsed) return stored.value as T;
  const value = superjson.deserialize<T>(stored.value as never);
  const k = keyText(key);
  parsed.delete(k);
  if (parsed.size >= PARSED_MAX) parsed.delete(parsed.keys().next().value!);
  parsed.set(k, { computedAt: stored.computedAt, value });
  return value;
}

/** Run `compute`, measuring what it cost; `at` is when it began. */
async function measured<T>(db: DbTx, compute: (db: DbTx) => Promise<T>): Promise<{ value: T; at: Date; costMs: number }> {
  const at = new Date();
  const t0 = performance.now();
  const value = await compute(db);
  return { value, at, costMs: performance.now() - t0 };
}

/** Store a computation unless a newer one is stored already; the previous cost is kept beside the new one. */
async function storeFigure(db: DbTx, key: FigureKey, c: { value: unknown; at: Date; costMs: number }): Promise<void> {
  await db.$executeRaw`
    -- storeFigure
    INSERT INTO "ConsoleFigure" ("projectId", kind, scope, value, "computedAt", "costMs")
    VALUES (${key.projectId}::uuid, ${key.kind}, ${key.scope}, ${JSON.stringify(superjson.serialize(c.value))}::jsonb,
            ${c.at}::timestamptz, ${c.costMs}::float8)
    ON CONFLICT ("projectId", kind, scope) DO UPDATE
       SET value = EXCLUDED.value, "computedAt" = EXCLUDED."computedAt",
           "previousCostMs" = "ConsoleFigure"."costMs", "costMs" = EXCLUDED."costMs"
     WHERE "ConsoleFigure"."computedAt" < EXCLUDED."computedAt"`;
}

/**
 * The cost reads judge by: the cheaper of the last two, so that one slow run (a busy
 * moment) never turns a cheap figure stored. A figure computed once only is judged by
 * that once: a big project's second read is served stored, not computed again.
 */
const judgedCost = (f: StoredFigure) => Math.min(f.costMs, f.previousCostMs ?? f.costMs);

/** Live reads of a cheap figure store it (keeping its cost current) at most this often. */
const LIVE_STORE_EVERY_MS = 10_000;

/** The background refreshes this process has under way, by key (at most one each). */
const refreshing = processSingleton('read.figures.refreshing', () => new Map<string, Promise<boolean>>());
const keyText = (k: FigureKey) => `${k.projectId}|${k.kind}|${k.scope}`;

/**
 * The figure for `key`: computed live while that is cheap (see FigurePolicy), else the
 * stored one with its asOf, refreshed in the background when stale. `db` must be the
 * process's client, not a transaction: the refresh outlives the read.
 */
export async function consoleFigure<T>(
  db: DbTx,
  key: FigureKey,
  compute: (db: DbTx) => Promise<T>,
  policy: FigurePolicy = figurePolicy(),
): Promise<Figure<T>> {
  const stored = await storedFigure(db, key);
  if (!stored || judgedCost(stored) <= policy.liveBudgetMs) {
    const c = await measured(db, compute);
    if (!stored || c.costMs > policy.liveBudgetMs || c.at.getTime() - stored.computedAt.getTime() >= LIVE_STORE_EVERY_MS) {
      await storeFigure(db, key, c);
    }
    return { value: c.value, asOf: null };
  }
  if (Date.now() - stored.computedAt.getTime() > policy.staleAfterMs(stored.costMs)) {
    startRefresh(db, key, compute, stored.computedAt);
  }
  return { value: storedValue<T>(key, stored), asOf: stored.computedAt };
}

/** Start a refresh in the background, unless this process has one running for the figure already. */
function startRefresh<T>(db: DbTx, key: FigureKey, compute: (db: DbTx) => Promise<T>, seen: Date): void {
  const k = keyText(key);
  if (refreshing.has(k)) return;
  const run = refreshFigure(db, key, compute, seen)
    .catch((error: unknown) => {
      log.error(`console figure ${key.kind} (${key.scope}) of project ${key.projectId}: refresh failed: ${String(error)}`);
      return false;
    })
    .finally(() => refreshing.delete(k));
  refreshing.set(k, run);
}

/**
 * Recompute a stored figure if it is still the computation `seen`: the claim is a
 * compare-and-swap on computedAt (and no other live claim), so of several processes
 * (or readers) that saw the same stale figure exactly one computes it. True when this
 * call computed and stored it.
 */
export async function refreshFigure<T>(db: DbTx, key: FigureKey, compute: (db: DbTx) => Promise<T>, seen: Date): Promise<boolean> {
  const claimed = await db.$executeRaw`
    -- refreshFigure.claim
    UPDATE "ConsoleFigure" SET "refreshStartedAt" = now()
     WHERE "projectId" = ${key.projectId}::uuid AND kind = ${key.kind} AND scope = ${key.scope}
       AND "computedAt" = ${seen}::timestamptz
       AND ("refreshStartedAt" IS NULL OR "refreshStartedAt" < now() - interval '10 minutes')`;
  if (claimed === 0) return false;
  try {
    await storeFigure(db, key, await measured(db, compute));
    return true;
  } finally {
    await db.$executeRaw`
      -- refreshFigure.release
      UPDATE "ConsoleFigure" SET "refreshStartedAt" = NULL
       WHERE "projectId" = ${key.projectId}::uuid AND kind = ${key.kind} AND scope = ${key.scope}`;
  }
}

/** Wait for this process's background refreshes (tests, the bench, a clean shutdown). */
export async function settleFigureRefreshes(): Promise<void> {
  while (refreshing.size > 0) await Promise.all(refreshing.values());
}

/** Compute a figure now and store it, whatever its cost (the bench's full recompute; warming a project). */
export async function recomputeFigure<T>(db: DbTx, key: FigureKey, compute: (db: DbTx) => Promise<T>): Promise<{ value: T; costMs: number }> {
  const c = await measured(db, compute);
  await storeFigure(db, key, c);
  return { value: c.value, costMs: c.costMs };
}
