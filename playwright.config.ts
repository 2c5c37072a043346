import { existsSync } from 'node:fs';
import { defineConfig } from '@playwright/test';

// Browser tests against the real product: scripts/e2e-server.ts runs `npm start`'s path on
// a fresh database (migrations, demo seed, web server, workers) and Playwright drives the
// system Chromium (Debian's package; `npx playwright install` is not used here).

const chromium = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
if (!existsSync(chromium)) {
  // One line, not a stack: the fix is a command, not a debugging session.
  console.error(`Chromium not found at ${chromium}: run \`apt-get install -y chromium\` or set CHROMIUM_PATH`);
  process.exit(1);
}

/** Not 3000, so the suite runs beside a developer's `npm start`; E2E_PORT runs two suites side by side. */
const PORT = Number(process.env.E2E_PORT || 3100);

export default defineConfig({
  testDir: 'e2e',
  outputDir: 'test-results',
  forbidOnly: !!process.env.CI,
  reporter: 'list',
  use: {
    baseURL: `http://127.0.0.1:${PORT}`,
    browserName: 'chromium',
    viewport: { width: 1440, height: 900 },
    launchOptions: {
      executablePath: chromium,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
        '--disable-quic',
      ],
    },
    trace: 'retain-on-failure',
  },
  webServer: {
    command: 'node --import tsx scripts/e2e-server.ts',
    url: `http://127.0.0.1:${PORT}/`,
    // Counts computed for each read, however busy the machine (see vitest.config.ts).
    env: { PORT: String(PORT), CONSOLE_FIGURES_LIVE_MS: process.env.CONSOLE_FIGURES_LIVE_MS || '3600000' },
    // Migrations, the seed and, on a fresh checkout, `next build` come first.
    timeout: 300_000,
    stdout: 'pipe',
    gracefulShutdown: { signal: 'SIGTERM', timeout: 30_000 },
  },
});
