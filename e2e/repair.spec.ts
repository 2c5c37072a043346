import { test } from '@playwright/test';
import type pg from 'pg';
import { DEMO, signedIn } from './sign-in';
import { trpcMutation, trpcQuery } from './staging';
import { connect, makeWaitOverdue, portOf, Workers } from './workers';
import { expect, screenshots, stepsOf, watchErrors } from './repair-support';

// Repair from the execution page: only the actions the state
// allows, each behind a preview and a reason; apply carries the previewed version and
// step execution; a lost race says who won and shows the fresh state. The e2e server's
// workers fire a due timer at once, so the specs that need a wait to stay overdue (or an
// execution to stay put while two people race) pause them first (e2e/workers.ts) and
// always resume them: the other spec files share this server.

test.describe.configure({ mode: 'serial' });

let db: pg.Client;
let workers: Workers;
const executions: Record<'overdue' | 'race' | 'stale', string> = { overdue: '', race: '', stale: '' };

test.beforeAll(async ({ browser, baseURL }) => {
  const port = portOf(baseURL);
  db = await connect(port);
  workers = new Workers(port, db);

  // As the demo marketer: three lapsed customers into the win-back campaign (a week-long
  // wait for a purchase), parked on their wait before any spec touches them.
  const page = await signedIn(browser, DEMO.MARKETER);
  const workflows = await trpcQuery<{ id: string; name: string }[]>(page.request, 'workflows.list', undefined);
  const winBack = workflows.find((w) => w.name === 'Win-back campaign')!;
  for (const key of Object.keys(executions) as (keyof typeof executions)[]) {
    const { executionId } = await trpcMutation<{ executionId: string }>(page.request, 'enrollments.enroll', {
      workflowId: winBack.id,
      email: `repair-exec-${key}@e2e.test`,
    });
    executions[key] = executionId;
  }
  await expect
    .poll(
      async () => (await trpcQuery<{ items: unknown[] }>(page.request, 'executions.list', { contact: 'repair-exec-', status: ['WAITING'], limit: 10 })).items.length,
      { timeout: 30_000, intervals: [250, 500, 1_000] },
    )
    .toBe(3);
  await page.context().close();
});

test.afterEach(() => {
  // Whatever a test did or failed to do: the shared server's workers run again.
  workers.resume();
});

test.afterAll(async () => {
  workers?.resume();
  await db?.end();
});

