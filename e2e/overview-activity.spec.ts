import path from 'node:path';
import { expect, test, type Page } from '@playwright/test';
import { asDistinctClient, DEMO, signIn, watchErrors } from './sign-in';
import { sql, trpcMutation, trpcQuery } from './staging';

// The overview's activity: throughput over the last hour as a chart that moves
// after an enrollment, and the latest failures, each linked to where an operator acts.

const SCREENSHOTS = path.join(import.meta.dirname, 'screenshots');

interface Totals {
  enrollments: number;
  stepsRun: number;
  eventsTracked: number;
}

async function shownTotal(page: Page, key: keyof Totals): Promise<number> {
  return Number((await page.getByTestId(`throughput-total-${key}`).innerText()).replace(/[^0-9]/g, ''));
}

async function welcomeSeriesId(page: Page): Promise<string> {
  const workflows = await trpcQuery<{ id: string; name: string }[]>(page.request, 'workflows.list', undefined);
  return workflows.find((w) => w.name === 'Welcome series')!.id;
}

test('throughput: the demo seed shows in the last hour, and an enrollment moves the chart live', async ({ page }) => {
  const browserErrors = watchErrors(page);
  await asDistinctClient(page);
  await page.goto('/');
  await signIn(page, DEMO.MARKETER);

  const panel = page.getByRole('region', { name: 'Throughput' });
  await expect(panel).toBeVisible();
  // The seed ran minutes ago through the engine: enrollments, steps and events are in the hour.
  const before = await trpcQuery<{ totals: Totals; buckets: unknown[] }>(page.request, 'overview.throughput', { minutes: 60 });
  expect(before.buckets).toHaveLength(60);
  expect(before.totals.enrollments).toBeGreaterThan(0);
  expect(before.totals.stepsRun).toBeGreaterThan(0);
  expect(before.totals.eventsTracked).toBeGreaterThan(0);
  expect(await shownTotal(page, 'enrollments')).toBeGreaterThanOrEqual(before.totals.enrollments);

  // Three drawn lines with a legend, axes labelled, and the hour as text for screen readers.
  const chart = panel.getByTestId('throughput-chart');
  await expect(chart.locator('.recharts-line path.recharts-curve')).toHaveCount(3);
  for (const label of ['Enrollments', 'Steps run', 'Events tracked']) await expect(panel.getByTestId('throughput-legend')).toContainText(label);
  await expect(chart).toContainText(/minute \(UTC\), \d{2}:\d{2}–\d{2}:\d{2}/);
  await expect(chart).toContainText('per minute');
  await expect(chart).toHaveAttribute('aria-label', /In the last 60 minutes: [\d,]+ enrollments, [\d,]+ steps run, [\d,]+ events tracked\./);

  // The tooltip names the absolute minute.
  const box = (await chart.locator('.recharts-cartesian-grid').boundingBox())!;
  await page.mouse.move(box.x + box.width - 4, box.y + box.height / 2);
  await expect(panel.getByText(/\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC/).first()).toBeVisible();

  // An enrollment now: the panel's own refresh (every 10 s) shows it, without a reload.
  const shown = await shownTotal(page, 'enrollments');
  const workflowId = await welcomeSeriesId(page);
  await trpcMutation(page.request, 'enrollments.enroll', { workflowId, email: `throughput-${Date.now()}@example.com` });
  await expect.poll(() => shownTotal(page, 'enrollments'), { timeout: 20_000 }).toBeGreaterThan(shown);
  await expect.poll(() => shownTotal(page, 'stepsRun'), { timeout: 20_000 }).toBeGreaterThan(0);

  // The busy minutes as a table too.
  await panel.getByText(/As a table/).click();
  await expect(panel.getByRole('table').getByRole('row').nth(1)).toContainText('UTC');
  expect(browserErrors).toEqual([]);
});

