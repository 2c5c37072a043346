import path from 'node:path';
import { expect, test, type Page } from '@playwright/test';
import { DEMO, signedIn, watchErrors } from './sign-in';
import { trpcMutation, trpcQuery } from './staging';

// Browsing the console: the executions table with its filters in the URL and
// keyset pages both ways, one execution's timeline, the events and the audit log. The
// demo seed provides the stories; the spec enrolls 120 more contacts through the API (as
// the demo marketer) so the table has several pages.

const shot = (name: string) => path.join(import.meta.dirname, 'screenshots', `${name}.png`);
const PAGER_CONTACTS = 120;
const PAGE_SIZE = 50;

test.describe.configure({ mode: 'serial' });

/** The execution ids the table shows, in order. */
async function rowIds(page: Page): Promise<string[]> {
  const links = page.getByRole('table', { name: 'Executions' }).getByTestId('execution-row').getByRole('link');
  return links.evaluateAll((as) => as.map((a) => a.getAttribute('href') ?? ''));
}

test.beforeAll(async ({ browser }) => {
  // As the demo marketer: 120 contacts into the welcome series, one enrolled on its own
  // (so an execution has an audit entry naming who enrolled it).
  const page = await signedIn(browser, DEMO.MARKETER);
  const workflows = await trpcQuery<{ id: string; name: string }[]>(page.request, 'workflows.list', undefined);
  const welcome = workflows.find((w) => w.name === 'Welcome series')!;
  const contacts = Array.from({ length: PAGER_CONTACTS }, (_, i) => ({ email: `pager-${String(i).padStart(3, '0')}@e2e.test`, data: { firstName: `P${i}` } }));
  const bulk = await trpcMutation<{ results: { executionId?: string; error?: string }[] }>(page.request, 'enrollments.enrollMany', {
    workflowId: welcome.id,
    contacts,
  });
  expect(bulk.results.filter((r) => r.executionId)).toHaveLength(PAGER_CONTACTS);
  await trpcMutation(page.request, 'enrollments.enroll', { workflowId: welcome.id, email: 'audited@e2e.test', context: { campaign: 'e2e' } });
  // The workers welcome each one and park it on the hour-long delay: wait until all are
  // WAITING, so the rows a filter names stay put while the spec compares them.
  await expect
    .poll(
      async () => (await trpcQuery<{ items: unknown[] }>(page.request, 'executions.list', { contact: 'pager-', status: ['WAITING'], limit: 200 })).items.length,
      { timeout: 60_000, intervals: [500, 1_000, 2_000] },
    )
    .toBe(PAGER_CONTACTS);
  await page.context().close();
});

