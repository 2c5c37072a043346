import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, type APIRequestContext } from '@playwright/test';
import pg from 'pg';

// Staging states the running product cannot be driven into through its API, for specs
// that must show them (an overdue wait lasts no time at all while workers fire due
// timers). scripts/e2e-server.ts writes the run's database URL and the supervisor's run
// file to .data/e2e-<PORT>.json; a spec pauses the workers (SIGSTOP) to hold a state
// still, and always resumes them (SIGCONT), since later specs share the server.

const PORT = process.env.E2E_PORT || '3100';
const ROOT = path.join(import.meta.dirname, '..');

interface RunInfo {
  databaseUrl: string;
  runFile: string;
}

function runInfo(): RunInfo {
  return JSON.parse(readFileSync(path.join(ROOT, '.data', `e2e-${PORT}.json`), 'utf8')) as RunInfo;
}

/** The e2e server's own database, for a spec that runs a web server of its own on it. */
export function e2eDatabaseUrl(): string {
  return runInfo().databaseUrl;
}

/** One SQL statement against the e2e server's own database. */
export async function sql<T extends pg.QueryResultRow = Record<string, unknown>>(text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: runInfo().databaseUrl, application_name: 'waypost-e2e-spec' });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

/** The worker processes `npm start` runs for the e2e server, from the supervisor's run file. */
function workerPids(): number[] {
  const children = JSON.parse(readFileSync(runInfo().runFile, 'utf8')) as { name: string; pid: number }[];
  const pids = children.filter((c) => c.name.startsWith('worker-')).map((c) => c.pid);
  expect(pids.length, 'worker processes in the run file').toBeGreaterThan(0);
  return pids;
}

/**
 * Run `fn` with every worker process paused (SIGSTOP), resuming them (SIGCONT) however
 * it ends. A paused worker holds no lock the spec needs as long as what it stages is not
 * due work when the workers stop.
 */
export async function withWorkersPaused<T>(fn: () => Promise<T>): Promise<T> {
  const pids = workerPids();
  for (const pid of pids) process.kill(pid, 'SIGSTOP');
  try {
    return await fn();
  } finally {
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        // Already gone: nothing to resume.
      }
    }
  }
}

export async function trpcQuery<T>(request: APIRequestContext, procedure: string, input: unknown): Promise<T> {
  const response = await request.get(`/api/trpc/${procedure}?input=${encodeURIComponent(JSON.stringify({ json: input }))}`);
  expect(response.status(), `${procedure}: ${await response.text()}`).toBe(200);
  return (await response.json()).result.data.json as T;
}

export async function trpcMutation<T>(request: APIRequestContext, procedure: string, input: unknown): Promise<T> {
  const response = await request.post(`/api/trpc/${procedure}`, { data: { json: input } });
  expect(response.status(), `${procedure}: ${await response.text()}`).toBe(200);
  return (await response.json()).result.data.json as T;
}
