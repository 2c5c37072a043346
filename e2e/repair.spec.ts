import path from 'node:path';
import { expect as baseExpect, test, type APIRequestContext, type Page } from '@playwright/test';
import type pg from 'pg';
import { DEMO, signedIn } from './sign-in';
import { trpcMutation, trpcQuery } from './staging';
import { connect, makeWaitOverdue, portOf, Workers } from './workers';

// Repair from the execution page: only the actions the state
// allows, each behind a preview and a reason; apply carries the previewed version and
// step execution; a lost race says who won and shows the fresh state. The e2e server's
// workers fire a due timer at once, so the specs that need a wait to stay overdue (or an
// execution to stay put while two people race) pause them first (e2e/workers.ts) and
// always resume them: the other spec files share this server.

// Two cores shared with builds and other suites: give the page a little longer than the default.
const expect = baseExpect.configure({ timeout: 10_000 });

const shot = (name: string) => path.join(import.meta.dirname, 'screenshots', `${name}.png`);

test.describe.configure({ mode: 'serial' });

let db: pg.Client;
let workers: Workers;
const executions: Record<'overdue' | 'race' | 'stale', string> = { overdue: '', race: '', stale: '' };

function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  return errors;
}

interface StepView {
  stepName: string;
  status: string;
  resolvedBy: string | null;
  resolvedBranch: string | null;
}

async function stepsOf(request: APIRequestContext, id: string): Promise<StepView[]> {
  return (await trpcQuery<{ steps: StepView[] }>(request, 'executions.get', { id })).steps;
}

