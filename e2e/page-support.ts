import path from 'node:path';
import type { Page } from '@playwright/test';

// What the console specs share: where screenshots go, the page errors a spec asserts are
// none, and a screenshot at each width the console is checked at (1280 and 1440 pixels).

export const shot = (name: string) => path.join(import.meta.dirname, 'screenshots', `${name}.png`);

/** Uncaught errors and console errors of a page, to assert none were raised. */
export function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.stack ?? error.message));
  page.on('console', (message) => message.type() === 'error' && errors.push(`${message.text()} (${message.location().url})`));
  return errors;
}

/** A screenshot at 1280 and at 1440 pixels wide, named `<name>-<width>.png`. */
export async function screenshots(page: Page, name: string, fullPage = true) {
  for (const width of [1280, 1440]) {
    await page.setViewportSize({ width, height: 900 });
    await page.waitForTimeout(400);
    await page.screenshot({ path: shot(`${name}-${width}`), fullPage });
  }
}
