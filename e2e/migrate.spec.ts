import { expect, test } from '@playwright/test';
import { screenshots, watchErrors } from './page-support';
import { DEMO, signedIn } from './sign-in';
import { sql, trpcMutation, trpcQuery } from './staging';

// Moving executions to a later version (MIGRATE, docs/versions.md): contacts wait at a long
// DELAY of version 1; version 2, published over it, has no such step. From the executions
// list at that step (the publish dialog's link), one execution's dialog refuses the move
// until its step is mapped, refuses a map that would send an email again, and previews
// the move; then "Repair matching…" plans the whole selection as a dry run (refused "has
// no step" until mapped, then movable with the count), and moves them, each row APPLIED.
// The workers finish them on version 2. Screenshots of the dialog and the dry-run table
// at 1280 and 1440 pixels wide.

test.describe.configure({ mode: 'serial' });

const RUN = Date.now().toString(36);
const CONTACTS = ['a', 'b', 'c', 'd'].map((who) => `migrate-${RUN}-${who}@e2e.test`);
const START = { key: 'start', type: 'TRIGGER', name: 'Enrolled', config: {} };
const HELLO = { key: 'hello', type: 'SEND_EMAIL', name: 'Hello email', config: { subject: 'Hello', body: 'Glad you are here.' } };
const PAUSE = { key: 'pause', type: 'DELAY', name: 'Give it a week', config: { seconds: 7 * 86_400 } };
const FOLLOWUP = { key: 'followup', type: 'SEND_EMAIL', name: 'Follow-up', config: { subject: 'How is it going?', body: 'Tell us.' } };

type Detail = { steps: { id: string; key: string; waiting: number }[] };

