import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { migrationUrl } from '../../scripts/database';
import { EnvError, parseEnv, sessionDatabaseUrl } from '../../server/env';

// DATABASE_POOL_MODE and DIRECT_DATABASE_URL (docs/deploy.md, "PgBouncer"): checked at
// start-up, and what needs a session of its own (LISTEN, migrations) never goes through a
// transaction-mode pooler.

const POOLER = 'postgresql://waypost:pw@pgbouncer.internal:6432/waypost';
const DIRECT = 'postgresql://waypost:pw@db.internal:5432/waypost';
const ROOT = path.resolve(import.meta.dirname, '../..');

describe('the pooler settings', () => {
  it('default to sessions of their own, where DATABASE_URL serves LISTEN and migrations too', () => {
    const env = parseEnv({ DATABASE_URL: DIRECT });
    expect(env.DATABASE_POOL_MODE).toBe('session');
    expect(sessionDatabaseUrl(env)).toBe(DIRECT);
    expect(migrationUrl(env, DIRECT)).toBe(DIRECT);
  });

  it('behind a transaction-mode pooler, LISTEN and migrations use DIRECT_DATABASE_URL', () => {
    const env = parseEnv({ DATABASE_URL: POOLER, DATABASE_POOL_MODE: 'transaction', DIRECT_DATABASE_URL: DIRECT });
    expect(sessionDatabaseUrl(env)).toBe(DIRECT);
    expect(migrationUrl(env, POOLER)).toBe(DIRECT);
  });

  it('behind one without DIRECT_DATABASE_URL, workers have nowhere to LISTEN and migrations refuse, saying what to set', () => {
    const env = parseEnv({ DATABASE_URL: POOLER, DATABASE_POOL_MODE: 'transaction' });
    expect(sessionDatabaseUrl(env)).toBeUndefined();
    expect(() => migrationUrl(env, POOLER)).toThrow(EnvError);
    expect(() => migrationUrl(env, POOLER)).toThrow(/Set DIRECT_DATABASE_URL to PostgreSQL itself/);
  });

  it('refuses a mode it does not know, and either setting without DATABASE_URL', () => {
    expect(() => parseEnv({ DATABASE_URL: POOLER, DATABASE_POOL_MODE: 'statement' })).toThrow(/DATABASE_POOL_MODE: must be session or transaction \(got "statement"\)/);
    expect(() => parseEnv({ DATABASE_POOL_MODE: 'transaction' })).toThrow(/DATABASE_POOL_MODE: transaction needs DATABASE_URL/);
    expect(() => parseEnv({ DIRECT_DATABASE_URL: DIRECT })).toThrow(/DIRECT_DATABASE_URL: needs DATABASE_URL set too/);
    expect(() => parseEnv({ DATABASE_URL: POOLER, WORKER_POLL_MS: '10' })).toThrow(/WORKER_POLL_MS/);
  });

  it('`npm run db:migrate` behind the pooler without DIRECT_DATABASE_URL stops with that sentence, before connecting anywhere', async () => {
    const run = promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/migrate.ts'], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: 'postgresql://nobody@127.0.0.1:1/none', DATABASE_POOL_MODE: 'transaction', DIRECT_DATABASE_URL: '' },
    });
    const failure = await run.then(() => null, (e: { code: number; stderr: string }) => e);
    expect(failure?.code).toBe(1);
    expect(failure?.stderr).toMatch(/DATABASE_POOL_MODE=transaction: migrations need a session of their own/);
  });
});
