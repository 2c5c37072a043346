import client from 'prom-client';
import { openPools } from '../db/registry';
import { processSingleton } from '../process-registry';
import { counts, LOSABLE_CLAIMS, MESSAGE_OUTCOMES, STEP_OUTCOMES, STEP_TYPES, WAIT_RESOLVERS } from './counts';

// This process's Prometheus registry (prom-client), one per process
// (server/process-registry.ts), answered at /metrics by the web server and by each
// worker's own listener (server/http/metrics.ts): prom-client's usual per-process model,
// Prometheus adds the processes up. The engine's counters are read at each scrape from
// counts.ts's plain numbers; the pools' use from the pools createDb opened; the stuck
// items from a source the web process gives (server/read/stuck-figures.ts: the console's
// figures, bounded); the HTTP histogram is fed by the web server. Every name and label is
// listed in docs/deploy.md ("Metrics and logs").

/** The console's stuck figures, summed over every project, and how old the oldest of them is. */
export interface StuckFigures {
  byReason: Readonly<Record<string, number>>;
  ageSeconds: number;
}

/** Where the stuck gauges read: resolves with the figures last known (null: none yet). */
export type StuckSource = () => Promise<StuckFigures | null>;

export type HttpLabels = 'route' | 'method' | 'status_class';

interface Metrics {
  registry: client.Registry;
  httpDuration: client.Histogram<HttpLabels>;
  stuckSource: StuckSource | null;
}

/** A counter whose values are copied from plain counts at each scrape. */
function countsCounter<L extends string>(registry: client.Registry, name: string, help: string, labelNames: readonly L[], values: () => Iterable<[Record<L, string>, number]>): void {
  new client.Counter<L>({
    name,
    help,
    labelNames,
    registers: [registry],
    collect() {
      this.reset();
      for (const [labels, value] of values()) this.inc(labels as client.LabelValues<L>, value);
    },
  });
}

function gauge<L extends string>(registry: client.Registry, name: string, help: string, labelNames: readonly L[], collect: (g: client.Gauge<L>) => void | Promise<void>): void {
  new client.Gauge<L>({
    name,
    help,
    labelNames,
    registers: [registry],
    collect() {
      return collect(this);
    },
  });
}

function poolUse(): Map<string, { total: number; idle: number; waiting: number; max: number }> {
  const byName = new Map<string, { total: number; idle: number; waiting: number; max: number }>();
  for (const [pool, name] of openPools) {
    if ((pool as { ended?: boolean }).ended) {
      openPools.delete(pool);
      continue;
    }
    const use = byName.get(name) ?? { total: 0, idle: 0, waiting: 0, max: 0 };
    use.total += pool.totalCount;
    use.idle += pool.idleCount;
    use.waiting += pool.waitingCount;
    use.max += pool.options.max ?? 10;
    byName.set(name, use);
  }
  return byName;
}

function make(): Metrics {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  const m: Metrics = {
    registry,
    httpDuration: new client.Histogram<HttpLabels>({
      name: 'waypost_http_request_duration_seconds',
      help: 'HTTP requests the web server answered, by route template, method and status class, from arrival to the end of the answer.',
      labelNames: ['route', 'method', 'status_class'],
      registers: [registry],
    }),
    stuckSource: null,
  };

  countsCounter(registry, 'waypost_steps_claimed_total', 'Steps this process claimed and ran, by step type.', ['type'], function* () {
    for (const type of STEP_TYPES) yield [{ type }, counts.stepsClaimed[type]];
  });
  countsCounter(registry, 'waypost_steps_completed_total', "Claimed steps whose outcome this process recorded (its claim won), by step type and outcome: advanced, parked (a wait began), exited, failed (an attempt).", ['type', 'outcome'], function* () {
    for (const type of STEP_TYPES) for (const outcome of STEP_OUTCOMES) yield [{ type, outcome }, counts.stepsCompleted[type][outcome]];
  });
  countsCounter(registry, 'waypost_claim_conflicts_total', 'Compare-and-swap claims this process lost (someone else won), by claim.', ['claim'], function* () {
    for (const claim of LOSABLE_CLAIMS) yield [{ claim }, counts.claimsLost[claim]];
  });
  countsCounter(registry, 'waypost_waits_resolved_total', 'Waits (DELAY, WAIT_FOR_EVENT) this process resolved, by outcome: event, timeout, operator.', ['outcome'], function* () {
    for (const by of WAIT_RESOLVERS) yield [{ outcome: by.toLowerCase() }, counts.waitsResolved[by]];
  });
  countsCounter(registry, 'waypost_events_accepted_total', 'Tracked events this process stored (a repeated idempotency key is not counted).', [], function* () {
    yield [{}, counts.events.accepted];
  });
  countsCounter(registry, 'waypost_events_processed_total', 'Tracked events whose dispatch this process completed.', [], function* () {
    yield [{}, counts.events.processed];
  });
  countsCounter(registry, 'waypost_events_dead_total', 'Tracked events this process dead-lettered after EVENT_MAX_ATTEMPTS.', [], function* () {
    yield [{}, counts.events.dead];
  });
  countsCounter(registry, 'waypost_messages_total', 'Emails by outcome: queued (by its step), sent, failed, unconfirmed (the outcome could not be written), late (sent after an operator took it over), marked_sent, requeued, abandoned (by an operator).', ['outcome'], function* () {
    for (const outcome of MESSAGE_OUTCOMES) yield [{ outcome }, counts.messages[outcome]];
  });

  const pools = (g: client.Gauge<'pool'>, of: 'total' | 'idle' | 'waiting' | 'max') => {
    g.reset();
    for (const [pool, use] of poolUse()) g.set({ pool }, use[of]);
  };
  gauge(registry, 'waypost_db_pool_connections', "Connections open in this process's database pools, by pool (application_name).", ['pool'], (g) => pools(g, 'total'));
  gauge(registry, 'waypost_db_pool_idle_connections', 'Of those, the idle ones.', ['pool'], (g) => pools(g, 'idle'));
  gauge(registry, 'waypost_db_pool_waiting_clients', 'Queries waiting for a connection of the pool.', ['pool'], (g) => pools(g, 'waiting'));
  gauge(registry, 'waypost_db_pool_max_connections', 'The pool size.', ['pool'], (g) => pools(g, 'max'));
  return m;
}

export function metrics(): Metrics {
  return processSingleton('metrics.registry', make);
}

/**
 * Report stuck items from `source` (the web process: scripts/web.ts), which bounds its own
 * cost (both gauges ask it at each scrape). Every web process reports the same figures:
 * aggregate them with max, not sum (docs/deploy.md).
 */
export function reportStuckFigures(source: StuckSource): void {
  const m = metrics();
  const first = m.stuckSource === null;
  m.stuckSource = source;
  if (!first) return;
  const figures = () => m.stuckSource?.() ?? Promise.resolve(null);
  gauge(m.registry, 'waypost_stuck_items', 'Stuck items by reason, over every project, from the console figures (server/read/figures.ts).', ['reason'], async (g) => {
    const f = await figures();
    g.reset();
    for (const [reason, n] of Object.entries(f?.byReason ?? {})) g.set({ reason }, n);
  });
  gauge(m.registry, 'waypost_stuck_figures_age_seconds', 'How old the oldest console figure behind waypost_stuck_items is.', [], async (g) => {
    const f = await figures();
    g.reset();
    if (f) g.set(f.ageSeconds);
  });
}
