import { createHash } from 'node:crypto';
import type pg from 'pg';
import { SESSION_COOKIE_NAMES } from '../common/cookies';
import { db, poolOf } from '../db';
import { rateCounterFor, type RateBucket, type SharedRateCounter } from '../db/rate-counter';
import { env, type Env } from '../env';
import { processSingleton } from '../process-registry';

// API calls a minute per API key, per signed-in session and per client address: one
// integration or one browser tab gone wild cannot take the whole server.
// A request is charged to its address (the only bucket of a caller without credentials,
// and an outer bound for everyone, so that inventing a new key or cookie per request buys
// no fresh allowance) and to the key or session it presents. Buckets are keyed by a hash
// of the credential as sent, before any database lookup: a made-up credential only spends
// its address's allowance.
//
// The counters live in PostgreSQL (server/db/rate-counter.ts: one upsert per request for
// both buckets), so every web process behind a load balancer enforces the one limit, not
// one each. When PostgreSQL does not answer, each process counts in its own memory until it
// does (the insurance; docs/deploy.md, "Shared limits").

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

const WINDOW_SECONDS = 60;

export class ApiRateLimits {
  private readonly limits: Record<RateLimitedScope, number>;

  /** `counter`: where the calls are counted (the process's database by default), asked on first use. */
  constructor(limits: Limits, private readonly counter: () => SharedRateCounter = () => rateCounterFor(processPool())) {
    this.limits = { key: limits.RATE_LIMIT_PER_KEY, session: limits.RATE_LIMIT_PER_SESSION, address: limits.RATE_LIMIT_PER_ADDRESS };
  }

  /** Charge `calls` to the subject's buckets; null when allowed, or which limit it met and when to retry. */
  async take(subject: RateLimitSubject, calls: number): Promise<RateLimitRefusal | null> {
    const scopes: [RateLimitedScope, string][] = [['address', subject.address]];
    if (subject.apiKey !== null) scopes.push(['key', digest(subject.apiKey)]);
    else if (subject.session !== null) scopes.push(['session', digest(subject.session)]);
    const limited = scopes.filter(([scope]) => this.limits[scope] > 0);
    if (limited.length === 0) return null;
    const buckets: RateBucket[] = limited.map(([scope, id]) => ({ key: `${scope}:${id}`, limit: this.limits[scope], windowSeconds: WINDOW_SECONDS }));
    const refusal = await this.counter().take(buckets, calls);
    if (!refusal) return null;
    const scope = limited[refusal.bucket]![0];
    return { scope, limit: this.limits[scope], retryAfterSeconds: Math.max(1, Math.ceil(refusal.retryAfterMs / 1000)) };
  }
}

function processPool(): pg.Pool {
  const pool = poolOf(db());
  if (!pool) throw new Error('the process database client has no pool of its own');
  return pool;
}

function digest(credential: string): string {
  return createHash('sha256').update(credential, 'utf8').digest('base64url');
}

/** The process's limits, sized from RATE_LIMIT_PER_* on first use. */
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
