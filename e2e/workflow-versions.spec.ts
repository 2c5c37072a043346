import { expect, test, type Locator, type Page } from '@playwright/test';
import { screenshots, watchErrors } from './page-support';
import { DEMO, signedIn } from './sign-in';
import { trpcMutation, trpcQuery } from './staging';

// Workflow versions in the console (docs/versions.md): a marketer edits the latest version
// on the canvas (an email's subject, with its live preview; a step removed; a branch
// reconnected by dragging), reviews the diff with the executions standing at the removed
// step, and publishes version 2; the workflow page then shows version 2 with the link to
// the executions left at the removed step of version 1, and the history shows both. Two
// tabs based on the same version: the first publishes, the second is refused with who
// published which version, and loads it without losing its edits. Screenshots of the
// editor and the dialogs at 1280 and 1440 pixels wide.

test.describe.configure({ mode: 'serial' });

/** Press at the middle of one element, let go at the middle of another, through the pointer's path. */
async function drag(page: Page, from: Locator, to: Locator) {
  const a = (await from.boundingBox())!;
  const b = (await to.boundingBox())!;
  await page.mouse.move(a.x + a.width / 2, a.y + a.height / 2);
  await page.mouse.down();
  await page.mouse.move(a.x + a.width / 2, a.y + a.height / 2 + 12, { steps: 4 });
  await page.mouse.move(b.x + b.width / 2, b.y + b.height / 2, { steps: 16 });
  await page.mouse.up();
}

type Detail = {
  id: string;
  latestVersion: number;
  version: { number: number; publishedBy: string };
  draft: unknown;
  steps: { id: string; key: string; name: string; waiting: number; config: Record<string, unknown> }[];
  transitions: { from: string; to: string; branch: string | null }[];
};

const RUN = Date.now().toString(36);
const NAME = `E2E versions ${RUN}`;
const DEFINITION = {
  name: NAME,
  trigger: 'MANUAL',
  allowReentry: false,
  steps: [
    { key: 'start', type: 'TRIGGER', name: 'Enrolled', config: {} },
    { key: 'hello', type: 'SEND_EMAIL', name: 'Hello email', config: { subject: 'Hello', body: 'Glad you are here.' } },
    { key: 'pause', type: 'DELAY', name: 'Give it a day', config: { seconds: 86400 } },
    { key: 'followup', type: 'SEND_EMAIL', name: 'Follow-up', config: { subject: 'How is it going?', body: 'Tell us.' } },
  ],
  transitions: [
    { from: 'start', to: 'hello', branch: null },
    { from: 'hello', to: 'pause', branch: null },
    { from: 'pause', to: 'followup', branch: null },
  ],
};

type Step = (typeof DEFINITION.steps)[number];

let workflowId = '';

