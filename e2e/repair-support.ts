import path from 'node:path';
import { expect as baseExpect, type APIRequestContext, type Page } from '@playwright/test';
import { trpcQuery } from './staging';

// What the repair specs (repair.spec.ts, repair-messages-events.spec.ts) share.

// Two cores shared with builds and other suites: give the page a little longer than the default.
export const expect = baseExpect.configure({ timeout: 10_000 });

const shot = (name: string) => path.join(import.meta.dirname, 'screenshots', `${name}.png`);

export function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  return errors;
}

export interface StepView {
  stepName: string;
  status: string;
  resolvedBy: string | null;
  resolvedBranch: string | null;
}

export async function stepsOf(request: APIRequestContext, id: string): Promise<StepView[]> {
  return (await trpcQuery<{ steps: StepView[] }>(request, 'executions.get', { id })).steps;
}

/** Screenshots of what an operator sees, at the two widths the console is made for. */
export async function screenshots(page: Page, name: string): Promise<void> {
  for (const [width, height] of [
    [1440, 900],
    [1280, 800],
  ] as const) {
    await page.setViewportSize({ width, height });
    await page.screenshot({ path: shot(`${name}-${width}`) });
  }
  await page.setViewportSize({ width: 1440, height: 900 });
}
