import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SharedRateCounter, type RateBucket } from '../../server/db/rate-counter';
import { freshDatabase, type TestDatabase } from '../support/database';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy';

// The counter under every shared request limit (server/db/rate-counter.ts), with real
// concurrency: several counters, each on a pool of its own (as several web processes
// are), charging one bucket at once. Of any number of concurrent calls, exactly `limit`
// are allowed, round after round; the insurance in memory takes over only when PostgreSQL
// does not answer, and goes on from the last count PostgreSQL gave.
//
// Shown to matter: with the upsert's `b.points + EXCLUDED.points` replaced by a read, then
// a write (SELECT points first, then the upsert setting <read> + points), the first round
// allowed all 30 of its calls for a limit of 10; with the second bucket's `first.points <= $4` removed, a caller
// refused by its address still spent its key's allowance.

const ROUNDS = 20;
const PROCESSES = 4;

let t: TestDatabase;
const pools: pg.Pool[] = [];
let counters: SharedRateCounter[] = [];

function pool(url: string): pg.Pool {
  const p = new pg.Pool({ connectionString: url, max: 4, connectionTimeoutMillis: 2_000 });
  p.on('error', () => {});
  pools.push(p);
  return p;
}

beforeAll(async () => {
  t = await freshDatabase();
  counters = Array.from({ length: PROCESSES }, () => {
    const p = pool(t.url);
    return new SharedRateCounter(() => p, () => {});
  });
});

afterAll(async () => {
  await Promise.all(pools.map((p) => p.end().catch(() => {})));
  await t?.drop();
});

const bucket = (limit: number, windowSeconds = 60): RateBucket => ({ key: `test:${randomUUID()}`, limit, windowSeconds });

describe('one limit for every process', () => {
  it(`${ROUNDS} rounds: of 3×limit concurrent calls from ${PROCESSES} counters on their own pools, exactly limit are allowed`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const limit = 10 + round;
      const b = bucket(limit);
      const verdicts = await Promise.all(Array.from({ length: 3 * limit }, (_, i) => counters[i % PROCESSES]!.take([b], 1)));
      expect(verdicts.filter((v) => v === null).length, `round ${round}`).toBe(limit);
      const [row] = await t.query(`SELECT points FROM "RateLimitBucket" WHERE key = $1`, [b.key]);
      // Refused calls count too: every call reached PostgreSQL, none went to the insurance.
      expect(row.points).toBe(3 * limit);
    }
  });

  it('a batch charges its number of calls; a refusal says until when', async () => {
    const b = bucket(10);
    expect(await counters[0]!.take([b], 6)).toBeNull();
    expect(await counters[1]!.take([b], 4)).toBeNull();
    const refusal = await counters[2]!.take([b], 1);
    expect(refusal).toMatchObject({ bucket: 0 });
    expect(refusal!.retryAfterMs).toBeGreaterThan(55_000);
    expect(refusal!.retryAfterMs).toBeLessThanOrEqual(60_000);
  });

  it('the second bucket is charged only when the first allowed the call, concurrently too', async () => {
    for (let round = 0; round < 5; round++) {
      const address = bucket(5);
      const key = bucket(100);
      const verdicts = await Promise.all(Array.from({ length: 20 }, (_, i) => counters[i % PROCESSES]!.take([address, key], 1)));
      expect(verdicts.filter((v) => v === null).length).toBe(5);
      expect(verdicts.filter((v) => v?.bucket === 0).length).toBe(15);
      const rows = await t.query(`SELECT key, points FROM "RateLimitBucket" WHERE key = ANY($1) ORDER BY key = $2 DESC`, [[address.key, key.key], address.key]);
      expect(rows.map((r) => r.points)).toEqual([20, 5]);
    }
    // And a key at its limit refuses as the second bucket.
    const address = bucket(100);
    const key = bucket(2);
    const verdicts = await Promise.all(Array.from({ length: 6 }, (_, i) => counters[i % PROCESSES]!.take([address, key], 1)));
    expect(verdicts.filter((v) => v === null).length).toBe(2);
    expect(verdicts.filter((v) => v?.bucket === 1).length).toBe(4);
  });

  it('a window that ended starts again; windows that ended over a minute ago are forgotten', async () => {
    const b = bucket(2, 1);
    expect(await counters[0]!.take([b], 2)).toBeNull();
    expect(await counters[1]!.take([b], 1)).not.toBeNull();
    await new Promise((r) => setTimeout(r, 1_100));
    expect(await counters[1]!.take([b], 1)).toBeNull();

    const old = `test:${randomUUID()}`;
    await t.query(`INSERT INTO "RateLimitBucket" (key, points, "expiresAt") VALUES ($1, 3, now() - interval '2 minutes')`, [old]);
    expect(await counters[0]!.forgetExpired()).toBeGreaterThanOrEqual(1);
    expect(await t.query(`SELECT 1 FROM "RateLimitBucket" WHERE key = $1`, [old])).toEqual([]);
    expect(await t.query(`SELECT 1 FROM "RateLimitBucket" WHERE key = $1`, [b.key])).toHaveLength(1);
  });
});

describe('the insurance in memory', () => {
  let proxy: TcpProxy;
  beforeAll(async () => {
    const target = new URL(t.url);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  });
  afterAll(() => proxy?.close());

  it('takes over while PostgreSQL is unreachable, going on from the last count it saw, and hands back when it answers', async () => {
    for (let round = 0; round < 5; round++) {
      const lines: string[] = [];
      const p = pool(proxy.url(t.url));
      const counter = new SharedRateCounter(() => p, (line) => lines.push(line));
      const other = counters[0]!;
      const b = bucket(10);
      // Counted in PostgreSQL: 4 by this process, 3 by another.
      expect(await counter.take([b], 4)).toBeNull();
      expect(await other.take([b], 3)).toBeNull();
      expect(await counter.take([b], 1)).toBeNull();

      await proxy.cut(round % 2 === 0 ? 'refuse' : 'blackhole');
      // The last count this process saw was 8: two more, then refusals, from memory.
      const during = [];
      for (let i = 0; i < 5; i++) during.push(await counter.take([b], 1));
      expect(during.map((v) => v === null)).toEqual([true, true, false, false, false]);
      expect(during[2]!.retryAfterMs).toBeGreaterThan(0);
      expect(lines.filter((l) => l.includes("counting in this process's memory"))).toHaveLength(1);
      // PostgreSQL counted none of them.
      expect((await t.query(`SELECT points FROM "RateLimitBucket" WHERE key = $1`, [b.key]))[0].points).toBe(8);

      await proxy.restore();
      // Back in PostgreSQL: its count (8) decides, not the memory's.
      const after = [];
      for (let i = 0; i < 3; i++) after.push(await counter.take([b], 1));
      expect(after.map((v) => v === null)).toEqual([true, true, false]);
      expect(lines.some((l) => l.includes('counted in PostgreSQL again'))).toBe(true);
      expect((await t.query(`SELECT points FROM "RateLimitBucket" WHERE key = $1`, [b.key]))[0].points).toBe(11);
      await p.end().catch(() => {});
    }
  }, 120_000);

  it('while PostgreSQL answers, the memory never allows what PostgreSQL refused', async () => {
    // A process whose memory has seen nothing of the bucket still refuses once PostgreSQL has counted the limit.
    const b = bucket(3);
    expect(await counters[0]!.take([b], 3)).toBeNull();
    const fresh = new SharedRateCounter(() => pools[1]!, () => {});
    for (let i = 0; i < 5; i++) expect(await fresh.take([b], 1)).not.toBeNull();
  });
});
