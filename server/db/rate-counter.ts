import type pg from 'pg';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { processSingleton } from '../process-registry';
import { log as logger } from '../log';

// Request limits counted in PostgreSQL, so every web process enforces the one limit: the
// API's calls a minute (server/http/rate-limits.ts) and better-auth's sign-in attempts per
// address (server/auth/auth.ts). A bucket is a fixed window in "RateLimitBucket"
// (migration 20261207300000_shared_rate_limits); a request's buckets are charged by one
// upsert, one round trip. The row lock of INSERT ... ON CONFLICT DO UPDATE serialises
// concurrent charges of one bucket, from any process, and each sees the total before it:
// of any number of concurrent calls, exactly `limit` are allowed in a window.
//
// Not rate-limiter-flexible's RateLimiterPostgres: it charges one bucket per round trip (a
// request has two), its statements cannot carry the `-- name` every statement here has
// (test/sql-names.test.ts), and it computes windows from each web process's own clock, so
// processes on machines whose clocks disagree would disagree on when a window ends. Here
// the database's clock, the same for everyone, decides.
//
// The insurance: when the statement fails (PostgreSQL down, the connection cut, the wait
// bounds of the pool passed), the process counts in its own memory (RateLimiterMemory,
// the same limits and windows) until PostgreSQL answers again, so an outage neither
// refuses every caller nor lifts the limits. While PostgreSQL answers, the memory is only
// a copy: each answer sets its bucket's count there, and it never refuses or allows
// anything. The copy means that during an outage a process goes on from the last count it
// saw, not from zero; each process then counts only what it serves.

export interface RateBucket {
  /** The bucket's name: its scope and subject ("key:<digest>"). */
  key: string;
  /** Calls allowed in a window. */
  limit: number;
  windowSeconds: number;
}

export interface RateRefusal {
  /** Which of the buckets refused (its index in the list). */
  bucket: number;
  /** Until the bucket's window ends. */
  retryAfterMs: number;
}

/** How often a process forgets windows that ended (a delete of its own, from a take). */
const SWEEP_EVERY_MS = 5 * 60_000;

interface Counted {
  points: number;
  retryAfterMs: number;
}

export class SharedRateCounter {
  private readonly insurance = new Map<string, RateLimiterMemory>();
  private lastSweep = Date.now();
  /** Set while the insurance counts: when it started, to say so once per outage. */
  private outageSince: number | null = null;

  constructor(
    private readonly pool: () => pg.Pool,
    private readonly log: (line: string) => void = (line) => logger.warn(line),
  ) {}

  /**
   * Charge `points` to each bucket in turn; a bucket after one that refused is not charged.
   * Null when every bucket allows it.
   */
  async take(buckets: readonly RateBucket[], points: number): Promise<RateRefusal | null> {
    if (buckets.length === 0) return null;
    if (buckets.length > 2) throw new Error('take() charges at most two buckets (an address and a credential)');
    let counted: (Counted | null)[];
    try {
      counted = await this.takeShared(buckets, points);
    } catch (error) {
      if (this.outageSince === null) {
        this.outageSince = Date.now();
        this.log(`rate limits: PostgreSQL did not count (${error instanceof Error ? error.message : String(error)}); counting in this process's memory until it does`);
      }
      return this.takeInsured(buckets, points);
    }
    if (this.outageSince !== null) {
      this.log(`rate limits: counted in PostgreSQL again, after ${Math.round((Date.now() - this.outageSince) / 1000)} s in this process's memory`);
      this.outageSince = null;
    }
    this.sweepNowAndThen();
    for (const [i, bucket] of buckets.entries()) {
      const c = counted[i];
      if (!c) break;
      // The copy the insurance would go on from; set() cannot refuse.
      void this.insuranceOf(bucket).set(bucket.key, c.points, Math.max(1, Math.ceil(c.retryAfterMs / 1000))).catch(() => {});
      if (c.points > bucket.limit) return { bucket: i, retryAfterMs: c.retryAfterMs };
    }
    return null;
  }

  /** Delete the windows that ended over a minute ago (any process may; each does every few minutes). */
  async forgetExpired(): Promise<number> {
    const result = await this.pool().query(`-- forgetExpiredRateLimits
      DELETE FROM "RateLimitBucket" WHERE "expiresAt" < now() - interval '1 minute'`);
    return result.rowCount ?? 0;
  }