test('executions: a filtered URL opened in a fresh browser shows the same rows, and paging forward and back returns the same pages', async ({ browser }) => {
  const page = await signedIn(browser, DEMO.VIEWER, '/executions');
  const errors = watchErrors(page);
  await expect(page.getByRole('heading', { level: 1, name: 'Executions' })).toBeVisible();
  await expect(page.getByTestId('execution-row').first()).toBeVisible();
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.screenshot({ path: shot('executions-1440') });
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.screenshot({ path: shot('executions-1280') });
  await page.setViewportSize({ width: 1440, height: 900 });

  // Filter through the controls: a contact prefix, the Welcome series, WAITING.
  await page.getByLabel('Workflow').selectOption({ label: 'Welcome series' });
  await page.getByLabel('Contact').fill('pager-');
  await page.getByLabel('Contact').press('Enter');
  await page.getByRole('group', { name: 'Status' }).getByRole('button', { name: /^waiting/ }).click();
  await expect(page).toHaveURL(/workflowId=.*contact=pager-.*status=WAITING/);
  await expect(page.getByTestId('execution-row')).toHaveCount(PAGE_SIZE);
  await expect(page.getByTestId('execution-row').first()).toContainText('pager-');

  const filteredUrl = page.url();
  const pageOne = await rowIds(page);
  expect(new Set(pageOne).size).toBe(PAGE_SIZE);

  // Forward twice, then back twice: the same pages, in the same order.
  await page.getByRole('button', { name: 'Next →' }).click();
  await expect(page).toHaveURL(/cursor=/);
  await expect.poll(() => rowIds(page)).not.toEqual(pageOne);
  const pageTwo = await rowIds(page);
  expect(pageTwo).toHaveLength(PAGE_SIZE);
  expect(pageTwo.filter((id) => pageOne.includes(id))).toEqual([]);
  const pageTwoUrl = page.url();

  await page.getByRole('button', { name: 'Next →' }).click();
  await expect.poll(() => rowIds(page)).not.toEqual(pageTwo);
  const pageThree = await rowIds(page);
  expect(pageThree).toHaveLength(PAGER_CONTACTS - 2 * PAGE_SIZE);
  await expect(page.getByRole('button', { name: 'Next →' })).toBeDisabled();
  await page.screenshot({ path: shot('executions-last-page-1440') });

  await page.getByRole('button', { name: '← Previous' }).click();
  await expect(page).toHaveURL(/before=/);
  await expect.poll(() => rowIds(page)).toEqual(pageTwo);
  await page.getByRole('button', { name: '← Previous' }).click();
  await expect.poll(() => rowIds(page)).toEqual(pageOne);
  await expect(page.getByRole('button', { name: '← Previous' })).toBeDisabled();

  // A colleague opens the links in a browser of their own (signing in on the way).
  const colleague = await signedIn(browser, DEMO.OPERATOR, filteredUrl.replace(/^https?:\/\/[^/]+/, ''));
  await expect(colleague).toHaveURL(filteredUrl);
  await expect(colleague.getByLabel('Contact')).toHaveValue('pager-');
  await expect(colleague.getByRole('group', { name: 'Status' }).getByRole('button', { name: /^waiting/ })).toHaveAttribute('aria-pressed', 'true');
  await expect.poll(() => rowIds(colleague)).toEqual(pageOne);
  await colleague.goto(pageTwoUrl);
  await expect.poll(() => rowIds(colleague)).toEqual(pageTwo);
  await colleague.setViewportSize({ width: 1280, height: 800 });
  await colleague.screenshot({ path: shot('executions-filtered-1280') });
  await colleague.context().close();

  // A time range is held as absolute instants, so the link keeps naming the same window.
  await page.goto(filteredUrl);
  await page.getByLabel('Time range preset').selectOption('1h');
  await expect(page).toHaveURL(/since=\d{4}-\d\d-\d\dT/);
  await expect.poll(() => rowIds(page)).toEqual(pageOne);

  // A link the API refuses says why instead of showing something else.
  await page.goto('/executions?status=SLEEPING');
  await expect(page.getByRole('alert').filter({ hasText: 'not valid' })).toContainText('status.0');
  expect(errors).toEqual([]);
  await page.context().close();
});