test('move the executions left at a removed step to version 2: refused until mapped, previewed per group, applied, finished on v2', async ({ browser }) => {
  test.setTimeout(240_000);
  const marketer = await signedIn(browser, DEMO.MARKETER, '/workflows');
  const { id: workflowId } = await trpcMutation<{ id: string }>(marketer.request, 'workflows.create', {
    name: `E2E migrate ${RUN}`,
    trigger: 'MANUAL',
    allowReentry: false,
    steps: [START, HELLO, PAUSE, FOLLOWUP],
    transitions: [
      { from: 'start', to: 'hello', branch: null },
      { from: 'hello', to: 'pause', branch: null },
      { from: 'pause', to: 'followup', branch: null },
    ],
  });
  await trpcMutation(marketer.request, 'enrollments.enrollMany', { workflowId, contacts: CONTACTS.map((email) => ({ email })) });
  // The workers send the hello email and park each at the week-long delay.
  await expect
    .poll(async () => (await trpcQuery<Detail>(marketer.request, 'workflows.get', { id: workflowId })).steps.find((s) => s.key === 'pause')!.waiting, {
      timeout: 60_000,
      intervals: [500, 1_000],
    })
    .toBe(CONTACTS.length);
  // Version 2 drops the delay: the hello email leads straight to the follow-up.
  await trpcMutation(marketer.request, 'workflows.publish', {
    workflowId,
    basedOnVersion: 1,
    definition: {
      steps: [START, HELLO, FOLLOWUP],
      transitions: [
        { from: 'start', to: 'hello', branch: null },
        { from: 'hello', to: 'followup', branch: null },
      ],
    },
  });
  await marketer.context().close();

  const page = await signedIn(browser, DEMO.OPERATOR, '/');
  const errors = watchErrors(page);
  const pauseId = (await trpcQuery<Detail>(page.request, 'workflows.get', { id: workflowId, version: 1 })).steps.find((s) => s.key === 'pause')!.id;
  // The link the publish dialog gives for the executions at the removed step.
  const atPause = `/executions?workflowId=${workflowId}&stepId=${pauseId}&status=RUNNING&status=WAITING`;

  // The list at that step of version 1: its version on each row, the step selected with its version.
  await page.goto(atPause);
  const rows = page.getByRole('table', { name: 'Executions' }).getByTestId('execution-row');
  await expect(rows).toHaveCount(CONTACTS.length);
  await expect(rows.getByTestId('execution-workflow-version')).toHaveText(CONTACTS.map(() => 'v1'));
  await expect(page.getByLabel('Current step')).toHaveValue(pauseId);
  await expect(page.getByLabel('Current step').locator('option:checked')).toHaveText(/Give it a week .*v1/);

  // One execution: "on version 1 of 2", and its repair dialog.
  await rows.first().getByRole('link').click();
  await expect(page).toHaveURL(/\/executions\/[0-9a-f-]{36}$/);
  const runsOn = page.getByTestId('execution-workflow-version');
  await expect(runsOn).toHaveText('version 1 of 2');
  await expect(runsOn).toHaveAttribute('href', `/workflows/${workflowId}?version=1`);
  const panel = page.getByTestId('repair-panel');
  await expect(panel.getByTestId('repair-action-MIGRATE')).toContainText('has no step "pause"');
  await panel.getByRole('button', { name: 'Move to version…' }).click();
  const dialog = page.getByRole('dialog', { name: 'Preview: Move to version' });
  await expect(dialog.getByLabel('Version to move to')).toHaveValue('');
  await expect(dialog.getByLabel('Version to move to').locator('option:checked')).toHaveText('version 2 (the latest)');
  await expect(dialog.getByTestId('repair-refusal')).toContainText('version 2 has no step "pause"');
  const map = dialog.getByLabel('Step of version 2 for “Give it a week”');
  // Mapped back to the hello email: it would send again what this execution already sent.
  await map.selectOption('hello');
  await expect(dialog.getByTestId('repair-refusal')).toContainText('would send again "hello"');
  await expect(dialog.getByTestId('migrate-allow-resend')).toContainText('hello');
  await expect(dialog.getByTestId('preview-migration-resends')).toContainText('hello');
  await screenshots(page, 'migrate-dialog-resend', false);
  // To the follow-up: allowed, and what it does.
  await map.selectOption('followup');
  await expect(dialog.getByTestId('repair-refusal')).toHaveCount(0);
  await expect(dialog.getByTestId('migrate-allow-resend')).toHaveCount(0);
  await expect(dialog.getByTestId('preview-migration')).toContainText(/v1\s*“Give it a week”\s*DELAY\s*pause\s*→\s*v2\s*“Follow-up”\s*SEND_EMAIL\s*followup/);
  await expect(dialog.getByTestId('preview-migration-wait')).toContainText('Ends unresolved: “Follow-up” runs now.');
  await expect(dialog.getByTestId('preview-migration-resends')).toContainText('None');
  await dialog.getByLabel(/Reason/).fill('e2e: the delay was dropped in version 2');
  await expect(dialog.getByRole('button', { name: 'Apply move to version' })).toBeEnabled();
  await screenshots(page, 'migrate-dialog', false);
  // Not applied here: the whole step moves in bulk below.
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await expect(dialog).toHaveCount(0);

  // ?repair=MIGRATE opens "Repair matching…" with MIGRATE chosen, then leaves the address.
  await page.goto(`${atPause}&repair=MIGRATE`);
  const bulk = page.getByTestId('bulk-repair');
  await expect(bulk.getByLabel(/^MIGRATE/)).toBeChecked();
  await expect(page).not.toHaveURL(/repair=MIGRATE/);
  await bulk.getByRole('button', { name: 'Close' }).click();
  await expect(bulk).toHaveCount(0);

  // Repair matching → Move to version: the dry run refuses the group until its step is mapped.
  await page.getByRole('button', { name: 'Repair matching…' }).click();
  await bulk.getByLabel(/^MIGRATE/).check();
  await bulk.getByRole('button', { name: 'Plan the move: a dry run' }).click();
  const groups = bulk.getByTestId('migrate-group');
  await expect(groups).toHaveCount(1);
  await expect(groups.first()).toHaveAttribute('data-allowed', 'false');
  await expect(groups.first()).toContainText('refused: STEP_GONE');
  await expect(groups.first()).toContainText('has no step "pause"');
  await expect(bulk.getByTestId('migrate-summary')).toContainText(`0 movable · ${CONTACTS.length} refused`);
  await expect(bulk.getByRole('button', { name: /^Move / })).toHaveCount(0);
  await screenshots(page, 'migrate-dry-run-refused', true);
  await bulk.getByLabel('Step of version 2 for “Give it a week”').selectOption('followup');
  await expect(groups.first()).toHaveAttribute('data-allowed', 'true');
  await expect(groups.first()).toContainText(String(CONTACTS.length));
  await expect(groups.first()).toContainText('Give it a week');
  await expect(groups.first()).toContainText('Follow-up');
  await expect(groups.first()).toContainText('movable');
  await expect(groups.first().getByRole('link')).toHaveCount(CONTACTS.length);
  await expect(bulk.getByTestId('migrate-summary')).toContainText(`${CONTACTS.length} movable · 0 refused`);
  await bulk.getByLabel(/Reason/).fill('e2e: the delay was dropped in version 2');
  await screenshots(page, 'migrate-dry-run', true);

  await bulk.getByRole('button', { name: `Move ${CONTACTS.length} executions` }).click();
  await expect(bulk.getByTestId('bulk-summary')).toContainText(`Finished: all ${CONTACTS.length} rows done`, { timeout: 60_000 });
  await expect(bulk.getByTestId('bulk-outcome')).toHaveCount(CONTACTS.length);
  for (const outcome of await bulk.getByTestId('bulk-outcome').all()) await expect(outcome).toHaveAttribute('data-outcome', 'APPLIED');
  await screenshots(page, 'migrate-applied', true);

  // The workers run the follow-up on version 2 and complete them.
  await expect
    .poll(
      async () =>
        (
          await sql<{ status: string; number: number }>(
            `SELECT e.status::text AS status, v.number FROM "WorkflowExecution" e JOIN "WorkflowVersion" v ON v.id = e."workflowVersionId" WHERE e."workflowId" = $1`,
            [workflowId],
          )
        ).map((r) => `${r.status} v${r.number}`),
      { timeout: 60_000, intervals: [500, 1_000] },
    )
    .toEqual(CONTACTS.map(() => 'COMPLETED v2'));
  await page.goto(`/executions?workflowId=${workflowId}`);
  await expect(rows).toHaveCount(CONTACTS.length);
  await expect(rows.getByTestId('execution-workflow-version')).toHaveText(CONTACTS.map(() => 'v2'));
  for (const row of await rows.all()) await expect(row).toContainText('COMPLETED');
  // Each contact got the hello email once and the follow-up once: nothing was sent again.
  const sent = await sql<{ subject: string; n: number }>(
    `SELECT m.subject, count(*)::int AS n FROM "Message" m JOIN "WorkflowExecution" e ON e.id = m."executionId" WHERE e."workflowId" = $1 GROUP BY 1 ORDER BY 1`,
    [workflowId],
  );
  expect(sent).toEqual([
    { subject: 'Hello', n: CONTACTS.length },
    { subject: 'How is it going?', n: CONTACTS.length },
  ]);
  // Audited, each row, with the operator's choices.
  const audited = await sql<{ n: number }>(
    `SELECT count(*)::int AS n FROM "AuditEntry" a JOIN "WorkflowExecution" e ON e.id::text = a."targetId"
      WHERE e."workflowId" = $1 AND a.action = 'repair.MIGRATE' AND a.outcome = 'APPLIED'`,
    [workflowId],
  );
  expect(audited[0]!.n).toBe(CONTACTS.length);
  expect(errors).toEqual([]);
  await page.context().close();
});
