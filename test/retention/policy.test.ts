import { describe, expect, it } from 'vitest';
import { EXECUTION_STATUSES, FINISHED_STATUSES } from '../../server/common/execution-status';
import { TRANSITIONS, type Transition } from '../../server/engine/transitions';
import { EnvError, parseEnv } from '../../server/env';

// Retention's settings, and the facts of the state machine it stands on: a finished
// execution, a settled email and a processed event are moved by no claim, so removing one
// races no worker and no operator (server/retention/batches.ts).

describe('RETENTION_DAYS and AUDIT_RETENTION_DAYS', () => {
  it('are off by default (the embedded demo too), and 0 is off', () => {
    expect(parseEnv({})).toMatchObject({ RETENTION_DAYS: 0, AUDIT_RETENTION_DAYS: 0 });
    expect(parseEnv({ RETENTION_DAYS: '0', AUDIT_RETENTION_DAYS: '' })).toMatchObject({ RETENTION_DAYS: 0, AUDIT_RETENTION_DAYS: 0 });
    expect(parseEnv({ RETENTION_DAYS: '30', AUDIT_RETENTION_DAYS: ' 365 ' })).toMatchObject({ RETENTION_DAYS: 30, AUDIT_RETENTION_DAYS: 365 });
  });

  it.each([
    ['thirty', 'must be a whole number of days (0 or unset: off)'],
    ['30d', 'must be a whole number of days (0 or unset: off)'],
    ['1.5', 'must be a whole number of days (0 or unset: off)'],
    ['-1', 'must be 0 (off) or a positive number of days'],
    ['99999', 'must be at most 36500 days (100 years)'],
  ])('%s is refused with a sentence naming the variable', (value, message) => {
    for (const name of ['RETENTION_DAYS', 'AUDIT_RETENTION_DAYS']) {
      expect(() => parseEnv({ [name]: value })).toThrow(EnvError);
      expect(() => parseEnv({ [name]: value })).toThrow(`${name}: ${message} (got ${JSON.stringify(value)})`);
    }
  });
});

describe('what retention may remove is moved by no claim', () => {
  const moves = Object.entries(TRANSITIONS as Record<string, Transition>);

  it('the finished statuses are exactly the ones no claim moves an execution out of', () => {
    const movedFrom = new Set(moves.flatMap(([, t]) => (t.execution?.from ?? []) as readonly string[]));
    expect([...FINISHED_STATUSES].sort()).toEqual(EXECUTION_STATUSES.filter((s) => !movedFrom.has(s)).sort());
    expect(FINISHED_STATUSES).not.toContain('FAILED');
  });

  it('no claim moves an email out of SENT or ABANDONED (what an execution it removes may have), nor an event out of PROCESSED', () => {
    const messageFrom = new Set(moves.flatMap(([, t]) => (t.message?.from ?? []) as readonly string[]));
    expect(messageFrom.has('SENT')).toBe(false);
    expect(messageFrom.has('ABANDONED')).toBe(false);
    // The others are in flight (QUEUED, SENDING: kept) or FAILED (MESSAGE_FAILED: kept as
    // stuck); NONE is a new email, queued by a step of a running execution only.
    expect([...messageFrom].sort()).toEqual(['FAILED', 'NONE', 'QUEUED', 'SENDING']);
    expect(moves.filter(([, t]) => (t.message?.from as readonly string[] | undefined)?.includes('NONE')).map(([name, t]) => [name, t.execution?.from])).toEqual([
      ['advanceExecutions', ['RUNNING']],
    ]);
    const eventFrom = new Set(moves.flatMap(([, t]) => (t.event?.from ?? []) as readonly string[]));
    expect(eventFrom.has('PROCESSED')).toBe(false);
  });
});