test('executions: live refresh holds the rows still and counts what arrived', async ({ browser }) => {
  const page = await signedIn(browser, DEMO.MARKETER, '/executions?contact=live-');
  await expect(page.getByRole('table', { name: 'Executions' })).toContainText('No executions match these filters');
  const workflows = await trpcQuery<{ id: string; name: string }[]>(page.request, 'workflows.list', undefined);
  const welcome = workflows.find((w) => w.name === 'Welcome series')!;
  await trpcMutation(page.request, 'enrollments.enroll', { workflowId: welcome.id, email: 'live-1@e2e.test' });
  // The first answer for a view is shown as it comes; later arrivals wait behind a button.
  await expect(page.getByRole('button', { name: /1 new or changed — show/ })).toBeVisible({ timeout: 15_000 });
  await expect(page.getByTestId('execution-row')).toHaveCount(0);
  await page.getByRole('button', { name: /new or changed — show/ }).click();
  await expect(page.getByTestId('execution-row')).toHaveCount(1);
  await expect(page.getByTestId('execution-row')).toContainText('live-1@e2e.test');

  // With the pointer on the rows nothing moves, whatever arrives: the arrival is only
  // counted. Once the reader asks, the new row is shown.
  await page.getByTestId('execution-row').hover();
  await expect(page.getByText('Paused while the pointer is over the rows')).toBeVisible();
  await trpcMutation(page.request, 'enrollments.enroll', { workflowId: welcome.id, email: 'live-2@e2e.test' });
  await expect(page.getByRole('button', { name: /1 new or changed — show/ })).toBeVisible({ timeout: 15_000 });
  await expect(page.getByTestId('execution-row')).toHaveCount(1);
  await expect(page.getByTestId('execution-row')).toContainText('live-1@e2e.test');
  await page.mouse.move(5, 5);
  await expect(page.getByText('Paused while the pointer is over the rows')).toHaveCount(0);
  await expect(page.getByTestId('execution-row')).toHaveCount(1);
  await page.getByRole('button', { name: /new or changed — show/ }).click();
  await expect(page.getByTestId('execution-row')).toHaveCount(2);
  await expect(page.getByTestId('execution-row').first()).toContainText('live-2@e2e.test');
  await page.context().close();
});

test('executions: the stuck filter finds the failed legacy import, and its page says why and who clears it', async ({ browser }) => {
  const page = await signedIn(browser, DEMO.OPERATOR, '/executions');
  await page.getByRole('group', { name: 'Stuck because' }).getByRole('button', { name: /^FAILED/ }).click();
  await expect(page).toHaveURL(/stuck=FAILED/);
  const row = page.getByTestId('execution-row');
  await expect(row).toHaveCount(1);
  await expect(row).toContainText('Legacy newsletter import');
  await expect(row).toContainText(/FAILED\s*\d+ (s|min)/);
  await row.getByRole('link').click();
  await expect(page.getByTestId('stuck-now')).toContainText('FAILED');
  await expect(page.getByTestId('stuck-now')).toContainText('Cleared by an operator');
  await expect(page.getByTestId('next-up')).toContainText('An operator decides');
  await expect(page.getByTestId('timeline')).toContainText('Ended: failed');
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.screenshot({ path: shot('execution-failed-1440'), fullPage: true });
  await page.context().close();
});

test('execution detail: the timeline tells a recovered cart’s story, oldest first, with the resuming event linked', async ({ browser }) => {
  const page = await signedIn(browser, DEMO.VIEWER, '/executions?contact=donald');
  const errors = watchErrors(page);
  const row = page.getByTestId('execution-row').filter({ hasText: 'Abandoned cart recovery' });
  await expect(row).toHaveCount(1);
  await row.getByRole('link').click();
  await expect(page).toHaveURL(/\/executions\/[0-9a-f-]{36}$/);
  await expect(page.getByRole('heading', { level: 1 })).toContainText('Abandoned cart recovery');
  const timeline = page.getByTestId('timeline');
  await expect(timeline.getByTestId('timeline-enrolled')).toContainText('by the event cart_abandoned');
  const entries = timeline.getByTestId('timeline-entry');
  await expect(entries.first()).toContainText('Cart abandoned');
  const wait = entries.filter({ hasText: 'Wait for checkout' });
  await expect(wait.getByTestId('resolution')).toContainText('Resolved by EVENT');
  await expect(wait.getByTestId('resolution')).toContainText('took the EVENT branch');
  await expect(wait.getByRole('link', { name: 'checkout_completed' })).toBeVisible();
  await expect(entries.filter({ hasText: 'Recovered' })).toBeVisible();
  await expect(timeline).toContainText('Ended: exited');
  await expect(page.getByTestId('stuck-now')).toContainText('Nothing holds it up');
  await expect(page.getByTestId('next-up')).toContainText('Nothing more');
  await expect(page.getByTestId('repair-panel')).toContainText('read-only');
  const events = page.getByRole('region', { name: 'Events' });
  await expect(events).toContainText('cart_abandoned');
  await expect(events).toContainText('checkout_completed');
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.screenshot({ path: shot('execution-detail-1440'), fullPage: true });
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.screenshot({ path: shot('execution-detail-1280'), fullPage: true });
  expect(errors).toEqual([]);

  // An id of nothing says so at once; a malformed one is refused before any query.
  await page.goto('/executions/00000000-0000-4000-8000-000000000000');
  await expect(page.getByRole('alert').filter({ hasText: 'No execution' })).toContainText('in this project');
  await page.goto('/executions/not-an-id');
  await expect(page.getByRole('alert').filter({ hasText: 'not valid' })).toBeVisible();
  await page.context().close();
});

