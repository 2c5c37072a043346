import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, test, type Page } from '@playwright/test';
import Papa from 'papaparse';
import { DEMO, signedIn, watchErrors } from './sign-in';
import { sql, trpcMutation, trpcQuery, withWorkersPaused } from './staging';

// Stuck groups, bulk repair, and redrive on /events: the seeded
// incident grouped by cause; a bulk FORCE_TIMEOUT over 200 overdue executions of one group,
// stopped part-way and run again to the end, with live progress, every row's outcome (and
// a CSV of them), and no invariant violated; the dead-lettered event redriven.
//
// An overdue wait lasts no time while workers run (they fire due timers at once), so the
// bulk test pauses the e2e server's workers (SIGSTOP), moves its waits' deadlines an hour
// into the past (past STUCK_GRACE_SECONDS) and resumes the workers in a finally.

const shot = (name: string) => path.join(import.meta.dirname, 'screenshots', `${name}.png`);
const DRILL = 'Bulk timeout drill';
const CONTACTS = 200;

test.describe.configure({ mode: 'serial' });

const group = (page: Page, reason: string) => page.locator(`[data-testid="stuck-group"][data-reason="${reason}"]`);

test.beforeAll(async () => {
  // The seeded poison step's lease ran out at seed time; it counts as LEASE_EXPIRED once
  // STUCK_GRACE_SECONDS have passed. Let that time have passed (this spec may run alone).
  await sql(`UPDATE "StepExecution" SET "leaseExpiresAt" = now() - interval '10 minutes'
              WHERE status = 'RUNNING' AND "leaseExpiresAt" < now() AND attempt >= 3`);
});

test('stuck: the seeded incident, grouped by cause, each group saying what it means and who clears it; filters in the URL', async ({ browser }) => {
  const page = await signedIn(browser, DEMO.OPERATOR);
  const errors = watchErrors(page);
  await page.getByRole('region', { name: 'Stuck' }).getByRole('link', { name: 'Grouped by cause →' }).click();
  await expect(page).toHaveURL(/\/stuck$/);
  await expect(page.getByRole('heading', { level: 1, name: 'Stuck' })).toBeVisible();

  const failed = group(page, 'FAILED');
  await expect(failed).toHaveCount(1);
  await expect(failed).toContainText('Legacy newsletter import');
  await expect(failed).toContainText('Weekly digest');
  await expect(failed.getByTestId('cleared-by')).toContainText('an operator');
  await expect(failed.getByTestId('group-count')).toHaveText('1');

  const dead = group(page, 'EVENT_DEAD');
  await expect(dead).toHaveCount(1);
  // The error is shown with its varying parts replaced: the quoted step name.
  await expect(dead.getByTestId('error-pattern')).toHaveText('dispatch aborted: the worker process was killed (out of memory in "…")');
  await expect(dead.getByTestId('group-sample')).toContainText('purchase · lapsed@example.com');

  const lease = group(page, 'LEASE_EXPIRED');
  await expect(lease).toHaveCount(1);
  await expect(lease).toContainText('Win-back campaign');
  await expect(lease).toContainText('Wait for a purchase');
  await expect(lease.getByTestId('cleared-by')).toContainText('an operator: a poison step');
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.screenshot({ path: shot('stuck-1440'), fullPage: true });
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.screenshot({ path: shot('stuck-1280'), fullPage: true });

  // The sample opens the execution it names.
  await lease.getByTestId('group-sample').click();
  await expect(page).toHaveURL(/\/executions\/[0-9a-f-]{36}$/);
  await expect(page.getByTestId('stuck-now')).toContainText('LEASE_EXPIRED');
  await page.goBack();

  // Filters live in the URL: a colleague opening the link sees the same groups.
  await page.getByLabel('Reason').selectOption('FAILED');
  await expect(page).toHaveURL(/\/stuck\?reason=FAILED$/);
  await expect(page.getByTestId('stuck-group')).toHaveCount(1);
  const viewer = await signedIn(browser, DEMO.VIEWER, '/stuck?reason=FAILED');
  await expect(viewer.getByTestId('stuck-group')).toHaveCount(1);
  await expect(viewer.getByTestId('stuck-group')).toContainText('Legacy newsletter import');
  // Reading is for everyone; repairing is for operators.
  await expect(viewer.getByRole('button', { name: /^Repair/ })).toHaveCount(0);
  await expect(viewer.getByText('this page is read-only for you')).toBeVisible();
  await viewer.context().close();

  // A workflow with nothing stuck says so.
  await page.goto('/stuck');
  // The groups come from the client's own query: once they show, the page is interactive
  // (a choice made before hydration would be lost to the server-rendered select).
  await expect(page.getByTestId('stuck-group').first()).toBeVisible();
  await page.getByLabel('Workflow').selectOption({ label: 'Order confirmation' });
  await expect(page).toHaveURL(/[?&]workflowId=/);
  await expect(page.getByTestId('stuck-empty')).toContainText('Nothing is stuck here');
  await page.goto('/stuck?reason=SLEEPING');
  await expect(page.getByRole('alert').filter({ hasText: 'not valid' })).toContainText('reason');
  expect(errors).toEqual([]);
  await page.context().close();
});