test('LEASE_EXPIRED: the poisoned win-back wait is listed with its reason; RETRY_STEP’s preview says whether the step has an email', async ({ browser }) => {
  const page = await signedIn(browser, DEMO.OPERATOR);
  const errors = watchErrors(page);
  // The seeded lease ran out at seed time; it counts as stuck once the grace period has passed.
  await expect
    .poll(
      async () =>
        (await trpcQuery<{ items: { contactEmail: string }[] }>(page.request, 'executions.list', { stuck: ['LEASE_EXPIRED'], limit: 10 })).items.map((i) => i.contactEmail),
      { timeout: 30_000, intervals: [500, 1_000] },
    )
    .toContain('lapsed@example.com');
  await page.goto('/executions?stuck=LEASE_EXPIRED');
  const row = page.getByTestId('execution-row').filter({ hasText: 'lapsed@example.com' });
  await expect(row).toHaveCount(1);
  await expect(row).toContainText('Win-back campaign');
  await expect(row).toContainText('LEASE_EXPIRED');
  await row.getByRole('link').first().click();
  await expect(page).toHaveURL(/\/executions\/[0-9a-f-]{36}$/);

  const stuck = page.getByTestId('stuck-now');
  await expect(stuck).toContainText('LEASE_EXPIRED');
  await expect(stuck).toContainText('stopped renewing the lease');
  await expect(stuck).toContainText('Cleared by an operator');

  // The worker that died holding it, by the name in its log lines.
  const poisoned = page.getByTestId('timeline').getByTestId('timeline-entry').filter({ hasText: 'Wait for a purchase' });
  await expect(poisoned.getByTestId('lease-holder')).toHaveText('worker:demo-3');

  // Only what the state machine allows: a retry or a cancel, not a skip of a branching wait.
  const panel = page.getByTestId('repair-panel');
  await expect(panel.getByTestId('repair-action-RETRY_STEP')).toContainText('Wait for a purchase');
  await expect(panel.getByTestId('repair-action-CANCEL')).toBeVisible();
  await expect(panel.getByTestId('repair-action-SKIP_STEP')).toHaveCount(0);
  await expect(panel.getByTestId('repair-action-FORCE_TIMEOUT')).toHaveCount(0);
  await panel.getByTestId('repair-refused').locator('summary').click();
  await expect(panel.getByTestId('repair-refused')).toContainText('Skip step');
  await screenshots(page, 'repair-panel');

  await panel.getByRole('button', { name: 'Retry step…' }).click();
  const dialog = page.getByRole('dialog', { name: 'Preview: Retry step' });
  await expect(dialog).toBeVisible();
  await expect(dialog.getByTestId('preview-now')).toContainText('RUNNING');
  await expect(dialog.getByTestId('preview-step')).toContainText(/attempt \d/);
  await expect(dialog.getByTestId('preview-change')).toContainText(/Run "Wait for a purchase" again as attempt \d/);
  await expect(dialog.getByTestId('preview-message')).toContainText('None exists');
  await expect(dialog.getByTestId('preview-message')).toContainText('sends no email');
  await expect(dialog.getByTestId('preview-email')).toContainText('No.');
  await expect(dialog.getByRole('button', { name: 'Apply retry step' })).toBeDisabled();
  await dialog.getByLabel(/Reason/).fill('ok');
  await expect(dialog.getByText('At least 3 characters, please.')).toBeVisible();
  await expect(dialog.getByRole('button', { name: 'Apply retry step' })).toBeDisabled();
  await screenshots(page, 'repair-preview-retry');

  // Esc closes the preview; nothing was applied.
  await page.keyboard.press('Escape');
  await expect(dialog).toHaveCount(0);
  await expect(page.getByTestId('execution-audit').getByText('repair.RETRY_STEP')).toHaveCount(0);
  expect(errors).toEqual([]);
  const detailPath = new URL(page.url()).pathname;
  await page.context().close();

  // A marketer opening the same page sees no repair control.
  const marketer = await signedIn(browser, DEMO.MARKETER, detailPath);
  await expect(marketer.getByTestId('repair-panel')).toContainText('read-only');
  await expect(marketer.getByTestId('repair-panel').getByRole('button')).toHaveCount(0);
  await marketer.context().close();
});