  private async takeShared(buckets: readonly RateBucket[], points: number): Promise<(Counted | null)[]> {
    const [first, second] = buckets as [RateBucket, RateBucket | undefined];
    // Milliseconds left are floored: "expiresAt" is kept to the millisecond, rounded, and a
    // window just begun must say 60 s, not 61.
    // The second bucket is charged only if the first allowed the call (a data-modifying
    // CTE sees the RETURNING rows of the one before it). A new window starts when the
    // stored one has ended; the charge counts even when it goes past the limit.
    const { rows } = await this.pool().query<{ p1: number; ms1: number; p2: number | null; ms2: number | null }>(
      `-- takeRateLimit
      WITH first AS (
        INSERT INTO "RateLimitBucket" AS b (key, points, "expiresAt")
        VALUES ($1, $2, now() + make_interval(secs => $3))
        ON CONFLICT (key) DO UPDATE SET
          points = CASE WHEN b."expiresAt" <= now() THEN EXCLUDED.points ELSE LEAST(b.points::bigint + EXCLUDED.points, 2147483647)::int END,
          "expiresAt" = CASE WHEN b."expiresAt" <= now() THEN EXCLUDED."expiresAt" ELSE b."expiresAt" END
        RETURNING points, "expiresAt"
      ), second AS (
        INSERT INTO "RateLimitBucket" AS b (key, points, "expiresAt")
        SELECT $5::text, $2, now() + make_interval(secs => $6) FROM first WHERE $5::text IS NOT NULL AND first.points <= $4
        ON CONFLICT (key) DO UPDATE SET
          points = CASE WHEN b."expiresAt" <= now() THEN EXCLUDED.points ELSE LEAST(b.points::bigint + EXCLUDED.points, 2147483647)::int END,
          "expiresAt" = CASE WHEN b."expiresAt" <= now() THEN EXCLUDED."expiresAt" ELSE b."expiresAt" END
        RETURNING points, "expiresAt"
      )
      SELECT f.points AS p1, floor(GREATEST(0, extract(epoch FROM f."expiresAt" - now()) * 1000))::int AS ms1,
             s.points AS p2, floor(GREATEST(0, extract(epoch FROM s."expiresAt" - now()) * 1000))::int AS ms2
        FROM first f LEFT JOIN second s ON true`,
      [first.key, points, first.windowSeconds, first.limit, second?.key ?? null, second?.windowSeconds ?? 0],
    );
    const row = rows[0]!;
    return [{ points: row.p1, retryAfterMs: row.ms1 }, row.p2 === null ? null : { points: row.p2, retryAfterMs: row.ms2 ?? 0 }];
  }

  private async takeInsured(buckets: readonly RateBucket[], points: number): Promise<RateRefusal | null> {
    for (const [i, bucket] of buckets.entries()) {
      try {
        await this.insuranceOf(bucket).consume(bucket.key, points);
      } catch (rejection) {
        // RateLimiterRes, recognised by its shape: another copy of the library may have made it.
        const msBeforeNext = (rejection as { msBeforeNext?: unknown } | null)?.msBeforeNext;
        if (typeof msBeforeNext !== 'number') throw rejection;
        return { bucket: i, retryAfterMs: msBeforeNext };
      }
    }
    return null;
  }

  private insuranceOf(bucket: RateBucket): RateLimiterMemory {
    const shape = `${bucket.limit}/${bucket.windowSeconds}`;
    let limiter = this.insurance.get(shape);
    if (!limiter) {
      limiter = new RateLimiterMemory({ points: bucket.limit, duration: bucket.windowSeconds });
      this.insurance.set(shape, limiter);
    }
    return limiter;
  }

  private sweepNowAndThen(): void {
    if (Date.now() - this.lastSweep < SWEEP_EVERY_MS) return;
    this.lastSweep = Date.now();
    this.forgetExpired().catch((error: unknown) => this.log(`rate limits: forgetting expired windows failed: ${String(error)}`));
  }
}

/** The process's counter over a pool (one per pool, whichever copy of this module asks: server/process-registry.ts). */
export function rateCounterFor(pool: pg.Pool): SharedRateCounter {
  const counters = processSingleton('db.rateCounters', () => new WeakMap<pg.Pool, SharedRateCounter>());
  let counter = counters.get(pool);
  if (!counter) {
    counter = new SharedRateCounter(() => pool);
    counters.set(pool, counter);
  }
  return counter;
}
