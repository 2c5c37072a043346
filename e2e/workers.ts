import { readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';

// Staging a state the workers would heal at once. The e2e server runs the real `npm start`
// with its workers, which fire a due timer the moment it is due: a WAIT_OVERDUE never
// lasts. A spec that needs one pauses the workers (SIGSTOP, their pids from the
// supervisor's run file), moves the wait's deadline into the past in the run's database
// (its URL from the file scripts/e2e-server.ts writes), acts, and resumes them (SIGCONT)
// in a finally: the other spec files share this server and its workers.

const ROOT = path.resolve(import.meta.dirname, '..');

export function portOf(baseURL: string | undefined): string {
  return new URL(baseURL ?? 'http://127.0.0.1:3100').port;
}

/** This run's database (written by scripts/e2e-server.ts). */
export function e2eDatabaseUrl(port: string): string {
  return (JSON.parse(readFileSync(path.join(ROOT, '.data', `e2e-${port}.json`), 'utf8')) as { databaseUrl: string }).databaseUrl;
}

/** The worker processes of the run (scripts/supervisor.ts's run file). */
export function workerPids(port: string): number[] {
  const recorded = JSON.parse(readFileSync(path.join(ROOT, '.data', `run-${port}.json`), 'utf8')) as { name: string; pid: number }[];
  const pids = recorded.filter((c) => c.name.startsWith('worker-')).map((c) => c.pid);
  if (pids.length === 0) throw new Error(`no workers recorded in .data/run-${port}.json`);
  return pids;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function signalAll(pids: number[], signal: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
    }
  }
}

export class Workers {
  private paused = false;
  private readonly pids: number[];
  private readonly resumeOnExit = () => this.paused && signalAll(this.pids, 'SIGCONT');

  constructor(
    port: string,
    private readonly db: pg.Client,
  ) {
    this.pids = workerPids(port);
    // Never leave the shared server's workers stopped, even if this process dies.
    process.once('exit', this.resumeOnExit);
  }

  /**
   * Stop every worker between transactions: a worker stopped inside one would hold its
   * row locks, and a repair of those rows would wait forever. So after each stop, look
   * whether any worker connection is still busy (active, or idle inside a transaction);
   * if so, let them run a moment and try again.
   */
  async pause(): Promise<void> {
    for (let attempt = 0; attempt < 100; attempt++) {
      signalAll(this.pids, 'SIGSTOP');
      this.paused = true;
      await sleep(250);
      const { rows } = await this.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND application_name LIKE 'waypost-worker%' AND state <> 'idle'`,
      );
      if (rows[0]!.n === 0) return;
      signalAll(this.pids, 'SIGCONT');
      this.paused = false;
      await sleep(50 + Math.floor(Math.random() * 200));
    }
    throw new Error('the workers never came to rest between transactions');
  }

  resume(): void {
    signalAll(this.pids, 'SIGCONT');
    this.paused = false;
  }
}

export async function connect(port: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: e2eDatabaseUrl(port), application_name: 'waypost-e2e-spec' });
  await client.connect();
  return client;
}

/**
 * Move an execution's parked wait past its deadline (as if the timer were minutes late):
 * only with the workers paused, or they fire it at once. Returns the step execution's id.
 */
export async function makeWaitOverdue(db: pg.Client, executionId: string): Promise<string> {
  const { rows } = await db.query<{ id: string }>(
    `UPDATE "StepExecution" s
        SET "dueAt" = now() - interval '10 minutes', "startedAt" = LEAST(s."startedAt", now() - interval '20 minutes')
       FROM "WorkflowExecution" e
      WHERE e.id = $1 AND s."executionId" = e.id AND s."stepId" = e."currentStepId"
        AND e.status = 'WAITING' AND s.status = 'WAITING' AND s."resolvedBy" IS NULL
      RETURNING s.id`,
    [executionId],
  );
  if (rows.length !== 1) throw new Error(`execution ${executionId} has no open wait to make overdue`);
  return rows[0]!.id;
}
