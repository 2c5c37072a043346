import path from 'node:path';
import { expect, test, type Page } from '@playwright/test';
import { DEMO, signedIn } from './sign-in';
import { trpcMutation, trpcQuery } from './staging';

// The workflows pages: the list with its enabled switch, the
// "Welcome series" step graph with labelled branches and live counts at each step, a
// workflow created from JSON (a bad transition shown at its path, then fixed), duplicating
// one, and what a viewer may not do. Screenshots at 1280 and 1440 pixels wide.

const shot = (name: string) => path.join(import.meta.dirname, 'screenshots', `${name}.png`);

test.describe.configure({ mode: 'serial' });

function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.stack ?? error.message));
  page.on('console', (message) => message.type() === 'error' && errors.push(`${message.text()} (${message.location().url})`));
  return errors;
}

async function screenshots(page: Page, name: string) {
  for (const width of [1280, 1440]) {
    await page.setViewportSize({ width, height: 900 });
    // The graph refits to its new width.
    await page.waitForTimeout(400);
    await page.screenshot({ path: shot(`${name}-${width}`), fullPage: true });
  }
}

/** No two step nodes of the drawn graph overlap. */
async function expectNoOverlap(page: Page) {
  const boxes = await page.getByTestId('workflow-graph').locator('[data-testid^="step-"]').evaluateAll((els) =>
    els.map((el) => {
      const r = el.getBoundingClientRect();
      return { id: el.getAttribute('data-testid'), x: r.x, y: r.y, w: r.width, h: r.height };
    }),
  );
  for (const [i, a] of boxes.entries()) {
    for (const b of boxes.slice(i + 1)) {
      const overlap = a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
      expect(overlap, `${a.id} overlaps ${b.id}`).toBe(false);
    }
  }
}

type WorkflowSummary = { id: string; name: string; enabled: boolean };
type WorkflowDetail = { id: string; steps: { id: string; key: string; waiting: number; running: number; stuck: number }[] };

test('the Welcome series graph: nine steps, labelled branches, live counts; the wait step lists the executions waiting there', async ({ browser }) => {
  const page = await signedIn(browser, DEMO.MARKETER, '/workflows');
  const errors = watchErrors(page);
  const welcome = (await trpcQuery<WorkflowSummary[]>(page.request, 'workflows.list', undefined)).find((w) => w.name === 'Welcome series')!;

  await expect(page.getByRole('table', { name: 'Workflows' })).toBeVisible();
  await expect(page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Workflows' })).toHaveAttribute('aria-current', 'page');
  const row = page.getByTestId('workflow-row-Welcome series');
  await expect(row).toContainText('9 steps');
  await screenshots(page, 'workflows');

  await row.getByRole('link', { name: 'Welcome series', exact: true }).click();
  await expect(page).toHaveURL(`/workflows/${welcome.id}`);
  const graph = page.getByTestId('workflow-graph');
  await expect(graph.locator('[data-testid^="step-"]')).toHaveCount(9);
  for (const key of ['signed_up', 'welcome', 'settle_in', 'first_purchase', 'mark_customer', 'thanks', 'is_pro', 'discount', 'done']) {
    await expect(graph.getByTestId(`step-${key}`)).toBeVisible();
  }
  // One label per branch: EVENT/TIMEOUT leaving the wait, yes/no leaving the condition; plain nexts have none.
  await expect.poll(async () => (await graph.getByTestId('branch-label').allInnerTexts()).sort()).toEqual(['EVENT', 'TIMEOUT', 'no', 'yes']);
  await expectNoOverlap(page);

  // Live: a contact enrolled now shows up at the delay step without a reload.
  const settle = graph.getByTestId('step-settle_in');
  const before = (await trpcQuery<WorkflowDetail>(page.request, 'workflows.get', { id: welcome.id })).steps.find((s) => s.key === 'settle_in')!;
  await expect(settle.locator('[data-count="waiting"]')).toHaveText(`${before.waiting.toLocaleString('en-US')} waiting`);
  await trpcMutation(page.request, 'enrollments.enroll', { workflowId: welcome.id, email: 'graph-live@e2e.test' });
  await expect(settle.locator('[data-count="waiting"]')).toHaveText(`${(before.waiting + 1).toLocaleString('en-US')} waiting`, { timeout: 20_000 });

  // Keyboard: a step is a button; Enter opens its panel.
  await graph.getByTestId('step-first_purchase').getByRole('button').focus();
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('step-panel').getByRole('heading', { name: 'Wait for a first purchase' })).toBeVisible();
  await expect(page.getByTestId('step-panel').getByTestId('step-config')).toContainText('"eventName": "purchase"');

  // The wait step's panel: its config, its counts, and the executions waiting there.
  await settle.getByRole('button').click();
  const panel = page.getByTestId('step-panel');
  await expect(panel.getByRole('heading', { name: 'Let them settle in' })).toBeVisible();
  await expect(panel.getByTestId('step-config')).toContainText('"seconds": 3600');
  await expect(page).toHaveURL(/[?&]step=settle_in/);
  await screenshots(page, 'workflow-detail');

  const waiting = before.waiting + 1;
  await panel.getByRole('link', { name: `${waiting.toLocaleString('en-US')} waiting at this step` }).click();
  await expect(page).toHaveURL(new RegExp(`/executions\\?workflowId=${welcome.id}&stepId=${before.id}&status=WAITING`));
  const rows = page.getByRole('table', { name: 'Executions' }).getByTestId('execution-row');
  // Earlier specs (a CSV import) may have left thousands waiting here: the first page of them.
  await expect(rows).toHaveCount(Math.min(waiting, 50));
  for (const text of await rows.allInnerTexts()) expect(text).toContain('WAITING');
  expect(errors).toEqual([]);
});

