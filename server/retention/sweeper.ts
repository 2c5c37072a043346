import type { RawDb } from '../db';
import { DEFAULT_TIMING, total, type RetentionKind, type SweepTiming } from './policy';
import { runSweep } from './sweep';

// A worker process's retention timer (scripts/worker.ts starts it when RETENTION_DAYS or
// AUDIT_RETENTION_DAYS is set): every checkEveryMs it asks for each kind whose period is
// set whether a sweep is due and nobody holds it (server/retention/sweep.ts, claimSweep),
// and if so runs it on its own connection, so the worker's steps never wait for a batch.
// On SIGTERM it stops between two batches and records the sweep STOPPED.

export interface SweeperOptions {
  owner: string;
  historyDays: number;
  auditDays: number;
  graceSeconds: number;
  timing?: Partial<SweepTiming>;
  log?: (level: 'info' | 'warn', message: string, fields?: Record<string, unknown>) => void;
}

export class RetentionSweeper {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;

  constructor(
    private readonly db: RawDb,
    private readonly opts: SweeperOptions,
  ) {}

  /** Whether this configuration sweeps anything at all. */
  get enabled(): boolean {
    return this.opts.historyDays > 0 || this.opts.auditDays > 0;
  }

  start(): void {
    if (this.timer || this.stopped || !this.enabled) return;
    const every = this.opts.timing?.checkEveryMs ?? DEFAULT_TIMING.checkEveryMs;
    this.timer = setInterval(() => this.tick(), every);
    this.tick();
  }

  /** One check of both kinds (a sweep, if one is due); resolves when it is over. */
  tick(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.running ??= this.checkBoth().finally(() => (this.running = null));
    return this.running;
  }

  private async checkBoth(): Promise<void> {
    const kinds: [RetentionKind, number][] = [
      ['history', this.opts.historyDays],
      ['audit', this.opts.auditDays],
    ];
    for (const [kind, days] of kinds) {
      if (days <= 0 || this.stopped) continue;
      try {
        const result = await runSweep(this.db, kind, this.opts.owner, {
          days,
          graceSeconds: this.opts.graceSeconds,
          timing: this.opts.timing,
          shouldStop: () => this.stopped,
        });
        if (result) {
          this.opts.log?.('info', `retention sweep (${kind}) ${result.outcome.toLowerCase()}`, {
            days,
            cutoff: result.cutoff.toISOString(),
            removed: result.removed,
            rows: total(result.removed),
            batches: result.batches,
            durationMs: result.durationMs,
          });
        }
      } catch (error) {
        this.opts.log?.('warn', `retention sweep (${kind}) failed; the next check tries again`, { error: String(error).split('\n').at(-1) });
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }
}
