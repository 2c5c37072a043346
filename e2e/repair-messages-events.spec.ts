import { test } from '@playwright/test';
import type pg from 'pg';
import { DEMO, signedIn } from './sign-in';
import { trpcMutation, trpcQuery } from './staging';
import { connect, makeWaitOverdue, portOf, Workers } from './workers';
import { expect, screenshots, watchErrors } from './repair-support';

// Repairs of an email and of an event from the execution page: RESEND's duplicate warning
// and the worker sending it again; DELIVER_EVENT choosing among the contact's recent
// events; FORCE_TIMEOUT over an event accepted inside the window (event time decides).
// As in repair.spec.ts, a spec that pauses the e2e server's workers always resumes them.

test.describe.configure({ mode: 'serial' });

let db: pg.Client;
let workers: Workers;

test.beforeAll(async ({ baseURL }) => {
  const port = portOf(baseURL);
  db = await connect(port);
  workers = new Workers(port, db);
});

test.afterEach(() => {
  workers.resume();
});

test.afterAll(async () => {
  workers?.resume();
  await db?.end();
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
