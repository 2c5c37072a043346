import type { Db } from '../db';
import { STUCK_REASONS, type StuckReason } from '../common/stuck-reasons';
import { log } from '../log';
import { projectCountsFigure } from './console-figures';

// The stuck items behind /metrics' waypost_stuck_items: every project's counts figure
// (console-figures.ts, as the console's overview and the stuck notices read it: computed
// live while that costs at most CONSOLE_FIGURES_LIVE_MS, else the stored computation,
// refreshed in the background), summed by reason. Never a scan per scrape: the sum is
// recomputed at most every `everyMs`, one pass at a time, and a scrape waits for a pass
// at most `waitMs`, then answers with the last sum and its age.

export interface StuckFiguresOptions {
  graceSeconds: number;
  /** A new pass starts at most this often (a scrape in between gets the last sum). */
  everyMs?: number;
  /** How long a scrape waits for a pass under way before it answers with the last sum. */
  waitMs?: number;
}

export interface StuckSum {
  byReason: Record<StuckReason, number>;
  /** How old the oldest figure in the sum is, in seconds, as of now. */
  ageSeconds: number;
}

/** Sum every project's stuck counts once: each figure's asOf, or this pass's start for one computed live. */
async function sumProjects(db: Db, graceSeconds: number): Promise<{ byReason: Record<StuckReason, number>; oldest: number }> {
  const started = Date.now();
  const projects = await db.$queryRaw<{ id: string }[]>`
    -- stuckFigures.projects
    SELECT id FROM "Project" ORDER BY id`;
  const byReason = Object.fromEntries(STUCK_REASONS.map((r) => [r, 0])) as Record<StuckReason, number>;
  let oldest = started;
  for (const { id } of projects) {
    const figure = await projectCountsFigure(db, { projectId: id, graceSeconds });
    for (const c of figure.value.stuck) byReason[c.reason] += c.n;
    if (figure.asOf) oldest = Math.min(oldest, figure.asOf.getTime());
  }
  return { byReason, oldest };
}

/** A source of stuck sums for the metrics registry (server/metrics/registry.ts, reportStuckFigures). */
export function stuckFiguresSource(db: Db, o: StuckFiguresOptions): () => Promise<StuckSum | null> {
  const everyMs = o.everyMs ?? 15_000;
  const waitMs = o.waitMs ?? 1_000;
  let last: { byReason: Record<StuckReason, number>; oldest: number; at: number } | null = null;
  let pass: Promise<void> | null = null;
  const answer = (): StuckSum | null => (last ? { byReason: last.byReason, ageSeconds: Math.max(0, (Date.now() - last.oldest) / 1000) } : null);
  return async () => {
    if (!pass && (!last || Date.now() - last.at >= everyMs)) {
      const at = Date.now();
      pass = sumProjects(db, o.graceSeconds)
        .then((sum) => {
          last = { ...sum, at };
        })
        // The database unreachable: the last sum stands, its age growing, and the next scrape tries again.
        .catch((err: unknown) => log.debug('metrics: the stuck figures could not be read', { err }))
        .finally(() => {
          pass = null;
        });
    }
    if (pass) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([pass, new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)))]).finally(() => clearTimeout(timer));
    }
    return answer();
  };
}
