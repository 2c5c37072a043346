import path from 'node:path';
import { expect, test } from '@playwright/test';
import { startTcpProxy, type TcpProxy } from '../test/support/tcp-proxy';
import { startWebServer, type WebServer } from '../test/support/web-server';
import { DEMO, signIn } from './sign-in';
import { e2eDatabaseUrl } from './staging';

const shot = (name: string) => path.join(import.meta.dirname, 'screenshots', `${name}.png`);

// The console when PostgreSQL goes away under it: a web server of this spec's own (the
// shared e2e server must keep its database for the other specs) reaches the e2e database
// through a TCP proxy the spec cuts. The page keeps what it showed, says "Database
// unreachable, retrying" once its live queries get 503, and takes the banner away by
// itself when the database is back, without a reload.
//
// Shown to matter: with <DatabaseBanner /> taken out of app/_trpc/client.tsx, the banner
// was never visible after the cut.

test('the console shows a banner while the database is unreachable and recovers by itself', async ({ page }) => {
  test.setTimeout(240_000);
  const target = new URL(e2eDatabaseUrl());
  let proxy: TcpProxy | undefined;
  let server: WebServer | undefined;
  try {
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    server = await startWebServer(proxy.url(e2eDatabaseUrl()));
    await page.goto(`${server.base}/workflows`);
    await signIn(page, DEMO.VIEWER);
    await expect(page).toHaveURL(/\/workflows$/);
    const welcome = page.getByRole('link', { name: 'Welcome series' }).first();
    await expect(welcome).toBeVisible();
    const banner = page.getByTestId('database-banner');
    await expect(banner).toHaveCount(0);

    await proxy.cut('refuse');
    // The workflows table refreshes every 5 s; its first 503 brings the banner.
    await expect(banner).toBeVisible({ timeout: 30_000 });
    await expect(banner).toContainText('Database unreachable, retrying');
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.screenshot({ path: shot('database-banner-1280') });
    // What the page showed stays on it.
    await expect(welcome).toBeVisible();

    await proxy.restore();
    await expect(banner).toHaveCount(0, { timeout: 30_000 });
    await expect(welcome).toBeVisible();

    // A full page load during an outage: a page that says what is wrong (not Next.js's
    // 500 page, not the sign-in page), which reloads by itself into the console once the
    // database is back.
    await proxy.cut('refuse');
    await page.goto(`${server.base}/workflows`);
    const unavailable = page.getByTestId('database-unavailable');
    await expect(unavailable).toBeVisible({ timeout: 30_000 });
    await expect(unavailable).toContainText('Database unreachable, retrying');
    for (const width of [1280, 1440]) {
      await page.setViewportSize({ width, height: 800 });
      await page.screenshot({ path: shot(`database-unavailable-${width}`) });
    }
    await expect(page).toHaveURL(/\/workflows$/);
    await proxy.restore();
    await expect(welcome).toBeVisible({ timeout: 30_000 });
    await expect(unavailable).toHaveCount(0);
  } finally {
    await server?.stop();
    await proxy?.close();
  }
});
