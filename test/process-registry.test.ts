import { describe, expect, it, vi } from 'vitest';
import type { ProcessSingletonKey } from '../server/process-registry';

// server/process-registry.ts: one value per process, however many copies of server/ it
// holds (scripts/web.ts's beside Next.js's bundles). vi.resetModules() makes the next
// dynamic import a fresh copy of every module, as a second bundle would be.

async function freshCopy<T>(load: () => Promise<T>): Promise<T> {
  vi.resetModules();
  return load();
}

describe('the process registry', () => {
  it('gives two copies of the registry module one value, made once', async () => {
    const a = await freshCopy(() => import('../server/process-registry'));
    const b = await freshCopy(() => import('../server/process-registry'));
    expect(a).not.toBe(b);
    const key = 'test.shared' as ProcessSingletonKey;
    const make = vi.fn(() => ({ made: true }));
    const first = a.processSingleton(key, make);
    expect(b.processSingleton(key, make)).toBe(first);
    expect(a.processSingleton(key, make)).toBe(first);
    expect(make).toHaveBeenCalledTimes(1);
  });

  it('stores nothing when making the value throws', async () => {
    const { processSingleton } = await import('../server/process-registry');
    const key = 'test.throws' as ProcessSingletonKey;
    expect(() => processSingleton(key, () => { throw new Error('not yet'); })).toThrow('not yet');
    expect(processSingleton(key, () => 'made')).toBe('made');
  });

  it("gives two copies of server/ one database client, one set of rate-limit counters, one statement-name map", async () => {
    const dbA = await freshCopy(() => import('../server/db'));
    const limitsA = await import('../server/http/rate-limits');
    const preparedA = await import('../server/db/registry');
    const dbB = await freshCopy(() => import('../server/db'));
    const limitsB = await import('../server/http/rate-limits');
    const preparedB = await import('../server/db/registry');
    expect(dbA.db).not.toBe(dbB.db);
    expect(limitsA.ApiRateLimits).not.toBe(limitsB.ApiRateLimits);
    const client = dbA.db();
    try {
      expect(dbB.db()).toBe(client);
      expect(limitsB.apiRateLimits()).toBe(limitsA.apiRateLimits());
      expect(preparedB.prepared).toBe(preparedA.prepared);
      // The client's pool is found through either copy's map: raw SQL takes the prepared path in both.
      expect(dbB.poolOf(client)).toBeDefined();
    } finally {
      await dbA.closeDb(client);
    }
  });
});