const BAD = {
  name: 'E2E post-purchase',
  trigger: 'EVENT',
  triggerEvent: 'purchase',
  allowReentry: true,
  steps: [
    { key: 'bought', type: 'TRIGGER', name: 'Bought', config: {} },
    { key: 'review', type: 'WAIT_FOR_EVENT', name: 'Wait for a review', config: { eventName: 'review_left', timeoutSeconds: 604800 } },
    { key: 'thanks', type: 'SEND_EMAIL', name: 'Thanks for the review', config: { subject: 'Thanks!', body: 'We read every one.' } },
    { key: 'ask', type: 'SEND_EMAIL', name: 'Ask for a review', config: { subject: 'How was it?', body: 'Tell us.' } },
  ],
  transitions: [
    { from: 'bought', to: 'review', branch: null },
    { from: 'review', to: 'thanks', branch: 'EVENT' },
    { from: 'review', to: 'foo', branch: 'TIMEOUT' },
  ],
};

test('a workflow created from JSON: a bad transition is shown at its path; fixed, it is created and drawn', async ({ browser }) => {
  const page = await signedIn(browser, DEMO.MARKETER, '/workflows');
  const errors = watchErrors(page);
  await page.getByRole('link', { name: 'New workflow' }).click();
  await expect(page).toHaveURL('/workflows/new');
  const editor = page.getByLabel('Workflow definition (JSON)');
  const create = page.getByRole('button', { name: 'Create workflow' });
  await expect(page.getByTestId('validation-state')).toHaveText('valid'); // the template

  // Not JSON at all: where it breaks.
  await editor.fill('{\n  "name": "x",\n  "steps": [\n}');
  await expect(page.getByTestId('definition-issue').first()).toContainText('(JSON)');
  await expect(page.getByTestId('definition-issue').first()).toContainText(/line 4, column 1/);
  await expect(create).toBeDisabled();

  await editor.fill(JSON.stringify(BAD, null, 2));
  const issue = page.getByTestId('definition-issue').filter({ hasText: 'transitions[2].to' });
  await expect(issue).toContainText('unknown step "foo"');
  await expect(page.getByTestId('validation-state')).toHaveText('1 problem');
  await expect(create).toBeDisabled();
  // The preview draws what it can meanwhile.
  await expect(page.getByTestId('workflow-graph').locator('[data-testid^="step-"]')).toHaveCount(4);
  await screenshots(page, 'workflow-new');
  expect(await trpcQuery<WorkflowSummary[]>(page.request, 'workflows.list', undefined)).not.toContainEqual(expect.objectContaining({ name: BAD.name }));

  const fixed = { ...BAD, transitions: [...BAD.transitions.slice(0, 2), { from: 'review', to: 'ask', branch: 'TIMEOUT' }] };
  await editor.fill(JSON.stringify(fixed, null, 2));
  await expect(page.getByTestId('validation-state')).toHaveText('valid');
  await create.click();
  await expect(page).toHaveURL(/\/workflows\/[0-9a-f-]{36}$/);
  await expect(page.getByRole('heading', { level: 1, name: BAD.name })).toBeVisible();
  const graph = page.getByTestId('workflow-graph');
  await expect(graph.locator('[data-testid^="step-"]')).toHaveCount(4);
  expect((await graph.getByTestId('branch-label').allInnerTexts()).sort()).toEqual(['EVENT', 'TIMEOUT']);
  await expectNoOverlap(page);

  // The same name again: the server refuses it at `name`, and nothing is stored.
  // As on the first visit: the editor is live (its template validated) before it is
  // typed into, and the definition is checked before Create is pressed. A fill before
  // hydration was overwritten by the template, and Create stayed disabled.
  await page.goto('/workflows/new');
  await expect(page.getByTestId('validation-state')).toHaveText('valid');
  await page.getByLabel('Workflow definition (JSON)').fill(JSON.stringify(fixed, null, 2));
  await expect(page.getByTestId('validation-state')).toHaveText('valid');
  await page.getByRole('button', { name: 'Create workflow' }).click();
  await expect(page.getByTestId('definition-issue').filter({ hasText: 'already exists' })).toContainText('name');
  const all = await trpcQuery<WorkflowSummary[]>(page.request, 'workflows.list', undefined);
  expect(all.filter((w) => w.name === BAD.name)).toHaveLength(1);
  expect(errors.filter((e) => !e.includes('409'))).toEqual([]);
});