test('recent failures: a failed email appears with its error, and each failure links to where it is repaired', async ({ page }) => {
  // The welcome email goes through the real workers and sender, behind whatever earlier specs queued.
  test.setTimeout(150_000);
  const browserErrors = watchErrors(page);
  await asDistinctClient(page);
  await page.goto('/');
  await signIn(page, DEMO.OPERATOR);

  const panel = page.getByRole('region', { name: 'Recent failures' });
  // The seeded incident: the failed execution of "Legacy newsletter import" and a dead-lettered event.
  await expect(panel.locator('[data-kind="EXECUTION_FAILED"]').first()).toContainText('Legacy newsletter import');
  await expect(panel.locator('[data-kind="EVENT_DEAD"]').first()).toContainText('event purchase');

  // Stage a failed send: enroll a contact into the welcome series, let the sender deliver
  // its welcome email, then record that delivery as failed (what a bouncing SMTP relay does).
  const email = `bounce-${Date.now()}@example.com`;
  const { executionId } = await trpcMutation<{ executionId: string }>(page.request, 'enrollments.enroll', {
    workflowId: await welcomeSeriesId(page),
    email,
  });
  await expect
    .poll(async () => (await sql<{ n: number }>(`SELECT count(*)::int AS n FROM "Message" WHERE "executionId" = $1 AND status = 'SENT'`, [executionId]))[0]!.n, {
      timeout: 90_000,
    })
    .toBe(1);
  const error = `SMTP 550 5.1.1 <${email}>: Recipient address rejected: User unknown in virtual mailbox table; the relay gave up after 3 attempts`;
  await sql(`UPDATE "Message" SET status = 'FAILED', "sentAt" = NULL, error = $2, version = version + 1 WHERE "executionId" = $1`, [executionId, error]);

  const failed = panel.locator('[data-kind="MESSAGE_FAILED"]').filter({ hasText: email });
  await expect(failed).toBeVisible({ timeout: 15_000 });
  // The newest failure is on top.
  await expect(panel.getByTestId('failure').first()).toContainText(email);
  await expect(failed).toContainText('Welcome series › Welcome email');
  await expect(failed).toContainText('email failed');
  // Truncated on the row; the full text on hover.
  await expect(failed.getByTitle(error)).toBeVisible();

  // Its link opens the execution, where the message repairs are.
  await failed.getByRole('link').click();
  await expect(page).toHaveURL(new RegExp(`/executions/${executionId}$`));
  await expect(page.getByText(email).first()).toBeVisible();

  // The dead event's link lists the dead letters of its contact on the events page.
  await page.goto('/');
  await panel.locator('[data-kind="EVENT_DEAD"]').first().getByRole('link').click();
  await expect(page).toHaveURL(/\/events\?state=dead&name=purchase&contact=/);
  await expect(page.getByRole('heading', { level: 1, name: 'Events' })).toBeVisible();
  await expect(page.getByRole('row').filter({ hasText: 'purchase' }).first()).toBeVisible();

  // The failed execution's link opens it.
  await page.goto('/');
  await panel.locator('[data-kind="EXECUTION_FAILED"]').first().getByRole('link').click();
  await expect(page).toHaveURL(/\/executions\/[0-9a-f-]{36}$/);
  await expect(page.getByText('Legacy newsletter import').first()).toBeVisible();
  expect(browserErrors).toEqual([]);
});

test('screenshots of the overview at 1280 and 1440', async ({ page }) => {
  await asDistinctClient(page);
  await page.goto('/');
  await signIn(page, DEMO.VIEWER);
  for (const width of [1280, 1440]) {
    await page.setViewportSize({ width, height: 900 });
    await page.goto('/');
    await expect(page.getByTestId('throughput-chart').locator('.recharts-line path.recharts-curve')).toHaveCount(3);
    await expect(page.getByRole('region', { name: 'Recent failures' }).getByTestId('failure').first()).toBeVisible();
    await page.screenshot({ path: path.join(SCREENSHOTS, `overview-${width}.png`), fullPage: true });
  }
});
