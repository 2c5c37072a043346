import { createHash } from 'node:crypto';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { SESSION_COOKIE_NAMES } from '../common/cookies';
import { env, type Env } from '../env';
import { processSingleton } from '../process-registry';

// API calls a minute per API key, per signed-in session and per client address: one
// integration or one browser tab gone wild cannot take the whole server.
// A request is charged to its address (the only bucket of a caller without credentials,
// and an outer bound for everyone, so that inventing a new key or cookie per request buys
// no fresh allowance) and to the key or session it presents. Buckets are keyed by a hash
// of the credential as sent, before any database lookup: a flood costs no queries, and a
// made-up credential only spends its address's allowance.
//
// The counters live in this process's memory. `npm start` runs one web process, so that
// is every request; a deployment with several web processes multiplies the limits by
// their number (docs/operations.md, "The web tier"). The two API routes are separate bundles in a Next.js
// build, and scripts/web.ts has a copy of its own, so the counters are kept once per
// process (server/process-registry.ts), one set for all.

export type RateLimitedScope = 'key' | 'session' | 'address';

export interface RateLimitRefusal {
  scope: RateLimitedScope;
  /** The scope's allowance, in calls a minute. */
  limit: number;
  retryAfterSeconds: number;
}

/** Who a request is, for counting: the raw credential it carries, and its address. */
export interface RateLimitSubject {
  apiKey: string | null;
  session: string | null;
  address: string;
}

type Limits = Pick<Env, 'RATE_LIMIT_PER_KEY' | 'RATE_LIMIT_PER_SESSION' | 'RATE_LIMIT_PER_ADDRESS'>;

export class ApiRateLimits {
  private readonly limiters: Record<RateLimitedScope, { limit: number; limiter: RateLimiterMemory } | null>;

  constructor(limits: Limits) {
    const make = (limit: number) => (limit > 0 ? { limit, limiter: new RateLimiterMemory({ points: limit, duration: 60 }) } : null);
    this.limiters = { key: make(limits.RATE_LIMIT_PER_KEY), session: make(limits.RATE_LIMIT_PER_SESSION), address: make(limits.RATE_LIMIT_PER_ADDRESS) };
  }

  /** Charge `calls` to the subject's buckets; null when allowed, or which limit it met and when to retry. */
  async take(subject: RateLimitSubject, calls: number): Promise<RateLimitRefusal | null> {
    const buckets: [RateLimitedScope, string][] = [['address', subject.address]];
    if (subject.apiKey !== null) buckets.push(['key', digest(subject.apiKey)]);
    else if (subject.session !== null) buckets.push(['session', digest(subject.session)]);
    for (const [scope, id] of buckets) {
      const entry = this.limiters[scope];
      if (!entry) continue;
      try {
        await entry.limiter.consume(id, calls);
      } catch (rejection) {
        if (!(rejection instanceof RateLimiterRes)) throw rejection;
        return { scope, limit: entry.limit, retryAfterSeconds: Math.max(1, Math.ceil(rejection.msBeforeNext / 1000)) };
      }
    }
    return null;
  }
}

function digest(credential: string): string {
  return createHash('sha256').update(credential, 'utf8').digest('base64url');
}

/** The process-wide counters, sized from RATE_LIMIT_PER_* on first use. */
export function apiRateLimits(): ApiRateLimits {
  return processSingleton('http.apiRateLimits', () => new ApiRateLimits(env()));
}

function cookieValue(cookieHeader: string | null, names: readonly string[]): string | null {
  for (const part of (cookieHeader ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at === -1) continue;
    if (names.includes(part.slice(0, at).trim())) return part.slice(at + 1).trim() || null;
  }
  return null;
}

/**
 * A request's subject. The address is X-Forwarded-For as the web server (web-server.ts) leaves it: the
 * socket's address, or what a trusted proxy reported (TRUSTED_PROXIES). `cookies: false`
 * for /api/v1, which never reads them.
 */
export function rateLimitSubject(headers: Headers, options: { cookies: boolean }): RateLimitSubject {
  const apiKey = headers.get('authorization');
  return {
    apiKey,
    session: apiKey === null && options.cookies ? cookieValue(headers.get('cookie'), SESSION_COOKIE_NAMES) : null,
    address: headers.get('x-forwarded-for')?.trim() || 'unknown',
  };
}

const WHOSE: Record<RateLimitedScope, string> = { key: 'this API key', session: 'this session', address: 'this address' };

export function rateLimitMessage(refusal: RateLimitRefusal): string {
  return `Too many API calls from ${WHOSE[refusal.scope]}: the limit is ${refusal.limit} a minute. Try again in ${refusal.retryAfterSeconds} s.`;
}