test('edit on the canvas, review the diff with the executions at the removed step, publish version 2', async ({ browser }) => {
  const page = await signedIn(browser, DEMO.MARKETER, '/workflows');
  const errors = watchErrors(page);
  ({ id: workflowId } = await trpcMutation<{ id: string }>(page.request, 'workflows.create', DEFINITION));
  // Two contacts go through the email and wait at the delay: the step this edit removes.
  for (const who of ['a', 'b']) await trpcMutation(page.request, 'enrollments.enroll', { workflowId, email: `versions-${RUN}-${who}@e2e.test` });
  await expect
    .poll(async () => (await trpcQuery<Detail>(page.request, 'workflows.get', { id: workflowId })).steps.find((s) => s.key === 'pause')!.waiting, { timeout: 30_000 })
    .toBe(2);

  await page.goto(`/workflows/${workflowId}`);
  await expect(page.getByTestId('version-shown')).toContainText('Version 1 · latest');
  await expect(page.getByTestId('version-history').getByTestId('version-1')).toContainText('2 active');
  await page.getByRole('link', { name: 'Edit', exact: true }).click();
  await expect(page).toHaveURL(`/workflows/${workflowId}/edit`);
  await expect(page.getByTestId('edit-base')).toContainText('based on version 1 (the latest)');
  const graph = page.getByTestId('workflow-graph');
  await expect(graph.locator('[data-testid^="step-"]')).toHaveCount(4);

  // The email's subject, with its preview for a real contact.
  await graph.getByTestId('step-hello').getByRole('button').click();
  const form = page.getByTestId('step-form');
  await expect(form.getByRole('heading', { name: 'Hello email' })).toBeVisible();
  await form.getByTestId('email-subject').fill('');
  await expect(form.getByTestId('email-subject')).toHaveAttribute('aria-invalid', 'true');
  await expect(form.getByTestId('field-problems').filter({ hasText: 'required' })).toHaveCount(1);
  await expect(page.getByRole('button', { name: 'Review & publish' })).toBeDisabled();
  await form.getByTestId('email-subject').fill('Welcome, {{contact.firstName}}!');
  await form.getByLabel('Find a contact by email').fill('ada@');
  await expect(form.getByLabel('Preview for').getByRole('option', { name: 'ada@example.com' })).toBeAttached();
  await form.getByLabel('Preview for').selectOption({ label: 'ada@example.com' });
  await expect(form.getByTestId('preview-subject')).toHaveText('Welcome, Ada!');
  await expect(form.getByTestId('email-preview')).toContainText('To ada@example.com');
  await form.getByRole('button', { name: 'Send test to me' }).click();
  await expect(form.getByTestId('email-preview')).toContainText(`Sent to ${DEMO.MARKETER}`);

  // Remove the delay: the email now leads nowhere, which is allowed; connect it to the follow-up by dragging.
  await graph.getByTestId('step-pause').getByRole('button').click();
  await expect(form.getByRole('heading', { name: 'Give it a day' })).toBeVisible();
  await form.getByRole('button', { name: 'Remove step' }).click();
  await expect(graph.locator('[data-testid^="step-"]')).toHaveCount(3);
  // Unreachable now: the problem is named, and publish waits for it.
  await expect(page.getByTestId('editor-problem').filter({ hasText: 'cannot be reached' })).toHaveCount(1);
  await expect(page.getByRole('button', { name: 'Review & publish' })).toBeDisabled();
  await drag(page, graph.getByTestId('handle-hello-next'), graph.getByTestId('step-followup'));
  await expect(page.getByTestId('problem-count')).toContainText('none');
  await graph.getByTestId('step-hello').getByRole('button').click();
  await expect(form.getByLabel('next step')).toHaveValue('followup');

  // Saved as a draft by itself; a reload starts from it.
  await expect(page.getByTestId('draft-saved')).toContainText(`by ${DEMO.MARKETER}`, { timeout: 15_000 });
  await page.reload();
  await expect(page.getByTestId('edit-base')).toContainText('Draft based on version 1');
  await expect(graph.locator('[data-testid^="step-"]')).toHaveCount(3);
  await graph.getByTestId('step-hello').getByRole('button').click();
  await expect(form.getByTestId('email-subject')).toHaveValue('Welcome, {{contact.firstName}}!');
  await expect(form.getByTestId('preview-subject')).toHaveText(/^Welcome, .*!$/);
  await screenshots(page, 'workflow-edit');

  // Review: the diff, with the two executions waiting at the removed step.
  await page.getByRole('button', { name: 'Review & publish' }).click();
  const dialog = page.getByTestId('publish-dialog');
  await expect(dialog.getByRole('heading', { name: 'Publish version 2' })).toBeVisible();
  await expect(dialog.getByTestId('diff-summary')).toHaveText('0 added1 removed1 changed2 unchanged');
  await expect(dialog.getByTestId('diff-removed-pause')).toContainText('2 executions here now');
  await expect(dialog.getByTestId('diff-removed-pause').getByTestId('active-link')).toHaveText('2 on v1 →');
  await expect(dialog.getByTestId('diff-changed-hello')).toContainText('subject');
  await expect(dialog.getByTestId('diff-changed-hello')).toContainText('next step');
  await expect(dialog.getByTestId('active-note')).toContainText('2 at removed steps, 0 at changed steps');
  await screenshots(page, 'workflow-publish-dialog', false);
  await dialog.getByRole('button', { name: 'Publish version 2' }).click();

  // The new version's page, with the way to the executions left at the removed step.
  await expect(page).toHaveURL(`/workflows/${workflowId}?version=2`);
  await expect(page.getByTestId('version-shown')).toContainText('Version 2 · latest');
  const notice = page.getByTestId('published-notice');
  await expect(notice).toContainText('Version 2 published.');
  await expect(notice).toContainText('2 executions of version 1 stand at removed or changed steps');
  const v1 = await trpcQuery<Detail>(page.request, 'workflows.get', { id: workflowId, version: 1 });
  const pauseId = v1.steps.find((s) => s.key === 'pause')!.id;
  await expect(notice.getByTestId('diff-removed-pause').getByRole('link', { name: '2 on v1 →' })).toHaveAttribute(
    'href',
    `/executions?workflowId=${workflowId}&stepId=${pauseId}`,
  );
  // Moving them is an operator's repair: a marketer is offered the list, not the move.
  await expect(notice.getByTestId('move-link')).toHaveCount(0);
  const v2 = await trpcQuery<Detail>(page.request, 'workflows.get', { id: workflowId });
  expect(v2.version.number).toBe(2);
  expect(v2.draft).toBeNull();
  expect(v2.steps.map((s) => s.key)).toEqual(['start', 'hello', 'followup']);
  expect(v2.steps.find((s) => s.key === 'hello')!.config.subject).toBe('Welcome, {{contact.firstName}}!');
  await expect(page.getByTestId('workflow-graph').locator('[data-testid^="step-"]')).toHaveCount(3);

  // The history: both versions; version 1 still holds the delay, read-only, with its two executions.
  const history = page.getByTestId('version-history');
  await expect(history.getByTestId('version-2')).toContainText('latest');
  await expect(history.getByTestId('version-2')).toContainText('3 steps');
  await history.getByTestId('version-1').click();
  await expect(page).toHaveURL(`/workflows/${workflowId}?version=1`);
  await expect(page.getByTestId('version-shown')).toContainText('Version 1 of 2 · read-only, not the latest');
  await expect(page.getByTestId('workflow-graph').getByTestId('step-pause').locator('[data-count="waiting"]')).toHaveText('2 waiting');
  await page.goto(`/executions?workflowId=${workflowId}&stepId=${pauseId}`);
  await expect(page.getByRole('table', { name: 'Executions' }).getByTestId('execution-row')).toHaveCount(2);
  expect(errors).toEqual([]);
});

