// What a process keeps once, whoever asks: the one home of per-process state, instead of
// module-level Maps and ad hoc `globalThis as unknown as {...}` casts.
//
// Why not plain module state: one web process holds several copies of server/. scripts/web.ts
// loads server/ itself (through tsx: the API it answers before Next.js, server/http/), beside
// the copy in Next.js's production build, and the build has its own copy per route bundle
// (app/api/trpc and app/api/v1 are separate bundles); `next dev` evaluates modules again on
// every hot reload. A module-level value exists once per copy: two database clients and
// pools, two rate-limit insurances (each counting only what its copy served), two caches of console
// figures going stale apart, two NOTIFY spacings. Kept here, on globalThis under a
// Symbol.for key (the same symbol in every copy of this module), each is made once per
// process, by whichever copy asks first.
//
// Values are plain state or objects whose methods come with them (a client, a limiter): the
// copy that did not make one only calls what it is handed. An object whose library a copy
// might test with instanceof, or compare against its own classes, does not belong here;
// better-auth's instances (server/auth/auth.ts) stay per copy for that reason.

/** Every per-process value, by key: who keeps it, and what it is. */
export type ProcessSingletonKey =
  /** server/db/index.ts: the process's Prisma client for DATABASE_URL (db()). */
  | 'db'
  /** server/db/registry.ts: the pools under createDb's clients, and the names of prepared statements. */
  | 'db.prepared'
  /** server/db/registry.ts: the pools createDb opened and closeDb has not closed, by application name (for /metrics). */
  | 'db.openPools'
  /** server/db/rate-counter.ts: the counters of the shared request limits, one per pool (with their in-memory insurance). */
  | 'db.rateCounters'
  /** server/http/rate-limits.ts: the API's per-key, per-session and per-address limits. */
  | 'http.apiRateLimits'
  /** server/read/figures.ts: console figures parsed, by key, and the refreshes under way. */
  | 'read.figures.parsed'
  | 'read.figures.refreshing'
  /** server/engine/workflows.ts: workflow graphs read in the last few seconds. */
  | 'engine.workflowGraphs'
  /** server/engine/wakeup.ts: each client's NOTIFY spacing. */
  | 'engine.wakers'
  /** server/log.ts: the logger's configuration and pino instance, the console as it was, each request's context (its id). */
  | 'log.state'
  | 'log.console'
  | 'log.requests'
  /** server/metrics/counts.ts: what the engine counted (steps, lost claims, waits, events, messages). */
  | 'metrics.counts'
  /** server/metrics/registry.ts: the Prometheus registry, its metrics, and the sources they read at a scrape. */
  | 'metrics.registry';

const REGISTRY = Symbol.for('waypost.processRegistry');

function registry(): Map<ProcessSingletonKey, unknown> {
  const holder = globalThis as typeof globalThis & { [REGISTRY]?: Map<ProcessSingletonKey, unknown> };
  return (holder[REGISTRY] ??= new Map());
}

/**
 * The process's value for `key`, made by `make` the first time any copy of this module
 * asks (a `make` that throws stores nothing: the next call tries again).
 */
export function processSingleton<T>(key: ProcessSingletonKey, make: () => T): T {
  const values = registry();
  if (values.has(key)) return values.get(key) as T;
  const value = make();
  values.set(key, value);
  return value;
}
