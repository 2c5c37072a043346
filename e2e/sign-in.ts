import { expect, type Browser, type Page } from '@playwright/test';

// Signing in as a person does it: through the sign-in page of a real browser.

export const DEMO_PASSWORD = 'waypost-demo';

export const DEMO = {
  OWNER: 'owner@demo.waypost.dev',
  OPERATOR: 'operator@demo.waypost.dev',
  MARKETER: 'marketer@demo.waypost.dev',
  VIEWER: 'viewer@demo.waypost.dev',
} as const;

export type DemoRole = keyof typeof DEMO;

let nextClient = 1;

/**
 * Sign-in is rate limited per client address (5 a minute). Each browser test stands for
 * a different person at a different machine, so it presents an address of its own, as a
 * reverse proxy would pass it on; the rate-limit test uses the server's real peer address.
 */
export async function asDistinctClient(page: Page): Promise<void> {
  await page.setExtraHTTPHeaders({ 'x-forwarded-for': `198.51.100.${nextClient++ % 250}` });
}

/** Sign in on the sign-in page the console sent us to, and wait to land where it sends us back. */
export async function signIn(page: Page, email: string, password = DEMO_PASSWORD): Promise<void> {
  await expect(page).toHaveURL(/\/sign-in/);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  // The first page after signing in is rendered from the database, on a machine also running workers.
  await expect(page.getByTestId('current-user')).toHaveText(email, { timeout: 20_000 });
}

/** A fresh browser context for a person of their own (asDistinctClient), signed in at `url`. */
export async function signedIn(browser: Browser, email: string, url = '/'): Promise<Page> {
  const context = await browser.newContext();
  const page = await context.newPage();
  await asDistinctClient(page);
  await page.goto(url);
  await signIn(page, email);
  return page;
}

/** Uncaught page errors and console errors, collected for an `expect(errors).toEqual([])` at the end. */
export function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (message) => message.type() === 'error' && errors.push(message.text()));
  return errors;
}