test('WAIT_OVERDUE: found from the overview, previewed, forced along TIMEOUT with a reason, and audited', async ({ browser }) => {
  await workers.pause();
  await makeWaitOverdue(db, executions.overdue);

  const page = await signedIn(browser, DEMO.OPERATOR, '/');
  const errors = watchErrors(page);
  const overdue = page.getByRole('region', { name: 'Stuck' }).getByTestId('stuck-WAIT_OVERDUE');
  await expect(overdue).toContainText(/1$/, { timeout: 15_000 });
  // The count lists them (the reason's name opens its groups on /stuck).
  await overdue.getByTitle(/List them/).click();
  await expect(page).toHaveURL(/\/executions\?stuck=WAIT_OVERDUE$/);
  const row = page.getByTestId('execution-row').filter({ hasText: 'repair-exec-overdue@e2e.test' });
  await expect(row).toContainText('WAIT_OVERDUE');
  await row.getByRole('link').first().click();
  await expect(page).toHaveURL(new RegExp(`/executions/${executions.overdue}$`));
  await expect(page.getByTestId('stuck-now')).toContainText('WAIT_OVERDUE');

  const panel = page.getByTestId('repair-panel');
  await expect(panel.getByTestId('repair-action-FORCE_TIMEOUT')).toContainText('Resolve "Wait for a purchase" as TIMEOUT');
  await expect(panel.getByTestId('repair-action-DELIVER_EVENT')).toBeVisible();
  await panel.getByRole('button', { name: 'Force timeout…' }).click();
  const dialog = page.getByRole('dialog', { name: 'Preview: Force timeout' });
  await expect(dialog.getByTestId('preview-now')).toContainText('WAITING');
  const version = Number((await dialog.getByTestId('preview-now').textContent())!.match(/version v(\d+)/)![1]);
  await expect(dialog.getByTestId('preview-branch')).toContainText('TIMEOUT');
  await expect(dialog.getByTestId('preview-branch')).toContainText('Win-back offer');
  await expect(dialog.getByTestId('preview-email')).toContainText('sends an email (once)');
  await expect(dialog.getByTestId('preview-step')).toContainText('WAITING');
  await dialog.getByLabel(/Reason/).fill('e2e: the timer of this wait is overdue');
  await screenshots(page, 'repair-preview-force-timeout');
  await dialog.getByRole('button', { name: 'Apply force timeout' }).click();

  await expect(dialog).toHaveCount(0);
  const applied = panel.getByTestId('repair-applied');
  await expect(applied).toContainText('Applied force timeout');
  const now = Number((await applied.textContent())!.match(/Now version v(\d+)/)![1]);
  expect(now).toBeGreaterThan(version);
  const wait = page.getByTestId('timeline').getByTestId('timeline-entry').filter({ hasText: 'Wait for a purchase' });
  await expect(wait.getByTestId('resolution')).toContainText('Resolved by OPERATOR');
  await expect(wait.getByTestId('resolution')).toContainText('took the TIMEOUT branch');
  await expect(page.getByTestId('execution-audit')).toContainText('repair.FORCE_TIMEOUT');
  await expect(page.getByTestId('execution-audit')).toContainText('e2e: the timer of this wait is overdue');
  await screenshots(page, 'repair-applied');

  // The workers take it on along the TIMEOUT branch: the win-back offer is sent, and it completes.
  workers.resume();
  await expect(page.getByTestId('timeline').getByTestId('timeline-entry').filter({ hasText: 'Win-back offer' })).toContainText('SENT', { timeout: 30_000 });
  await expect(page.getByTestId('timeline')).toContainText('Ended: completed', { timeout: 30_000 });

  // The audit entry, from the execution and from the audit page.
  await page.getByRole('link', { name: 'in the audit log' }).click();
  await expect(page).toHaveURL(new RegExp(`/audit\\?targetId=${executions.overdue}`));
  const entry = page.getByTestId('audit-row').filter({ hasText: 'repair.FORCE_TIMEOUT' });
  await expect(entry).toHaveCount(1);
  await expect(entry).toContainText('APPLIED');
  await page.goto('/audit');
  await page.getByLabel('Action').fill('repair.FORCE_TIMEOUT');
  await page.getByLabel('Action').press('Enter');
  await expect(page.getByTestId('audit-row').filter({ hasText: 'e2e: the timer of this wait is overdue' })).toHaveCount(1);
  expect(errors).toEqual([]);
  await page.context().close();
});