test('execution detail: a parked delay counts down, a poisoned step shows its lease and why it is stuck, an enrollment names its person', async ({ browser }) => {
  const page = await signedIn(browser, DEMO.OPERATOR, '/executions?contact=audited');
  await page.getByTestId('execution-row').getByRole('link').click();
  await expect(page.getByTestId('timeline-enrolled')).toContainText(`by ${DEMO.MARKETER}`);
  await expect(page.getByTestId('next-up')).toContainText(/The delay “Let them settle in” ends in (59|60) min/);
  await expect(page.getByTestId('execution-audit')).toContainText('enrollments.enroll');
  await expect(page.getByTestId('repair-panel').getByRole('button', { name: 'Force timeout…' })).toBeVisible();
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.screenshot({ path: shot('execution-waiting-1440'), fullPage: true });

  await page.goto('/executions?contact=lapsed');
  await page.getByTestId('execution-row').getByRole('link').click();
  // Its worker died holding the wait on every attempt (LEASE_EXPIRED once the grace period has passed).
  const poisoned = page.getByTestId('timeline').getByTestId('timeline-entry').filter({ hasText: 'Wait for a purchase' });
  await expect(poisoned).toContainText('attempt');
  await expect(poisoned).toContainText('The lease of worker:demo-3 expired');
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.screenshot({ path: shot('execution-stuck-1280'), fullPage: true });
  await page.context().close();
});

test('events: dispatch state, what each started, and filters in the URL', async ({ browser }) => {
  const page = await signedIn(browser, DEMO.VIEWER, '/events');
  const errors = watchErrors(page);
  await expect(page.getByRole('heading', { level: 1, name: 'Events' })).toBeVisible();
  await expect(page.getByTestId('event-row').first()).toBeVisible();
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.screenshot({ path: shot('events-1440') });
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.screenshot({ path: shot('events-1280') });

  await page.getByRole('group', { name: 'Dispatch' }).getByRole('button', { name: 'dead' }).click();
  await expect(page).toHaveURL(/state=dead/);
  await expect(page.getByTestId('event-row')).toHaveCount(1);
  await expect(page.getByTestId('event-row')).toContainText('purchase');
  await expect(page.getByTestId('event-row')).toContainText('the worker process was killed');

  await page.goto('/events?contact=donald@example.com');
  await expect(page.getByTestId('event-row')).toHaveCount(2);
  await expect(page.getByLabel('Contact')).toHaveValue('donald@example.com');

  await page.goto('/events?name=order_placed');
  await expect(page.getByTestId('event-row')).toHaveCount(3);
  const started = page.getByTestId('event-row').first().getByRole('link', { name: 'Order confirmation' });
  await started.click();
  await expect(page).toHaveURL(/\/executions\/[0-9a-f-]{36}$/);
  await expect(page.getByTestId('timeline-enrolled')).toContainText('by the event order_placed');
  expect(errors).toEqual([]);
  await page.context().close();
});