test('duplicate: the editor starts from the workflow under a new name, and the copy is the same graph', async ({ browser }) => {
  const page = await signedIn(browser, DEMO.MARKETER, '/workflows');
  await page.getByRole('link', { name: 'Duplicate Abandoned cart recovery' }).click();
  await expect(page).toHaveURL(/\/workflows\/new\?from=/);
  await expect(page.getByRole('heading', { name: 'Duplicate “Abandoned cart recovery”' })).toBeVisible();
  const editor = page.getByLabel('Workflow definition (JSON)');
  const draft = JSON.parse(await editor.inputValue()) as { name: string; steps: unknown[]; transitions: unknown[] };
  expect(draft.name).toBe('Abandoned cart recovery (copy)');
  expect(draft.steps).toHaveLength(4);
  await expect(page.getByTestId('validation-state')).toHaveText('valid');
  await expect(page.getByTestId('workflow-graph').locator('[data-testid^="step-"]')).toHaveCount(4);
  await page.getByRole('button', { name: 'Create workflow' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'Abandoned cart recovery (copy)' })).toBeVisible();
  await expect(page.getByTestId('workflow-graph').locator('[data-testid^="step-"]')).toHaveCount(4);
  expect((await page.getByTestId('workflow-graph').getByTestId('branch-label').allInnerTexts()).sort()).toEqual(['EVENT', 'TIMEOUT']);

  // From the detail page too.
  await page.getByRole('link', { name: 'Duplicate', exact: true }).click();
  await expect(page.getByLabel('Workflow definition (JSON)')).toHaveValue(/"name": "Abandoned cart recovery \(copy\) \(copy\)"/);
});

test('the enabled switch works (list and detail); a viewer sees no switch and no write controls', async ({ browser }) => {
  const page = await signedIn(browser, DEMO.MARKETER, '/workflows');
  const row = page.getByTestId('workflow-row-Order confirmation');
  const toggle = row.getByRole('switch', { name: 'Enrollment into Order confirmation' });
  await expect(toggle).toHaveAttribute('aria-checked', 'true');
  await toggle.click();
  await expect(toggle).toHaveAttribute('aria-checked', 'false');
  await expect(row).toContainText('Disabled');
  await expect
    .poll(async () => (await trpcQuery<WorkflowSummary[]>(page.request, 'workflows.list', undefined)).find((w) => w.name === 'Order confirmation')!.enabled)
    .toBe(false);
  await page.reload();
  await expect(page.getByTestId('workflow-row-Order confirmation').getByRole('switch')).toHaveAttribute('aria-checked', 'false');

  // Back on from the detail page.
  await page.getByTestId('workflow-row-Order confirmation').getByRole('link', { name: 'Order confirmation', exact: true }).click();
  const detailToggle = page.getByRole('switch', { name: 'Enrollment into Order confirmation' });
  await expect(detailToggle).toHaveAttribute('aria-checked', 'false');
  await detailToggle.click();
  await expect(detailToggle).toHaveAttribute('aria-checked', 'true');
  await expect
    .poll(async () => (await trpcQuery<WorkflowSummary[]>(page.request, 'workflows.list', undefined)).find((w) => w.name === 'Order confirmation')!.enabled)
    .toBe(true);

  // A refused change flips back and says so (optimistic UI with rollback).
  await page.route('**/api/trpc/workflows.setEnabled**', (route) => route.abort('connectionrefused'));
  await detailToggle.click();
  await expect(page.getByRole('alert').filter({ hasText: 'Not changed' })).toBeVisible();
  await expect(detailToggle).toHaveAttribute('aria-checked', 'true');
  await page.unroute('**/api/trpc/workflows.setEnabled**');
  expect((await trpcQuery<WorkflowSummary[]>(page.request, 'workflows.list', undefined)).find((w) => w.name === 'Order confirmation')!.enabled).toBe(true);

  const viewer = await signedIn(browser, DEMO.VIEWER, '/workflows');
  await expect(viewer.getByRole('table', { name: 'Workflows' })).toBeVisible();
  await expect(viewer.getByRole('switch')).toHaveCount(0);
  await expect(viewer.getByTestId('workflow-row-Order confirmation').getByTestId('enabled-state')).toHaveText('Enabled');
  await expect(viewer.getByRole('link', { name: 'New workflow' })).toHaveCount(0);
  await expect(viewer.getByRole('link', { name: /^Duplicate/ })).toHaveCount(0);
  await viewer.getByTestId('workflow-row-Welcome series').getByRole('link', { name: 'Welcome series', exact: true }).click();
  await expect(viewer.getByTestId('workflow-graph').locator('[data-testid^="step-"]')).toHaveCount(9);
  await expect(viewer.getByRole('switch')).toHaveCount(0);
  await expect(viewer.getByRole('link', { name: 'Enroll contacts from CSV' })).toHaveCount(0);
  await expect(viewer.getByRole('link', { name: 'Duplicate', exact: true })).toHaveCount(0);
  await viewer.goto('/workflows/new');
  await expect(viewer.getByRole('alert').filter({ hasText: 'Creating workflows' })).toContainText('Creating workflows is for marketers and up; you are viewer');
  await expect(viewer.getByLabel('Workflow definition (JSON)')).toHaveCount(0);
  // The server refuses too.
  const refused = await viewer.request.post('/api/trpc/workflows.setEnabled', { data: { json: { id: (await trpcQuery<WorkflowSummary[]>(viewer.request, 'workflows.list', undefined))[0]!.id, enabled: false } } });
  expect(refused.status()).toBe(403);
});

