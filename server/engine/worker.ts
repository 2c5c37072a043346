import { databaseUnavailable } from '../database-unavailable';
import { type EngineContext } from './context';
import { processDueEvents } from './events';
import { processDueWaits, processPendingContinuations, processReadySteps } from './runner';
import { deliverQueuedMessages } from './sender';

// A worker's loop (the process around it is scripts/worker.ts): any number of them, on any number of machines, against one
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
  /** The longest sleep between failed passes (the back-off's cap); default 10 s. */
  maxBackoffMs?: number;
}

/**
 * The sleep after the `failures`-th failed pass in a row: exponential from 250 ms up to
 * the cap, each drawn at random from its upper half, so that a fleet of workers that lost
 * the database together does not come back at it in one herd.
 */
export function backoffMs(failures: number, capMs = 10_000, random: () => number = Math.random): number {
  const ceiling = Math.min(capMs, 250 * 2 ** Math.min(failures, 20));
  return Math.round(ceiling / 2 + (ceiling / 2) * random());
}

function total(c: PassCounts): number {
  return c.steps + c.waits + c.events + c.messages + c.continuations;
}

/** Which queues a pass polls besides steps and messages (a busy worker skips idle ones for a while). */
export interface PassPlan {
  waits: boolean;
  events: boolean;
  continuations: boolean;
}

const EVERY_QUEUE: PassPlan = { waits: true, events: true, continuations: true };

/**
 * A worker busy with steps polls the timers and the event outbox at most this often
 * while their last poll found nothing: an empty poll is a round trip (three for the
 * timers' transaction) per pass that buys nothing while steps are queued.
 */
export const IDLE_QUEUE_POLL_MS = 250;

/**
 * Due waits the timer resolves per pass, at most: resolving and advancing them are a few
 * set-based statements whatever their number (claims/continuation.ts), so a batch of them
 * costs about what one costs. The next steps of the first `concurrency` of them run in the
 * pass; the others are left due to the step queue.
 */
export const WAIT_BATCH = 100;

/**
 * One pass over the queues: steps, the timers, the event outbox and the email outbox at
 * once, each on its own connections, so their round trips overlap; the continuation
 * sweep after them. The queues a plan leaves out are not polled.
 */
export async function runPass(ctx: EngineContext, opts: WorkerOptions, plan: PassPlan = EVERY_QUEUE): Promise<PassCounts> {
  // Every queue settles before the pass ends, even when one fails: a pass never overlaps the next.
  const settled = await Promise.allSettled([
    processReadySteps(ctx, opts.concurrency),
    plan.waits ? processDueWaits(ctx, Math.max(WAIT_BATCH, opts.concurrency), opts.concurrency) : 0,
    plan.events ? processDueEvents(ctx, opts.concurrency) : 0,
    deliverQueuedMessages(ctx, { from: opts.from, limit: opts.concurrency }),
  ]);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
  const [steps, waits, events, messages] = settled.map((s) => (s as PromiseFulfilledResult<number>).value) as [number, number, number, number];
  const continuations = plan.continuations ? await processPendingContinuations(ctx, opts.concurrency) : 0;
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
    const counts = await runPass(ctx, options);
    for (const key of Object.keys(sum) as (keyof PassCounts)[]) sum[key] += counts[key];
    if (total(counts) === 0) break;
  }
  return sum;
}

export class Worker {
  private stopping = false;
  private wake: (() => void) | null = null;
  /** A NOTIFY arrived since the current pass began: do not sleep after it. */
  private poked = false;
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
    this.poked = true;
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
    // An outage (the database unreachable) is logged when it begins and when it ends, not
    // once per failed pass: a worker retrying every few seconds for ten minutes says two lines.
    let outageSince: number | null = null;
    // The timers and the event outbox: when each was last polled, and whether that poll found work.
    const polled = { waits: { at: 0, found: true }, events: { at: 0, found: true } };
    let busy = false;
    while (!this.stopping) {
      let counts: PassCounts | null = null;
      this.poked = false;
      const now = Date.now();
      // Busy with steps, a queue whose last poll found nothing waits its turn; otherwise every queue is polled.
      const due = (q: { at: number; found: boolean }) => !busy || q.found || now - q.at >= IDLE_QUEUE_POLL_MS;
      const plan: PassPlan = {
        waits: due(polled.waits),
        events: due(polled.events),
        continuations: now - this.lastContinuationSweep > this.ctx.config.continuationGraceSeconds * 1000,
      };
      try {
        if (plan.continuations) this.lastContinuationSweep = now;
        counts = await runPass(this.ctx, this.options, plan);
        if (plan.waits) polled.waits = { at: now, found: counts.waits > 0 };
        if (plan.events) polled.events = { at: now, found: counts.events > 0 };
        busy = counts.steps > 0;
        if (outageSince !== null) {
          this.ctx.log('info', 'database reachable again; resuming', { downForMs: Date.now() - outageSince, failedPasses: failures });
          outageSince = null;
        }
        failures = 0;
      } catch (error) {
        // PostgreSQL restarting, a network blip: back off and try again. Claims are safe to
        // retry, and a step this pass held keeps its lease until it expires for any worker.
        busy = false;
        failures++;
        if (!databaseUnavailable(error)) {
          this.ctx.log('error', 'worker pass failed', { error: String(error), failures });
        } else if (outageSince === null) {
          outageSince = Date.now();
          this.ctx.log('warn', 'database unreachable; backing off until it is back', { error: String(error).split('\n').at(-1) });
        }
      }
      if (this.stopping) break;
      // Work found, or work announced while this pass ran (it may have missed it), or a
      // queue left out of this pass: go again (a pass that finds no step polls them all).
      if (counts && (total(counts) > 0 || this.poked || !plan.waits || !plan.events)) continue;
      const idle = counts ? (this.options.pollMs ?? 1000) : backoffMs(failures, this.options.maxBackoffMs);
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
