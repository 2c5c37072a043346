import { defineConfig } from 'vitest/config';
import { randomBytes } from 'node:crypto';
import path from 'node:path';

// Unit, integration and race tests. Every test file gets its own fresh PostgreSQL
// database cloned from a migrated template (test/support/database.ts), so files run in
// parallel without sharing state. No test uses a mock of PostgreSQL.
export default defineConfig({
  resolve: { alias: { '@': path.resolve(import.meta.dirname) } },
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // Session cookies are signed with AUTH_SECRET: the run makes its own, never a developer's.
    // The console's figures are computed for each read (never served "as of"), however busy
    // the machine: a test reading counts after a change must see it. test/read/figures.test.ts
    // drives the stored mode with its own budget.
    env: { AUTH_SECRET: process.env.AUTH_SECRET || randomBytes(32).toString('base64url'), CONSOLE_FIGURES_LIVE_MS: '3600000' },
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: more files at once only adds contention (race tests spawn processes).
    maxWorkers: 2,
    pool: 'forks',
    reporters: process.env.CI ? ['default'] : ['default'],
  },
});
