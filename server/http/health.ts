import { readdirSync } from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import { db, poolOf } from '../db';
import { isHealthPath, type HealthPath } from './health-paths';
import { apiSecurityHeaders } from './security-headers';

export { isHealthPath, type HealthPath };

// What a load balancer or process manager asks a web process (docs/deploy.md):
// - /healthz, liveness: 200 {"status":"ok"} while the process runs and answers HTTP. It
//   touches no database: a database outage must not get every web process restarted.
// - /readyz, readiness: 200 once PostgreSQL answers within READY_TIMEOUT_MS and every
//   migration in prisma/migrations is applied; 503 with a JSON reason otherwise, and from
//   the moment the process starts draining (SIGTERM), so the balancer stops sending it
//   requests. The reason names no host, user or error text: only what is wrong.
// No credentials, no rate limit, no personal data. The web server answers both before
// Next.js (web-server.ts); app/healthz and app/readyz are the same answers for `next dev`.

/** How long /readyz waits for PostgreSQL's answer before it says the database is not answering. */
export const READY_TIMEOUT_MS = 2_000;

export interface HealthAnswer {
  status: 200 | 503;
  body: { status: 'ok' } | { status: 'unavailable'; reason: string; pending?: string[] };
}

/** The headers of both answers: every API answer's security headers, JSON, never cached. */
export function healthHeaders(): Record<string, string> {
  return { ...apiSecurityHeaders(), 'Content-Type': 'application/json', 'Cache-Control': 'no-store' };
}

let underCwd: string[] | undefined;

/**
 * The migrations of the repository `next dev` runs in (its working directory): the names of
 * prisma/migrations' folders, as server/migrator.ts reads them. Not migrator.ts itself: it
 * finds the folder from its own file, which a Next.js bundle is not beside. scripts/web.ts
 * passes the list it read with migrator.ts (web-server.ts).
 */
function migrationsUnderCwd(): string[] {
  underCwd ??= readdirSync(path.join(/* turbopackIgnore: true */ process.cwd(), 'prisma', 'migrations'), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
  return underCwd;
}

const unavailable = (reason: string, pending?: readonly string[]): HealthAnswer => ({ status: 503, body: { status: 'unavailable', reason, ...(pending ? { pending: [...pending] } : {}) } });

/**
 * The answer to /healthz or /readyz. `shipped`: the migrations this build holds, every one
 * of which must be applied; `pool`: where to ask (the process's database by default).
 */
export async function healthAnswer(
  which: HealthPath,
  state: { draining: boolean; shipped: () => readonly string[] },
  pool: () => pg.Pool | undefined = () => poolOf(db()),
): Promise<HealthAnswer> {
  if (which === '/healthz') return { status: 200, body: { status: 'ok' } };
  if (state.draining) return unavailable('draining: this process is shutting down');
  const target = pool();
  if (!target) return unavailable('no database client');
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), READY_TIMEOUT_MS);
  });
  const applied = target
    .query<{ name: string }>(`-- readiness.appliedMigrations
      SELECT migration_name AS name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`)
    .then((result) => ({ names: result.rows.map((r) => r.name) }), (error: unknown) => ({ error: error as { code?: string } }));
  const outcome = await Promise.race([applied, late]).finally(() => clearTimeout(timer));
  if (outcome === 'late') return unavailable(`the database did not answer within ${READY_TIMEOUT_MS} ms`);
  if ('error' in outcome) {
    // 42P01: no "_prisma_migrations" at all, a database never migrated.
    if (outcome.error?.code === '42P01') return unavailable('migrations pending', state.shipped());
    return unavailable('the database is unreachable');
  }
  const done = new Set(outcome.names);
  const pending = state.shipped().filter((name) => !done.has(name));
  if (pending.length > 0) return unavailable('migrations pending', pending);
  return { status: 200, body: { status: 'ok' } };
}

/** The answer as a fetch Response, for the Next.js route handlers (`next dev`). */
export async function healthResponse(which: HealthPath): Promise<Response> {
  const answer = await healthAnswer(which, { draining: false, shipped: migrationsUnderCwd });
  return new Response(JSON.stringify(answer.body), { status: answer.status, headers: healthHeaders() });
}