test('bulk repair: FORCE_TIMEOUT over 200 overdue executions of one group shows progress, can be stopped, reports every outcome, and breaks no invariant', async ({ browser }) => {
  test.setTimeout(240_000);
  // As the demo marketer, through the API: a workflow whose wait lasts a day, 200 contacts in it.
  const marketer = await signedIn(browser, DEMO.MARKETER);
  const workflow = await trpcMutation<{ id: string }>(marketer.request, 'workflows.create', {
    name: DRILL,
    trigger: 'MANUAL',
    allowReentry: false,
    steps: [
      { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
      { key: 'wait', type: 'WAIT_FOR_EVENT', name: 'Wait for a reply', config: { eventName: 'replied', timeoutSeconds: 86_400 } },
      { key: 'replied', type: 'EXIT', name: 'Replied', config: { reason: 'replied' } },
      { key: 'silent', type: 'UPDATE_CONTACT', name: 'Mark silent', config: { set: { silent: true } } },
    ],
    transitions: [
      { from: 'start', to: 'wait', branch: null },
      { from: 'wait', to: 'replied', branch: 'EVENT' },
      { from: 'wait', to: 'silent', branch: 'TIMEOUT' },
    ],
  });
  const contacts = Array.from({ length: CONTACTS }, (_, i) => ({ email: `drill-${String(i).padStart(3, '0')}@e2e.test` }));
  const enrolled = await trpcMutation<{ results: { executionId?: string }[] }>(marketer.request, 'enrollments.enrollMany', { workflowId: workflow.id, contacts });
  expect(enrolled.results.filter((r) => r.executionId)).toHaveLength(CONTACTS);
  const waiting = async () => (await trpcQuery<{ byStatus: Record<string, number> }>(marketer.request, 'executions.stats', { workflowId: workflow.id })).byStatus.WAITING;
  await expect.poll(waiting, { timeout: 60_000, intervals: [500, 1_000, 2_000] }).toBe(CONTACTS);
  await marketer.context().close();

  const page = await signedIn(browser, DEMO.OPERATOR);
  const errors = watchErrors(page);
  const forced = async () =>
    Number(
      (
        await sql<{ n: string }>(
          `SELECT count(*) AS n FROM "StepExecution" s JOIN "WorkflowExecution" e ON e.id = s."executionId"
            WHERE e."workflowId" = $1 AND s."resolvedBy" = 'OPERATOR'`,
          [workflow.id],
        )
      )[0]!.n,
    );

  await withWorkersPaused(async () => {
    // The timer outage: every wait of the drill an hour past its deadline, and no worker to fire it.
    await sql(
      `UPDATE "StepExecution" s SET "dueAt" = now() - interval '1 hour'
         FROM "WorkflowExecution" e
        WHERE e.id = s."executionId" AND e."workflowId" = $1 AND s.status = 'WAITING'`,
      [workflow.id],
    );
    await page.goto(`/stuck?workflowId=${workflow.id}`);
    const overdue = group(page, 'WAIT_OVERDUE');
    await expect(overdue).toHaveCount(1);
    await expect(overdue.getByTestId('group-count')).toHaveText(String(CONTACTS));
    await expect(overdue).toContainText('Wait for a reply');
    await expect(overdue.getByTestId('cleared-by')).toContainText('the workers, once running');

    // Count first, then confirm with a reason.
    await overdue.getByRole('button', { name: /^Repair 200 executions: WAIT_OVERDUE/ }).click();
    const bulk = page.getByTestId('bulk-repair');
    await expect(bulk.getByLabel(/FORCE_TIMEOUT/)).toBeChecked();
    await bulk.getByRole('button', { name: 'Count what it would touch' }).click();
    await expect(bulk.getByTestId('bulk-count')).toContainText('FORCE_TIMEOUT will touch 200 executions');
    const go = bulk.getByRole('button', { name: 'Repair 200 executions' });
    await expect(go).toBeDisabled();
    await bulk.getByLabel(/Reason/).fill('e2e: timer outage drill');
    await go.click();

    // It moves while it runs; Stop part-way.
    const progress = bulk.getByRole('progressbar', { name: 'Bulk repair progress' });
    await expect(progress).toHaveAttribute('aria-valuemax', String(CONTACTS));
    await expect.poll(async () => Number(await progress.getAttribute('aria-valuenow')), { intervals: [50] }).toBeGreaterThanOrEqual(20);
    await page.screenshot({ path: shot('bulk-running-1440') });
    await bulk.getByRole('button', { name: 'Stop' }).click();
    await expect(bulk.getByTestId('bulk-summary')).toContainText('Interrupted (stopped by you)');
    const stoppedAt = await bulk.getByTestId('bulk-outcome').count();
    expect(stoppedAt).toBeGreaterThanOrEqual(20);
    expect(stoppedAt).toBeLessThan(CONTACTS);
    await expect(bulk.getByTestId('bulk-summary')).toContainText(`${stoppedAt} of ${CONTACTS} done`);
    // The server stopped too: rows done stay done, and nothing more is repaired (the few
    // rows already on their way to the browser when Stop came were done as well).
    await page.waitForTimeout(1_500);
    const afterStop = await forced();
    expect(afterStop).toBeGreaterThanOrEqual(stoppedAt);
    expect(afterStop).toBeLessThan(stoppedAt + 15);
    await page.waitForTimeout(1_000);
    expect(await forced()).toBe(afterStop);

    // Again on what is left of the group: the count says how many, and this time it runs to the end.
    await bulk.getByRole('button', { name: 'New run on this group' }).click();
    await bulk.getByRole('button', { name: 'Count what it would touch' }).click();
    const left = CONTACTS - afterStop;
    await expect(bulk.getByTestId('bulk-count')).toContainText(`will touch ${left} executions`);
    await bulk.getByRole('button', { name: `Repair ${left} executions` }).click();
    await expect.poll(async () => Number(await progress.getAttribute('aria-valuenow')), { intervals: [50] }).toBeGreaterThan(0);
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.screenshot({ path: shot('bulk-running-1280') });
    await expect(bulk.getByTestId('bulk-summary')).toContainText(`Finished: all ${left} rows done`, { timeout: 60_000 });
    await expect(bulk.getByTestId('bulk-summary')).toContainText(`${left} applied · 0 skipped because they changed · 0 refused`);
    await expect(bulk.getByTestId('bulk-outcome')).toHaveCount(left);
    await expect(progress).toHaveAttribute('aria-valuenow', String(left));
    await expect(bulk.getByTestId('bulk-outcome').first()).toContainText('applied');
    await expect(bulk.getByTestId('bulk-outcome').first().getByRole('link')).toHaveAttribute('href', /\/executions\/[0-9a-f-]{36}$/);
    expect(await forced()).toBe(CONTACTS);
    await page.screenshot({ path: shot('bulk-result-1280'), fullPage: true });
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.screenshot({ path: shot('bulk-result-1440'), fullPage: true });

    // Every outcome, downloadable.
    const [download] = await Promise.all([page.waitForEvent('download'), bulk.getByRole('button', { name: 'Download CSV' }).click()]);
    const csv = Papa.parse<Record<string, string>>(readFileSync((await download.path())!, 'utf8'), { header: true, skipEmptyLines: true });
    expect(csv.data).toHaveLength(left);
    expect(csv.data.every((row) => row.outcome === 'APPLIED' && /^[0-9a-f-]{36}$/.test(row.executionId ?? ''))).toBe(true);
    expect(download.suggestedFilename()).toMatch(/^bulk-force_timeout-.*\.csv$/);

    // Each run as a whole is in the audit log, the stopped one saying so.
    const runs = await sql<{ after: { interrupted: boolean; applied: number } }>(
      `SELECT after FROM "AuditEntry" WHERE action = 'repair.applyMany' AND reason = 'e2e: timer outage drill' ORDER BY at`,
    );
    expect(runs.map((r) => r.after.interrupted)).toEqual([true, false]);
    expect(runs.map((r) => r.after.applied)).toEqual([afterStop, left]);
    expect(await sql(`SELECT 1 FROM "AuditEntry" WHERE action = 'repair.FORCE_TIMEOUT' AND outcome = 'APPLIED' AND reason = 'e2e: timer outage drill'`)).toHaveLength(CONTACTS);
  });

  // With the workers back, each forced execution takes its TIMEOUT branch to the end.
  const completed = async () => (await trpcQuery<{ byStatus: Record<string, number> }>(page.request, 'executions.stats', { workflowId: workflow.id })).byStatus.COMPLETED;
  await expect.poll(completed, { timeout: 60_000, intervals: [500, 1_000, 2_000] }).toBe(CONTACTS);
  const silent = await sql<{ n: string }>(`SELECT count(*) AS n FROM "Contact" WHERE email LIKE 'drill-%' AND (data->>'silent')::boolean`);
  expect(Number(silent[0]!.n)).toBe(CONTACTS);
  const invariants = await trpcQuery<{ id: string; violations: number }[]>(page.request, 'health.invariants', undefined);
  expect(invariants.filter((i) => i.violations > 0)).toEqual([]);
  await page.goto('/');
  await expect(page.getByRole('region', { name: 'Invariants' }).getByText('All 9 hold')).toBeVisible();
  await page.goto(`/stuck?workflowId=${workflow.id}`);
  await expect(page.getByTestId('stuck-empty')).toContainText('Nothing is stuck here');
  expect(errors).toEqual([]);
  await page.context().close();
});

test('events: an operator redrives the dead-lettered event after a preview and with a reason; a viewer cannot', async ({ browser }) => {
  const viewer = await signedIn(browser, DEMO.VIEWER, '/events?state=dead');
  await expect(viewer.getByTestId('event-row')).toHaveCount(1);
  await expect(viewer.getByRole('button', { name: 'Redrive…' })).toHaveCount(0);
  await viewer.context().close();

  const page = await signedIn(browser, DEMO.OPERATOR, '/events?state=dead');
  const errors = watchErrors(page);
  const row = page.getByTestId('event-row');
  await expect(row).toHaveCount(1);
  await row.getByRole('button', { name: 'Redrive…' }).click();
  const panel = page.getByTestId('redrive-panel');
  await expect(panel.getByTestId('redrive-plan')).toContainText('bring the dead-lettered event "purchase" back and dispatch it now');
  const go = panel.getByRole('button', { name: 'Redrive now' });
  await expect(go).toBeDisabled();
  await panel.getByLabel(/Reason/).fill('e2e: the crashing worker is fixed');
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.screenshot({ path: shot('events-redrive-1440') });
  await go.click();
  await expect(panel.getByTestId('redrive-result')).toContainText('Redriven');
  // No longer dead: the list, refreshed, shows it gone from the dead letters.
  await expect(row).toHaveClass(/opacity-50/);
  const events = await sql<{ deadAt: Date | null }>(
    `SELECT ev."deadAt" FROM "Event" ev JOIN "Contact" c ON c.id = ev."contactId" WHERE c.email = 'lapsed@example.com' AND ev.name = 'purchase'`,
  );
  expect(events).toEqual([{ deadAt: null }]);
  await page.goto('/audit?action=repair.REDRIVE_EVENT');
  await expect(page.getByTestId('audit-row')).toHaveCount(1);
  await expect(page.getByTestId('audit-row')).toContainText(DEMO.OPERATOR);
  expect(errors).toEqual([]);
  await page.context().close();
});