test('audit: entries filtered in the URL, each linking to its target', async ({ browser }) => {
  const page = await signedIn(browser, DEMO.VIEWER, '/audit');
  const errors = watchErrors(page);
  await expect(page.getByRole('heading', { level: 1, name: 'Audit log' })).toBeVisible();
  await expect(page.getByTestId('audit-row').first()).toBeVisible();
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.screenshot({ path: shot('audit-1440') });
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.screenshot({ path: shot('audit-1280') });

  await page.getByLabel('Action').fill('enrollments.enroll');
  await page.getByLabel('Action').press('Enter');
  await expect(page).toHaveURL(/action=enrollments\.enroll/);
  await expect(page.getByTestId('audit-row')).not.toHaveCount(0);
  const rows = page.getByTestId('audit-row');
  for (const text of await rows.allTextContents()) expect(text).toContain('enrollments.enroll');
  await page.getByRole('group', { name: 'Outcome' }).getByRole('button', { name: 'LOST' }).click();
  await expect(page).toHaveURL(/outcome=LOST/);
  await expect(page.getByRole('table', { name: 'Audit entries' })).toContainText('No audit entries match these filters');
  await page.getByRole('group', { name: 'Outcome' }).getByRole('button', { name: 'LOST' }).click();

  // Each entry links to its target; the execution's page lists the same entry.
  const entry = rows.filter({ hasText: DEMO.MARKETER }).first();
  await entry.getByRole('link').click();
  await expect(page).toHaveURL(/\/executions\/[0-9a-f-]{36}$/);
  await expect(page.getByTestId('execution-audit')).toContainText('enrollments.enroll');
  await page.getByRole('link', { name: 'in the audit log' }).click();
  await expect(page).toHaveURL(/\/audit\?targetId=/);
  await expect(page.getByTestId('audit-row')).toHaveCount(1);
  expect(errors).toEqual([]);
  await page.context().close();
});

test('the sidebar links every browsing page, with nothing marked "soon" among them', async ({ browser }) => {
  const page = await signedIn(browser, DEMO.VIEWER);
  const nav = page.getByRole('navigation', { name: 'Sections' });
  for (const [name, url] of [
    ['Executions', /\/executions$/],
    ['Events', /\/events$/],
    ['Audit', /\/audit$/],
  ] as const) {
    const link = nav.getByRole('link', { name });
    await link.focus();
    await page.keyboard.press('Enter');
    await expect(page).toHaveURL(url);
    await expect(link).toHaveAttribute('aria-current', 'page');
  }
  await page.context().close();
});

test('executions: a stuck chip clicked while the page is still loading counts once the page is alive, and filters the rows', async ({ browser }) => {
  // Last in the file: the tests above read clocks that started in beforeAll.
  const page = await signedIn(browser, DEMO.OPERATOR, '/');
  // A slow network: the page's scripts arrive 3 s after its server-rendered HTML, which
  // already shows the chips and every row. A chip that took the click then would move the
  // address bar alone (Next.js hears of the URL only once its router runs) or nothing at
  // all, and the rows would stay every execution under a URL saying stuck=FAILED.
  await page.route('**/_next/static/chunks/**', async (route) => {
    await new Promise((resolve) => setTimeout(resolve, 3000));
    await route.continue();
  });
  await page.goto('/executions', { waitUntil: 'commit' });
  const chip = page.getByRole('group', { name: 'Stuck because' }).getByRole('button', { name: /^FAILED/ });
  await expect(page.getByTestId('execution-row')).toHaveCount(PAGE_SIZE);
  await chip.click({ timeout: 30_000 });
  await expect(page).toHaveURL(/stuck=FAILED/);
  await expect(chip).toHaveAttribute('aria-pressed', 'true');
  await expect(page.getByTestId('execution-row')).toHaveCount(1);
  await expect(page.getByTestId('execution-row')).toContainText('Legacy newsletter import');
  await page.unroute('**/_next/static/chunks/**');
  await page.context().close();
});
