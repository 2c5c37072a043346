import path from 'node:path';
import { expect, test } from '@playwright/test';
import { asDistinctClient, DEMO, signIn } from './sign-in';

const INVARIANT_IDS = ['I1', 'I2', 'I3', 'I4', 'I5', 'I6', 'I7', 'I8', 'I9'];

test('overview: every invariant holds on the seeded demo and its workflows are listed', async ({ page }) => {
  // A hydration mismatch or a failing live refresh shows up only in the browser's console.
  const browserErrors: string[] = [];
  page.on('pageerror', (error) => browserErrors.push(error.message));
  page.on('console', (message) => message.type() === 'error' && browserErrors.push(message.text()));

  await asDistinctClient(page);
  await page.goto('/');
  await signIn(page, DEMO.VIEWER);
  await expect(page.getByRole('heading', { level: 1, name: 'Overview' })).toBeVisible();

  const invariants = page.getByRole('region', { name: 'Invariants' });
  await expect(invariants.getByRole('row')).toHaveCount(INVARIANT_IDS.length + 1);
  for (const id of INVARIANT_IDS) {
    await expect(invariants.getByTestId(`invariant-${id}`)).toContainText('0 violations');
  }
  await expect(invariants.getByText(`All ${INVARIANT_IDS.length} hold`)).toBeVisible();
  // A small project's counts are counted for each read: never marked "as of" a past counting.
  await expect(invariants.getByText(/^checked /)).toBeVisible();
  await expect(page.getByTestId('figures-as-of')).toHaveCount(0);

  // The seeded incident: the failed execution and the dead-lettered event wait for an
  // operator; nothing else is stuck on a freshly seeded demo.
  const stuck = page.getByRole('region', { name: 'Stuck' });
  await expect(stuck.getByTestId('stuck-FAILED')).toContainText('an operator');
  await expect(stuck.getByTestId('stuck-FAILED')).toContainText(/1$/);
  await expect(stuck.getByTestId('stuck-EVENT_DEAD')).toContainText(/1$/);
  await expect(stuck.getByTestId('stuck-WAIT_OVERDUE')).toContainText(/0$/);

  const workflows = page.getByRole('region', { name: 'Workflows' });
  await expect(workflows.getByText('Welcome series', { exact: true })).toBeVisible();
  await expect(workflows.getByText('Abandoned cart recovery', { exact: true })).toBeVisible();

  await page.screenshot({ path: path.join(import.meta.dirname, 'screenshots', 'overview.png'), fullPage: true });

  // The panels then refresh themselves from the browser through /api/trpc (batched, superjson).
  const refresh = await page.waitForResponse((response) => response.url().includes('/api/trpc/'), { timeout: 15_000 });
  expect(refresh.status()).toBe(200);
  await expect(invariants.getByTestId('invariant-I1')).toContainText('0 violations');
  expect(browserErrors).toEqual([]);
});
