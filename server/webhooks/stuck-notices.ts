import type { Db, RawDb } from '../db';
import { projectCountsFigure } from '../read/console-figures';

// execution.stuck (docs/webhooks.md): a worker periodically reads each project's stuck
// counts per (reason, workflow, step), the console's own cached figure (server/read/
// console-figures.ts: live while cheap, else as last computed), and tells each endpoint
// subscribed to execution.stuck about every group whose count reached its threshold:
// once when the group appears, and again only when it grew and the endpoint's interval
// has passed since the last notice. One statement per project decides and enqueues, a
// compare-and-swap on WebhookStuckNotice (an upsert whose update is guarded), so
// notifiers in several workers at once send one notice. A group that cleared (or fell
// under the threshold) is remembered with count 0: when it comes back it is new again,
// though still at most once per interval.

/** One stuck group as notified: a reason at a place. */
export interface StuckGroupCount {
  reason: string;
  workflowId: string | null;
  stepId: string | null;
  count: number;
}

/** A group's key in WebhookStuckNotice: reason, workflow and step ('-' for none). */
export function stuckGroupKey(g: { reason: string; workflowId: string | null; stepId: string | null }): string {
  return `${g.reason}:${g.workflowId ?? '-'}:${g.stepId ?? '-'}`;
}

/** The project's stuck counts summed per (reason, workflow, step), from the console's counts figure. */
export async function projectStuckGroups(db: Db, projectId: string, graceSeconds: number): Promise<StuckGroupCount[]> {
  const figure = await projectCountsFigure(db, { projectId, graceSeconds });
  const byKey = new Map<string, StuckGroupCount>();
  for (const c of figure.value.stuck) {
    const key = stuckGroupKey(c);
    const g = byKey.get(key) ?? { reason: c.reason, workflowId: c.workflowId, stepId: c.stepId, count: 0 };
    g.count += c.n;
    byKey.set(key, g);
  }
  return [...byKey.values()].filter((g) => g.count > 0);
}

/**
 * Decide and enqueue a project's execution.stuck notices in one statement; returns the
 * messages it wrote. For each enabled endpoint taking execution.stuck and each group at
 * or over its threshold: insert the notice (a new group), or update it only if the count
 * grew and the last notice is older than the endpoint's interval; a message is written
 * for exactly the notices inserted or updated. Notices of groups no longer at the
 * threshold get count 0 (their lastNotifiedAt kept).
 */
export async function notifyStuckGroups(db: RawDb, projectId: string, groups: readonly StuckGroupCount[]): Promise<number> {
  const rows = await db.$queryRaw<{ n: number }[]>`
    -- notifyStuckGroups
    WITH g AS (
      SELECT * FROM unnest(${groups.map(stuckGroupKey)}::text[], ${groups.map((g) => g.reason)}::text[],
                           ${groups.map((g) => g.workflowId)}::uuid[], ${groups.map((g) => g.stepId)}::uuid[],
                           ${groups.map((g) => g.count)}::int[]) AS g(key, reason, "workflowId", "stepId", n)
    ), subscribed AS (
      SELECT e.id, e."stuckThreshold", e."stuckIntervalSeconds"
        FROM "WebhookEndpoint" e
       WHERE e."projectId" = ${projectId}::uuid AND e.enabled AND 'execution.stuck' = ANY(e."eventTypes")
    ), due AS (
      SELECT s.id AS "endpointId", s."stuckThreshold", g.* FROM subscribed s JOIN g ON g.n >= s."stuckThreshold"
    ), noticed AS (
      INSERT INTO "WebhookStuckNotice" AS n ("endpointId", "groupKey", "lastCount", "lastNotifiedAt")
      SELECT "endpointId", key, n, now() FROM due
      ON CONFLICT ("endpointId", "groupKey") DO UPDATE
         SET "lastCount" = EXCLUDED."lastCount", "lastNotifiedAt" = EXCLUDED."lastNotifiedAt"
       WHERE EXCLUDED."lastCount" > n."lastCount"
         AND n."lastNotifiedAt" < now() - (SELECT "stuckIntervalSeconds" FROM subscribed WHERE id = n."endpointId") * interval '1 second'
      RETURNING n."endpointId", n."groupKey"
    ), cleared AS (
      UPDATE "WebhookStuckNotice" n SET "lastCount" = 0
        FROM subscribed s
       WHERE n."endpointId" = s.id AND n."lastCount" > 0
         AND NOT EXISTS (SELECT 1 FROM due WHERE due."endpointId" = n."endpointId" AND due.key = n."groupKey")
    ), sent AS (
      INSERT INTO "WebhookMessage" ("projectId", "endpointId", "eventType", payload)
      SELECT ${projectId}::uuid, d."endpointId", 'execution.stuck',
             jsonb_build_object(
               'type', 'execution.stuck',
               'timestamp', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
               'data', jsonb_build_object(
                 'reason', d.reason, 'workflowId', d."workflowId", 'workflowName', w.name, 'stepKey', st.key,
                 'count', d.n, 'threshold', d."stuckThreshold",
                 'link', '/stuck?reason=' || d.reason || COALESCE('&workflowId=' || d."workflowId"::text, '')))
        FROM noticed x
        JOIN due d ON d."endpointId" = x."endpointId" AND d.key = x."groupKey"
        LEFT JOIN "Workflow" w ON w.id = d."workflowId"
        LEFT JOIN "WorkflowStep" st ON st.id = d."stepId"
      RETURNING 1
    )
    SELECT count(*)::int AS n FROM sent`;
  return rows[0]?.n ?? 0;
}

/** The projects that have an enabled endpoint taking execution.stuck. */
export async function projectsWatchingStuck(db: RawDb): Promise<string[]> {
  const rows = await db.$queryRaw<{ projectId: string }[]>`
    -- projectsWatchingStuck
    SELECT DISTINCT "projectId" FROM "WebhookEndpoint" WHERE enabled AND 'execution.stuck' = ANY("eventTypes")`;
  return rows.map((r) => r.projectId);
}

/** One notifier pass over every watching project; returns the messages written. */
export async function notifyStuckOnce(db: Db, opts: { graceSeconds: number }): Promise<number> {
  let written = 0;
  for (const projectId of await projectsWatchingStuck(db)) {
    written += await notifyStuckGroups(db, projectId, await projectStuckGroups(db, projectId, opts.graceSeconds));
  }
  return written;
}

/** The notifier's timer in a worker process: a pass every `everyMs`; stop() waits for the pass in flight. */
export class StuckNotifier {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;

  constructor(
    private readonly db: Db,
    private readonly opts: { graceSeconds: number; everyMs: number; log?: (level: 'warn', message: string, fields?: Record<string, unknown>) => void },
  ) {}

  start(): void {
    if (this.timer || this.stopped) return;
    const tick = () => {
      if (this.stopped || this.running) return;
      this.running = notifyStuckOnce(this.db, this.opts)
        .then(() => undefined)
        .catch((error: unknown) => this.opts.log?.('warn', 'stuck notices pass failed', { error: String(error).split('\n').at(-1) }))
        .finally(() => (this.running = null));
    };
    this.timer = setInterval(tick, this.opts.everyMs);
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }
}