test('two tabs based on the same version: the first publishes, the second is refused with who published what, and loads it keeping its edits', async ({ browser }) => {
  // A workflow of its own, at version 2 (the first test's result, published through the API).
  const marketer = await signedIn(browser, DEMO.MARKETER, '/workflows');
  const { id: workflowId } = await trpcMutation<{ id: string }>(marketer.request, 'workflows.create', { ...DEFINITION, name: `${NAME} tabs` });
  const [start, hello, , followup] = DEFINITION.steps as [Step, Step, Step, Step];
  await trpcMutation(marketer.request, 'workflows.publish', {
    workflowId,
    basedOnVersion: 1,
    definition: {
      steps: [start, { ...hello, config: { ...hello.config, subject: 'Welcome, {{contact.firstName}}!' } }, followup],
      transitions: [
        { from: 'start', to: 'hello', branch: null },
        { from: 'hello', to: 'followup', branch: null },
      ],
    },
  });
  await marketer.context().close();
  const first = await signedIn(browser, DEMO.MARKETER, `/workflows/${workflowId}/edit`);
  const second = await first.context().newPage();
  await second.goto(`/workflows/${workflowId}/edit`);
  for (const tab of [first, second]) await expect(tab.getByTestId('edit-base')).toContainText('based on version 2 (the latest)');

  // Each tab makes its own change to version 2.
  await first.getByTestId('workflow-graph').getByTestId('step-followup').getByRole('button').click();
  await first.getByTestId('step-form').getByTestId('step-name').fill('Follow-up (first tab)');
  await second.getByTestId('workflow-graph').getByTestId('step-hello').getByRole('button').click();
  await second.getByTestId('step-form').getByTestId('email-subject').fill('Second tab subject');

  await first.getByRole('button', { name: 'Review & publish' }).click();
  await expect(first.getByTestId('publish-dialog').getByTestId('diff-changed-followup')).toContainText('name');
  await first.getByTestId('publish-dialog').getByRole('button', { name: 'Publish version 3' }).click();
  await expect(first).toHaveURL(`/workflows/${workflowId}?version=3`);

  // The second tab still says version 2; its publish is refused, never overwrites version 3.
  await second.getByRole('button', { name: 'Review & publish' }).click();
  const dialog = second.getByTestId('publish-dialog');
  await expect(dialog).toContainText('Version 3 has been published since you started from version 2');
  await dialog.getByRole('button', { name: 'Publish version 3' }).click();
  const conflict = dialog.getByTestId('version-conflict');
  await expect(conflict).toContainText(`Version 3 was published by ${DEMO.MARKETER}`);
  await expect(conflict).toContainText('after you started from version 2. Nothing was published');
  await expect(conflict.getByTestId('diff-changed-followup')).toContainText('name');
  await screenshots(second, 'workflow-publish-conflict', false);
  const v3 = await trpcQuery<Detail>(second.request, 'workflows.get', { id: workflowId });
  expect(v3.latestVersion).toBe(3);
  expect(v3.steps.find((s) => s.key === 'followup')!.name).toBe('Follow-up (first tab)');
  expect(v3.steps.find((s) => s.key === 'hello')!.config.subject).toBe('Welcome, {{contact.firstName}}!');

  // Load version 3: the editor holds it; the second tab's edit is kept beside it, and can be put back on top.
  await dialog.getByRole('button', { name: 'Load version 3' }).click();
  await expect(dialog).toBeHidden();
  await expect(second.getByTestId('edit-base')).toContainText('based on version 3 (the latest)');
  const kept = second.getByTestId('kept-edits');
  await expect(kept).toContainText('Version 3 is loaded in the editor');
  await kept.getByText('Show them').click();
  await expect(kept.getByLabel('Your earlier edits (JSON)')).toHaveValue(/Second tab subject/);
  await second.getByTestId('workflow-graph').getByTestId('step-followup').getByRole('button').click();
  await expect(second.getByTestId('step-form').getByTestId('step-name')).toHaveValue('Follow-up (first tab)');
  await kept.getByRole('button', { name: 'Put my edits back (on version 3)' }).click();
  await second.getByTestId('workflow-graph').getByTestId('step-hello').getByRole('button').click();
  await expect(second.getByTestId('step-form').getByTestId('email-subject')).toHaveValue('Second tab subject');
  // Put back on version 3, the review now shows what it would change there: its subject, and the first tab's rename undone.
  await second.getByRole('button', { name: 'Review & publish' }).click();
  await expect(second.getByTestId('publish-dialog').getByRole('heading', { name: 'Publish version 4' })).toBeVisible();
  await expect(second.getByTestId('publish-dialog').getByTestId('diff-changed-hello')).toContainText('subject');
  await expect(second.getByTestId('publish-dialog').getByTestId('diff-changed-followup')).toContainText('name');
  await second.getByTestId('publish-dialog').getByRole('button', { name: 'Cancel' }).click();
  await first.context().close();
});