test('two operators race FORCE_TIMEOUT against CANCEL: exactly one applies, the other sees who won and the new state', async ({ browser }) => {
  // Paused workers: nothing but the two people moves this execution.
  await workers.pause();
  const url = `/executions/${executions.race}`;
  const people = [
    { email: DEMO.OPERATOR, action: 'Force timeout', page: await signedIn(browser, DEMO.OPERATOR, url) },
    { email: DEMO.OWNER, action: 'Cancel execution', page: await signedIn(browser, DEMO.OWNER, url) },
  ];
  for (const p of people) {
    await p.page.getByTestId('repair-panel').getByRole('button', { name: `${p.action}…` }).click();
    const dialog = p.page.getByRole('dialog', { name: `Preview: ${p.action}` });
    await expect(dialog.getByTestId('preview-now')).toContainText('WAITING');
    await dialog.getByLabel(/Reason/).fill(`e2e race: ${p.action.toLowerCase()}`);
  }
  await Promise.all(people.map((p) => p.page.getByRole('button', { name: `Apply ${p.action.toLowerCase()}` }).click()));

  const outcomes = await Promise.all(
    people.map(async (p) => {
      const done = p.page.getByTestId('repair-applied').or(p.page.getByTestId('repair-lost'));
      await expect(done).toBeVisible({ timeout: 15_000 });
      return (await p.page.getByTestId('repair-applied').count()) > 0 ? 'applied' : 'lost';
    }),
  );
  expect(outcomes.filter((o) => o === 'applied')).toHaveLength(1);
  const winner = people[outcomes.indexOf('applied')]!;
  const loser = people[outcomes.indexOf('lost')]!;
  const newStatus = winner.action === 'Cancel execution' ? 'CANCELLED' : 'RUNNING';

  const lost = loser.page.getByTestId('repair-lost');
  await expect(lost.getByTestId('repair-winner')).toContainText('another operator');
  await expect(lost.getByTestId('repair-winner')).toContainText(winner.email);
  await expect(lost.getByTestId('repair-fresh-state')).toContainText(newStatus);
  await expect(loser.page.getByRole('button', { name: 'Preview again' })).toBeVisible();
  // Behind the dialog the page already shows the new state.
  await expect(loser.page.locator('header:has(h1)').getByText(newStatus, { exact: true })).toBeVisible();
  await screenshots(loser.page, 'repair-lost-race');

  const { rows } = await db.query<{ outcome: string; n: number }>(
    `SELECT outcome, count(*)::int AS n FROM "AuditEntry" WHERE "targetId" = $1 AND action IN ('repair.FORCE_TIMEOUT', 'repair.CANCEL') GROUP BY outcome ORDER BY outcome`,
    [executions.race],
  );
  expect(rows).toEqual([
    { outcome: 'APPLIED', n: 1 },
    { outcome: 'LOST', n: 1 },
  ]);
  for (const p of people) await p.page.context().close();
});

test('a worker fires the timer while the preview is open: apply loses to it, and the page shows the fresh state', async ({ browser }) => {
  await workers.pause();
  await makeWaitOverdue(db, executions.stale);
  const page = await signedIn(browser, DEMO.OPERATOR, `/executions/${executions.stale}`);
  const errors = watchErrors(page);
  await page.getByTestId('repair-panel').getByRole('button', { name: 'Force timeout…' }).click();
  const dialog = page.getByRole('dialog', { name: 'Preview: Force timeout' });
  await expect(dialog.getByTestId('preview-now')).toContainText('WAITING');
  await dialog.getByLabel(/Reason/).fill('e2e: force it before the timer does');

  // Meanwhile a worker runs again and its timer resolves the overdue wait.
  workers.resume();
  await expect
    .poll(async () => (await stepsOf(page.request, executions.stale)).find((s) => s.stepName === 'Wait for a purchase')?.resolvedBy, { timeout: 30_000 })
    .toBe('TIMEOUT');

  await dialog.getByRole('button', { name: 'Apply force timeout' }).click();
  const lost = dialog.getByTestId('repair-lost');
  await expect(lost).toBeVisible();
  await expect(lost.getByTestId('repair-winner')).toContainText('the timer');
  await expect(lost.getByTestId('repair-winner')).toContainText('resolved by TIMEOUT');
  await expect(lost.getByTestId('repair-fresh-state')).toContainText(/RUNNING|COMPLETED/);
  await expect(lost.getByTestId('repair-fresh-state')).toContainText('WAIT_RESOLVED');
  const wait = page.getByTestId('timeline').getByTestId('timeline-entry').filter({ hasText: 'Wait for a purchase' });
  await expect(wait.getByTestId('resolution')).toContainText('Resolved by TIMEOUT');
  await screenshots(page, 'repair-lost-timer');

  // A new preview of the same action says it no longer fits.
  await dialog.getByRole('button', { name: 'Preview again' }).click();
  await expect(dialog.getByTestId('repair-refusal')).toContainText('not waiting');
  await expect(dialog.getByRole('button', { name: 'Apply force timeout' })).toHaveCount(0);
  await page.keyboard.press('Escape');
  await expect(dialog).toHaveCount(0);
  const { rows } = await db.query<{ outcome: string }>(
    `SELECT outcome FROM "AuditEntry" WHERE "targetId" = $1 AND action = 'repair.FORCE_TIMEOUT'`,
    [executions.stale],
  );
  expect(rows.map((r) => r.outcome)).toEqual(['LOST']);
  expect(errors).toEqual([]);
  await page.context().close();
});