test('a switch clicked while the page is still loading waits for the page to come alive, and the click counts', async ({ browser }) => {
  const page = await signedIn(browser, DEMO.MARKETER, '/workflows');
  const id = (await trpcQuery<WorkflowSummary[]>(page.request, 'workflows.list', undefined)).find((w) => w.name === 'Order confirmation')!.id;
  // A slow network: the page's scripts arrive 3 s after its server-rendered HTML, which
  // already shows the switch.
  await page.route('**/_next/static/chunks/**', async (route) => {
    await new Promise((resolve) => setTimeout(resolve, 3000));
    await route.continue();
  });
  await page.goto(`/workflows/${id}`, { waitUntil: 'commit' });
  const toggle = page.getByRole('switch', { name: 'Enrollment into Order confirmation' });
  await expect(toggle).toHaveAttribute('aria-checked', 'true');
  // Not yet operable: a click now would be lost, so the switch says it cannot be used yet.
  await expect(toggle).toBeDisabled();
  await toggle.click({ timeout: 30_000 });
  await expect(toggle).toHaveAttribute('aria-checked', 'false');
  await expect
    .poll(async () => (await trpcQuery<WorkflowSummary[]>(page.request, 'workflows.list', undefined)).find((w) => w.id === id)!.enabled)
    .toBe(false);
  await page.unroute('**/_next/static/chunks/**');
  await toggle.click();
  await expect(toggle).toHaveAttribute('aria-checked', 'true');
  await expect
    .poll(async () => (await trpcQuery<WorkflowSummary[]>(page.request, 'workflows.list', undefined)).find((w) => w.id === id)!.enabled)
    .toBe(true);
  await page.context().close();
});

test("stuck at a step: the Win-back campaign's poisoned wait counts as stuck, and its link lists it", async ({ browser }) => {
  const page = await signedIn(browser, DEMO.OPERATOR, '/workflows');
  await page.getByTestId('workflow-row-Win-back campaign').getByRole('link', { name: 'Win-back campaign', exact: true }).click();
  const step = page.getByTestId('workflow-graph').getByTestId('step-purchase');
  // The seed's expired lease counts once STUCK_GRACE_SECONDS (5 s for the e2e server) have passed.
  await expect(step.locator('[data-count="stuck"]')).toHaveText('1 stuck', { timeout: 20_000 });
  await step.getByRole('button').click();
  const panel = page.getByTestId('step-panel');
  await expect(panel.getByRole('link', { name: 'LEASE_EXPIRED 1' })).toBeVisible();
  await panel.getByRole('link', { name: '1 stuck at this step' }).click();
  await expect(page).toHaveURL(/\/executions\?workflowId=[0-9a-f-]+&stepId=[0-9a-f-]+&stuck=LEASE_EXPIRED$/);
  const rows = page.getByRole('table', { name: 'Executions' }).getByTestId('execution-row');
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toContainText('lapsed@example.com');
});
