import { hostname } from 'node:os';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { closeDb, createDb } from '../db';
import { databaseUrl, env, EnvError } from '../env';
import { createEngineContext, type EngineContext } from './context';
import { processDueEvents } from './events';
import { processDueWaits, processPendingContinuations, processReadySteps } from './runner';
import { deliverQueuedMessages } from './sender';
import { logTransport, smtpTransport } from './transport';
import { WAKEUP_CHANNEL } from './wakeup';

// A worker process: any number of them, on any number of machines, against one
// PostgreSQL. Each pass claims due work with FOR UPDATE SKIP LOCKED (steps, timers,
// events, messages, stale continuations), runs it, and goes again at once while there
// is work; idle, it sleeps until NOTIFY or the poll interval. SIGTERM drains: the pass
// in flight finishes (or its leases expire for another worker), then the process exits.

export interface PassCounts {
  steps: number;
  waits: number;
  events: number;
  messages: number;
  continuations: number;
}

export interface WorkerOptions {
  /** Executions (and timers, events, messages) handled at once per pass. */
  concurrency: number;
  /** Sender address for outgoing mail. */
  from: string;
  /** Idle sleep between passes when nothing wakes the worker. */
  pollMs?: number;
}

function total(c: PassCounts): number {
  return c.steps + c.waits + c.events + c.messages + c.continuations;
}

/** One pass over every queue. */
export async function runPass(ctx: EngineContext, opts: WorkerOptions, withContinuations: boolean): Promise<PassCounts> {
  const steps = await processReadySteps(ctx, opts.concurrency);
  const waits = await processDueWaits(ctx, opts.concurrency);
  const events = await processDueEvents(ctx, opts.concurrency);
  const messages = await deliverQueuedMessages(ctx, { from: opts.from, limit: opts.concurrency });
  const continuations = withContinuations ? await processPendingContinuations(ctx, opts.concurrency) : 0;
  return { steps, waits, events, messages, continuations };
}

/**
 * Process everything that is due now, pass after pass, until a pass finds nothing: the
 * deterministic form of a worker, for tests, the CLI and scripts.
 */
export async function runWorkerOnce(
  ctx: EngineContext,
  opts: Partial<WorkerOptions> & { maxPasses?: number } = {},
): Promise<PassCounts> {
  const options: WorkerOptions = { concurrency: opts.concurrency ?? 16, from: opts.from ?? 'Waypost <no-reply@waypost.local>' };
  const sum: PassCounts = { steps: 0, waits: 0, events: 0, messages: 0, continuations: 0 };
  for (let pass = 0; pass < (opts.maxPasses ?? 10_000); pass++) {
    const counts = await runPass(ctx, options, true);
    for (const key of Object.keys(sum) as (keyof PassCounts)[]) sum[key] += counts[key];
    if (total(counts) === 0) break;
  }
  return sum;
}

export class Worker {
  private stopping = false;
  private wake: (() => void) | null = null;
  private loop: Promise<void> | null = null;
  private lastContinuationSweep = 0;

  constructor(
    private readonly ctx: EngineContext,
    private readonly options: WorkerOptions,
  ) {}

  start(): void {
    this.loop ??= this.run();
  }

  /** Wake the loop now (a NOTIFY arrived). */
  poke(): void {
    this.wake?.();
  }

  /** Stop claiming, let the pass in flight finish, resolve when idle. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.poke();
    await this.loop;
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      let counts: PassCounts | null = null;
      try {
        const sweep = Date.now() - this.lastContinuationSweep > this.ctx.config.continuationGraceSeconds * 1000;
        if (sweep) this.lastContinuationSweep = Date.now();
        counts = await runPass(this.ctx, this.options, sweep);
        failures = 0;
      } catch (error) {
        // PostgreSQL restarting, a network blip: back off and try again; claims are safe to retry.
        failures++;
        this.ctx.log('error', 'worker pass failed', { error: String(error), failures });
      }
      if (this.stopping) break;
      if (counts && total(counts) > 0) continue;
      const idle = counts ? (this.options.pollMs ?? 1000) : Math.min(30_000, 500 * 2 ** failures);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, idle);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = null;
    }
  }
}

// ---------------------------------------------------------------------------
// `npm run worker -- --concurrency N`

function parseArgs(argv: string[]): { concurrency?: number } {
  const i = argv.indexOf('--concurrency');
  if (i === -1) return {};
  const value = Number(argv[i + 1]);
  if (!Number.isInteger(value) || value < 1 || value > 256) {
    throw new EnvError('--concurrency must be an integer from 1 to 256');
  }
  return { concurrency: value };
}

async function main(): Promise<void> {
  const config = env();
  const args = parseArgs(process.argv.slice(2));
  const concurrency = args.concurrency ?? config.WORKER_CONCURRENCY;
  const levels = ['debug', 'info', 'warn', 'error'];
  const minLevel = levels.indexOf(config.LOG_LEVEL);
  const owner = `worker:${hostname()}:${process.pid}`;
  const log: EngineContext['log'] = (level, message, fields) => {
    if (levels.indexOf(level) < minLevel) return;
    process.stdout.write(`${JSON.stringify({ at: new Date().toISOString(), level, worker: owner, message, ...fields })}\n`);
  };
  const url = databaseUrl();
  const db = createDb(url, {
    poolSize: concurrency + 2,
    applicationName: 'waypost-worker',
    onError: (error) => log('warn', 'database connection lost; reconnecting on next use', { error: error.message }),
  });
  const transport = config.SMTP_URL
    ? smtpTransport(config.SMTP_URL)
    : logTransport((line) => log('info', line));
  const ctx = createEngineContext(db, {
    owner,
    transport,
    log,
    config: {
      leaseSeconds: config.LEASE_SECONDS,
      eventMaxAttempts: config.EVENT_MAX_ATTEMPTS,
    },
  });
  const worker = new Worker(ctx, { concurrency, from: config.MAIL_FROM });

  // LISTEN on a dedicated connection. If it drops (PostgreSQL restarted), polling still
  // finds the work, and the listener comes back with a backoff.
  let stopping = false;
  let listener: pg.Client | null = null;
  let listenerRetry: NodeJS.Timeout | null = null;
  const listen = async (attempt: number): Promise<void> => {
    const client = new pg.Client({ connectionString: url, application_name: 'waypost-worker-listen' });
    client.on('notification', () => worker.poke());
    const retry = (error: unknown) => {
      if (listener !== client || stopping) return;
      listener = null;
      log('warn', 'wake-up listener lost; polling until it is back', { error: String(error) });
      listenerRetry = setTimeout(() => void listen(attempt + 1), Math.min(30_000, 1000 * 2 ** attempt));
    };
    client.on('error', retry);
    client.on('end', () => retry('connection ended'));
    listener = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${WAKEUP_CHANNEL}`);
      attempt = 0;
    } catch (error) {
      retry(error);
    }
  };
  await listen(0);

  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log('info', `${signal}: draining`);
    if (listenerRetry) clearTimeout(listenerRetry);
    const closing = listener;
    listener = null;
    await worker.stop();
    await closing?.end().catch(() => {});
    transport.close?.();
    await closeDb(db);
    log('info', 'stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  worker.start();
  log('info', 'worker started', { concurrency, transport: transport.name });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error) => {
    if (error instanceof EnvError) {
      process.stderr.write(`${error.message}\n`);
    } else {
      process.stderr.write(`worker failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
    }
    process.exit(1);
  });
}