/** Screenshots of what an operator sees, at the two widths the console is made for. */
async function screenshots(page: Page, name: string): Promise<void> {
  for (const [width, height] of [
    [1440, 900],
    [1280, 800],
  ] as const) {
    await page.setViewportSize({ width, height });
    await page.screenshot({ path: shot(`${name}-${width}`) });
  }
  await page.setViewportSize({ width: 1440, height: 900 });
}

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
      email: `repair-${key}@e2e.test`,
    });
    executions[key] = executionId;
  }
  await expect
    .poll(
      async () => (await trpcQuery<{ items: unknown[] }>(page.request, 'executions.list', { contact: 'repair-', status: ['WAITING'], limit: 10 })).items.length,
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
  const row = page.getByTestId('execution-row').filter({ hasText: 'repair-overdue@e2e.test' });
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

test('an email whose send failed: RESEND’s preview warns it may duplicate, and a worker sends it again once applied', async ({ browser }) => {
  const marketer = await signedIn(browser, DEMO.MARKETER);
  const workflows = await trpcQuery<{ id: string; name: string }[]>(marketer.request, 'workflows.list', undefined);
  const welcome = workflows.find((w) => w.name === 'Welcome series')!;
  const { executionId } = await trpcMutation<{ executionId: string }>(marketer.request, 'enrollments.enroll', { workflowId: welcome.id, email: 'repair-mail@e2e.test' });
  await marketer.context().close();
  // Welcomed, then parked on the hour-long delay; then the provider is said to have refused the welcome.
  await expect
    .poll(async () => (await db.query(`SELECT 1 FROM "Message" WHERE "executionId" = $1 AND status = 'SENT'`, [executionId])).rowCount, { timeout: 30_000 })
    .toBe(1);
  await db.query(
    `UPDATE "Message" SET status = 'FAILED', error = '550 5.2.2 mailbox full', "sentAt" = NULL, "providerId" = NULL, version = version + 1 WHERE "executionId" = $1`,
    [executionId],
  );

  const page = await signedIn(browser, DEMO.OPERATOR, `/executions/${executionId}`);
  const errors = watchErrors(page);
  await expect(page.getByTestId('stuck-now')).toContainText('MESSAGE_FAILED');
  const email = page.getByTestId('repair-panel').getByTestId('repair-email');
  await expect(email).toContainText('550 5.2.2 mailbox full');
  await expect(email.getByRole('button')).toHaveText(['Mark as sent…', 'Resend…', 'Give up…']);
  await email.getByRole('button', { name: 'Resend…' }).click();
  const dialog = page.getByRole('dialog', { name: 'Preview: Resend' });
  await expect(dialog.getByTestId('preview-now')).toContainText('FAILED');
  await expect(dialog.getByTestId('preview-email')).toContainText('YES — the email goes out again');
  await expect(dialog.getByTestId('preview-email')).toContainText('may send a duplicate');
  await dialog.getByLabel(/Reason/).fill('e2e: the provider bounced it while full; the mailbox has room again');
  await screenshots(page, 'repair-preview-resend');
  await dialog.getByRole('button', { name: 'Apply resend' }).click();
  await expect(dialog).toHaveCount(0);
  await expect(page.getByTestId('repair-applied')).toContainText('Applied resend');
  // A worker delivers it once more: SENT again, and nothing left for an operator.
  await expect(page.getByTestId('timeline').getByTestId('message')).toContainText('SENT', { timeout: 30_000 });
  await expect(page.getByTestId('repair-panel').getByTestId('repair-email')).toHaveCount(0);
  const { rows } = await db.query<{ outcome: string }>(`SELECT outcome FROM "AuditEntry" WHERE action = 'repair.RESEND' AND "targetType" = 'message'`);
  expect(rows.map((r) => r.outcome)).toEqual(['APPLIED']);
  expect(errors).toEqual([]);
  await page.context().close();
});

test('DELIVER_EVENT offers the contact’s recent matching events and resumes the wait with the one chosen', async ({ browser }) => {
  // A purchase accepted before the wait began never resumes it by itself (event time decides):
  // an operator who knows it belongs to this journey delivers it by hand.
  const marketer = await signedIn(browser, DEMO.MARKETER);
  const workflows = await trpcQuery<{ id: string; name: string }[]>(marketer.request, 'workflows.list', undefined);
  const winBack = workflows.find((w) => w.name === 'Win-back campaign')!;
  const { eventId } = await trpcMutation<{ eventId: string }>(marketer.request, 'events.track', { name: 'purchase', email: 'repair-deliver@e2e.test', data: { total: 42 } });
  const { executionId } = await trpcMutation<{ executionId: string }>(marketer.request, 'enrollments.enroll', { workflowId: winBack.id, email: 'repair-deliver@e2e.test' });
  await expect
    .poll(async () => (await trpcQuery<{ status: string }>(marketer.request, 'executions.get', { id: executionId })).status, { timeout: 30_000 })
    .toBe('WAITING');
  await marketer.context().close();

  const page = await signedIn(browser, DEMO.OPERATOR, `/executions/${executionId}`);
  const errors = watchErrors(page);
  const deliver = page.getByTestId('repair-panel').getByTestId('repair-action-DELIVER_EVENT');
  const choice = deliver.getByLabel('Event to deliver');
  await expect(choice.locator('option')).toHaveCount(2);
  await choice.selectOption(eventId);
  await deliver.getByRole('button', { name: 'Deliver event…' }).click();
  const dialog = page.getByRole('dialog', { name: 'Preview: Deliver event' });
  await expect(dialog.getByTestId('preview-branch')).toContainText('EVENT');
  await expect(dialog.getByTestId('preview-branch')).toContainText('Welcome back');
  await dialog.getByLabel(/Reason/).fill('e2e: the customer bought in the shop the day before');
  await dialog.getByRole('button', { name: 'Apply deliver event' }).click();
  await expect(page.getByTestId('repair-applied')).toContainText('Applied deliver event');
  const wait = page.getByTestId('timeline').getByTestId('timeline-entry').filter({ hasText: 'Wait for a purchase' });
  await expect(wait.getByTestId('resolution')).toContainText('Resolved by OPERATOR');
  await expect(wait.getByTestId('resolution')).toContainText('took the EVENT branch');
  await expect(page.getByTestId('timeline')).toContainText('Ended: completed', { timeout: 30_000 });
  const { rows } = await db.query<{ resumeEventId: string }>(
    `SELECT s."resumeEventId" FROM "StepExecution" s JOIN "WorkflowStep" ws ON ws.id = s."stepId" WHERE s."executionId" = $1 AND ws.key = 'purchase'`,
    [executionId],
  );
  expect(rows).toEqual([{ resumeEventId: eventId }]);
  expect(errors).toEqual([]);
  await page.context().close();
});

test('FORCE_TIMEOUT over a purchase accepted inside the window: the preview names it and takes EVENT, as the timer would; "time out anyway" is a choice', async ({ browser }) => {
  const marketer = await signedIn(browser, DEMO.MARKETER);
  const workflows = await trpcQuery<{ id: string; name: string }[]>(marketer.request, 'workflows.list', undefined);
  const winBack = workflows.find((w) => w.name === 'Win-back campaign')!;
  const { executionId } = await trpcMutation<{ executionId: string }>(marketer.request, 'enrollments.enroll', { workflowId: winBack.id, email: 'repair-in-window@e2e.test' });
  await expect
    .poll(async () => (await trpcQuery<{ status: string }>(marketer.request, 'executions.get', { id: executionId })).status, { timeout: 30_000 })
    .toBe('WAITING');
  await marketer.context().close();

  // The timer is overdue, and a purchase accepted before the deadline was never dispatched
  // (its dispatch is late: due in an hour), as in a dispatcher outage.
  await workers.pause();
  await makeWaitOverdue(db, executionId);
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO "Event" (id, "projectId", "contactId", name, data, "createdAt", "nextDispatchAt")
     SELECT gen_random_uuid(), e."projectId", e."contactId", 'purchase', '{"total": 99}'::jsonb, now() - interval '15 minutes', now() + interval '1 hour'
       FROM "WorkflowExecution" e WHERE e.id = $1
     RETURNING id`,
    [executionId],
  );
  const eventId = rows[0]!.id;

  const page = await signedIn(browser, DEMO.OPERATOR, `/executions/${executionId}`);
  const errors = watchErrors(page);
  const panel = page.getByTestId('repair-panel');
  await expect(panel.getByTestId('repair-action-FORCE_TIMEOUT')).toContainText('"purchase" event accepted');
  await panel.getByRole('button', { name: 'Force timeout…' }).click();
  const dialog = page.getByRole('dialog', { name: 'Preview: Force timeout' });
  const events = dialog.getByTestId('preview-in-window-events');
  await expect(events).toContainText('purchase');
  await expect(events).toContainText('resumes the wait by EVENT, as the timer would');
  await expect(dialog.getByTestId('preview-branch')).toContainText('EVENT');
  await expect(dialog.getByTestId('preview-branch')).toContainText('Welcome back');
  await expect(dialog.getByTestId('preview-change')).toContainText('as the timer would');
  const anyway = dialog.getByTestId('ignore-in-window-events').getByRole('checkbox');
  await expect(anyway).not.toBeChecked();
  await dialog.getByLabel(/Reason/).fill('e2e: the timer outage left this wait overdue');
  await screenshots(page, 'repair-preview-force-timeout-in-window');

  // Timing out anyway previews again: TIMEOUT, the event named as ignored.
  await anyway.check();
  await expect(dialog.getByTestId('preview-branch')).toContainText('TIMEOUT');
  await expect(dialog.getByTestId('preview-branch')).toContainText('Win-back offer');
  await expect(events).toContainText('ignored: you chose to time out anyway');
  await expect(dialog.getByTestId('preview-change')).toContainText('ignoring the "purchase" event');
  await screenshots(page, 'repair-preview-force-timeout-anyway');

  // The operator thinks again: the timer's rule, and the purchase wins.
  await anyway.uncheck();
  await expect(dialog.getByTestId('preview-branch')).toContainText('EVENT');
  await dialog.getByRole('button', { name: 'Apply force timeout' }).click();
  await expect(page.getByTestId('repair-applied')).toContainText('Applied force timeout');
  const wait = page.getByTestId('timeline').getByTestId('timeline-entry').filter({ hasText: 'Wait for a purchase' });
  await expect(wait.getByTestId('resolution')).toContainText('Resolved by EVENT');
  await expect(wait.getByTestId('resolution')).toContainText('took the EVENT branch');
  workers.resume();
  await expect(page.getByTestId('timeline').getByTestId('timeline-entry').filter({ hasText: 'Welcome back' })).toContainText('SENT', { timeout: 30_000 });
  const { rows: resolved } = await db.query<{ resolvedBy: string; resumeEventId: string }>(
    `SELECT s."resolvedBy"::text AS "resolvedBy", s."resumeEventId" FROM "StepExecution" s JOIN "WorkflowStep" ws ON ws.id = s."stepId" WHERE s."executionId" = $1 AND ws.key = 'purchase'`,
    [executionId],
  );
  expect(resolved).toEqual([{ resolvedBy: 'EVENT', resumeEventId: eventId }]);
  const { rows: offers } = await db.query(`SELECT 1 FROM "Message" WHERE "executionId" = $1 AND subject LIKE 'We miss you%'`, [executionId]);
  expect(offers).toEqual([]);
  expect(errors).toEqual([]);
  await page.context().close();
});
