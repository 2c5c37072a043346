import { describe, expect, it } from 'vitest';
import { FAULT_KINDS, faultSchedule } from '../../drill/schedule';

// The drill's schedules: the full one has every kind of fault, each one-off in a slot of its
// own; `--only KIND` (what drill/guard-mutations.ts runs) has that kind alone.

const base = { seed: 7, duration: 60, workers: 4, leaseSeconds: 4, ownsPostgres: true };

describe('the drill fault schedule', () => {
  it('is the same for the same seed, and names every kind of fault', () => {
    const a = faultSchedule(base);
    expect(faultSchedule(base)).toEqual(a);
    expect(new Set(a.map((f) => f.kind))).toEqual(new Set(FAULT_KINDS));
    // Every fault lands inside the run.
    for (const f of a) {
      expect(f.at).toBeGreaterThan(0);
      expect(f.at).toBeLessThan(base.duration);
    }
  });

  it('leaves the PostgreSQL restart out on a server the drill does not own', () => {
    expect(faultSchedule({ ...base, ownsPostgres: false }).some((f) => f.kind === 'postgres-restart')).toBe(false);
  });

  it.each(FAULT_KINDS.filter((k) => k !== 'worker-kill' && k !== 'mail-hang'))('--only %s: that fault three times and nothing else', (kind) => {
    const faults = faultSchedule({ ...base, only: kind });
    expect(faults.map((f) => f.kind)).toEqual([kind, kind, kind]);
  });

  it('--only mail-hang keeps the kill of a hung worker that is part of it; --only worker-kill is kills alone', () => {
    const hang = faultSchedule({ ...base, only: 'mail-hang' });
    expect(hang.filter((f) => f.kind === 'mail-hang')).toHaveLength(3);
    expect(hang.filter((f) => f.kind === 'worker-kill').map((f) => f.worker)).toEqual([0, 0, 0]);
    const kills = faultSchedule({ ...base, only: 'worker-kill' });
    expect(kills.length).toBeGreaterThan(5);
    expect(kills.every((f) => f.kind === 'worker-kill' && f.worker! < base.workers - 1)).toBe(true);
  });

  it('refuses --only postgres-restart on a server the drill does not own', () => {
    expect(() => faultSchedule({ ...base, ownsPostgres: false, only: 'postgres-restart' })).toThrow(/own its PostgreSQL/);
  });
});
