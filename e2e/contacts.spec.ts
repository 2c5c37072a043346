import path from 'node:path';
import { expect, test, type Page } from '@playwright/test';
import { DEMO, signedIn, watchErrors } from './sign-in';
import { trpcMutation, trpcQuery } from './staging';

// The marketer console's contacts: the contacts table searched by email prefix
// and by a data field with both in the URL; a contact's page with its journey across
// workflows on one time axis; enrolling from it (and the typed reason when the engine
// refuses); editing the data as JSON (a bad document shows its error and saves nothing);
// and a viewer, who sees no write controls and whom the server refuses anyway.

const shot = (name: string) => path.join(import.meta.dirname, 'screenshots', `${name}.png`);

test.describe.configure({ mode: 'serial' });

interface Workflow {
  id: string;
  name: string;
}
interface Contact {
  id: string;
  email: string;
  data: Record<string, unknown>;
}

const unique = (what: string) => `${what}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}@e2e.test`;

let marketer: Page;
let workflows: Workflow[];
const workflow = (name: string) => workflows.find((w) => w.name === name)!;

test.beforeAll(async ({ browser }) => {
  marketer = await signedIn(browser, DEMO.MARKETER, '/contacts');
  workflows = await trpcQuery<Workflow[]>(marketer.request, 'workflows.list', undefined);
});
test.afterAll(async () => marketer?.context().close());

test('a marketer enrolls one contact from its page and sees the new execution in its journey', async () => {
  const errors = watchErrors(marketer);
  const contact = await trpcMutation<Contact>(marketer.request, 'contacts.upsert', { email: unique('enroll-one'), data: { firstName: 'Enid', plan: 'free' } });
  await marketer.goto(`/contacts/${contact.id}`);
  await expect(marketer.getByRole('heading', { level: 1, name: contact.email })).toBeVisible();
  await expect(marketer.getByText('No journey yet')).toBeVisible();

  const form = marketer.getByRole('form', { name: 'Enroll into a workflow' });
  await form.getByLabel('Workflow').selectOption(workflow('Welcome series').id);
  await form.getByLabel('Context (JSON object, optional)').fill('{"campaign": "e2e"');
  await expect(form.getByRole('alert')).toContainText('not valid JSON');
  await expect(form.getByRole('button', { name: 'Enroll' })).toBeDisabled();
  await form.getByLabel('Context (JSON object, optional)').fill('{"campaign": "e2e"}');
  await form.getByRole('button', { name: 'Enroll' }).click();

  const result = form.getByTestId('enroll-result');
  await expect(result).toContainText('Enrolled into “Welcome series”');
  const href = await result.getByRole('link').getAttribute('href');
  expect(href).toMatch(/^\/executions\/[0-9a-f-]{36}$/);
  // The journey shows it at once: a lane on the timeline and a row in the table, both linked.
  const rows = marketer.getByTestId('journey-row');
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toContainText('Welcome series');
  await expect(rows.first().getByRole('link')).toHaveAttribute('href', href!);
  await expect(marketer.getByTestId('journey-lane')).toHaveCount(1);
  await expect(marketer.getByTestId('journey-lane').getByRole('link').first()).toHaveAttribute('href', href!);
  const executionId = href!.split('/').pop()!;
  const execution = await trpcQuery<{ context: Record<string, unknown> }>(marketer.request, 'executions.get', { id: executionId });
  expect(execution.context).toMatchObject({ campaign: 'e2e' });
  expect(errors).toEqual([]);
});

test('a contact enrolled in two workflows shows both executions on its journey', async () => {
  const email = unique('two-workflows');
  const first = await trpcMutation<{ executionId: string }>(marketer.request, 'enrollments.enroll', { workflowId: workflow('Welcome series').id, email });
  const second = await trpcMutation<{ executionId: string }>(marketer.request, 'enrollments.enroll', { workflowId: workflow('Win-back campaign').id, email });
  const [contact] = (await trpcQuery<{ items: Contact[] }>(marketer.request, 'contacts.list', { search: email })).items;
  await marketer.goto(`/contacts/${contact!.id}`);
  const rows = marketer.getByTestId('journey-row');
  await expect(rows).toHaveCount(2);
  await expect(marketer.getByTestId('journey-lane')).toHaveCount(2);
  const hrefs = await rows.getByTestId('journey-execution-link').evaluateAll((as) => as.map((a) => a.getAttribute('href')));
  expect(hrefs.sort()).toEqual([`/executions/${first.executionId}`, `/executions/${second.executionId}`].sort());
  await expect(marketer.getByRole('region', { name: 'Journey' })).toContainText('2 executions across 2 workflows');
  // Each lane links to its execution's page.
  await marketer.getByTestId('journey-lane').filter({ hasText: 'Win-back campaign' }).getByRole('link').first().click();
  await expect(marketer).toHaveURL(new RegExp(`/executions/${second.executionId}$`));
  await expect(marketer.getByRole('heading', { level: 1 })).toContainText('Win-back campaign');
});

test('a refused enrollment shows its reason in words, with the execution that blocks it', async () => {
  // Already active: enrolled into the Welcome series, then again.
  const email = unique('refused');
  const active = await trpcMutation<{ executionId: string }>(marketer.request, 'enrollments.enroll', { workflowId: workflow('Welcome series').id, email });
  const [contact] = (await trpcQuery<{ items: Contact[] }>(marketer.request, 'contacts.list', { search: email })).items;
  await marketer.goto(`/contacts/${contact!.id}`);
  const form = marketer.getByRole('form', { name: 'Enroll into a workflow' });
  await form.getByLabel('Workflow').selectOption(workflow('Welcome series').id);
  await form.getByRole('button', { name: 'Enroll' }).click();
  const refusal = form.getByTestId('enroll-refusal');
  await expect(refusal).toHaveAttribute('data-reason', 'ACTIVE_EXECUTION');
  await expect(refusal).toContainText('Already active');
  await expect(refusal.getByRole('link')).toHaveAttribute('href', `/executions/${active.executionId}`);
  await expect(marketer.getByTestId('journey-row')).toHaveCount(1);

  // Re-entry blocked: the seed's Legacy newsletter import failed for its contact, and allows no re-entry.
  const legacy = await trpcQuery<{ items: { id: string; contactId: string }[] }>(marketer.request, 'executions.list', { workflowId: workflow('Legacy newsletter import').id });
  const failed = legacy.items[0]!;
  await marketer.goto(`/contacts/${failed.contactId}`);
  await form.getByLabel('Workflow').selectOption(workflow('Legacy newsletter import').id);
  await form.getByRole('button', { name: 'Enroll' }).click();
  await expect(refusal).toHaveAttribute('data-reason', 'REENTRY_BLOCKED');
  await expect(refusal).toContainText('Re-entry blocked');
  await expect(refusal.getByRole('link')).toHaveAttribute('href', `/executions/${failed.id}`);
});

test('editing the data: bad JSON shows the error at the field and saves nothing; valid JSON saves', async () => {
  const contact = await trpcMutation<Contact>(marketer.request, 'contacts.upsert', { email: unique('edit-data'), data: { firstName: 'Edda', plan: 'free' } });
  await marketer.goto(`/contacts/${contact.id}`);
  const form = marketer.getByRole('form', { name: 'Contact data' });
  const field = form.getByLabel(/^Data \(JSON object/);
  await expect(field).toHaveValue(/"firstName": "Edda"/);

  await field.fill('{\n  "firstName": "Edda",\n  "tier": "gold",\n}');
  await expect(form.getByRole('alert')).toContainText(/Line 4, column 1: not valid JSON/);
  await expect(field).toHaveAttribute('aria-invalid', 'true');
  await expect(form.getByRole('button', { name: 'Save data' })).toBeDisabled();
  await field.fill('["not", "an", "object"]');
  await expect(form.getByRole('alert')).toContainText('must be a JSON object');
  await expect(form.getByRole('button', { name: 'Save data' })).toBeDisabled();
  // A key the server refuses (JavaScript reserves it) is refused at its path before sending.
  await field.fill('{"profile": {"__proto__": {"admin": true}}}');
  await expect(form.getByRole('alert')).toContainText('data.profile.__proto__: the key "__proto__" is not allowed');
  await expect(form.getByRole('button', { name: 'Save data' })).toBeDisabled();
  // What only the server knows (a string it cannot store) comes back at its path.
  await field.fill('{"note": "nul \\u0000 inside"}');
  await form.getByRole('button', { name: 'Save data' }).click();
  await expect(form.getByRole('alert')).toContainText('data.note: must be valid Unicode text');
  expect((await trpcQuery<Contact>(marketer.request, 'contacts.get', { id: contact.id })).data).toEqual({ firstName: 'Edda', plan: 'free' });

  await field.fill('{\n  "firstName": "Edda",\n  "tier": "gold",\n  "seats": 5\n}');
  await expect(form.getByRole('alert')).toHaveCount(0);
  await form.getByRole('button', { name: 'Save data' }).click();
  await expect(form.getByRole('status')).toContainText('Saved at');
  expect((await trpcQuery<Contact>(marketer.request, 'contacts.get', { id: contact.id })).data).toEqual({ firstName: 'Edda', tier: 'gold', seats: 5 });
  await expect(field).toHaveValue(/"seats": 5/);

  // Unsubscribe and subscribe again from the header.
  await marketer.getByRole('button', { name: 'Unsubscribe' }).click();
  await expect(marketer.getByRole('button', { name: 'Subscribe', exact: true })).toBeVisible();
  expect((await trpcQuery<{ subscribed: boolean }>(marketer.request, 'contacts.get', { id: contact.id })).subscribed).toBe(false);
  await marketer.getByRole('button', { name: 'Subscribe', exact: true }).click();
  await expect(marketer.getByRole('button', { name: 'Unsubscribe' })).toBeVisible();
});

test('search by email prefix and by a data field lives in the URL and works in a fresh browser', async ({ browser }) => {
  const page = await signedIn(browser, DEMO.MARKETER, '/contacts');
  const errors = watchErrors(page);
  await expect(page.getByRole('heading', { level: 1, name: 'Contacts' })).toBeVisible();
  await expect(page.getByTestId('contact-row').first()).toBeVisible();
  for (const [width, height] of [
    [1440, 900],
    [1280, 800],
  ] as const) {
    await page.setViewportSize({ width, height });
    await page.screenshot({ path: shot(`contacts-${width}`) });
  }
  await page.setViewportSize({ width: 1440, height: 900 });

  await page.getByLabel('Email starts with').fill('a');
  await page.getByLabel('Email starts with').press('Enter');
  await expect(page).toHaveURL(/[?&]search=a(&|$)/);
  const emails = () => page.getByTestId('contact-row').getByRole('link').filter({ hasText: '@' }).allTextContents();
  // Until the filtered page lands the unfiltered one is shown, which holds these two as well.
  await expect
    .poll(async () => {
      const shown = await emails();
      return shown.includes('ada@example.com') && shown.includes('alan@example.com') && shown.every((e) => e.toLowerCase().startsWith('a'));
    })
    .toBe(true);

  await page.getByLabel('Data field', { exact: true }).fill('plan');
  await page.getByLabel('Value', { exact: true }).fill('pro');
  await page.getByRole('button', { name: 'Search', exact: true }).click();
  await expect(page).toHaveURL(/search=a.*dataKey=plan.*dataValue=pro/);
  await expect.poll(emails).toEqual(['ada@example.com']);
  const url = page.url().replace(/^https?:\/\/[^/]+/, '');

  // A colleague opens the link in a browser of their own.
  const colleague = await signedIn(browser, DEMO.VIEWER, url);
  await expect(colleague.getByLabel('Email starts with')).toHaveValue('a');
  await expect(colleague.getByLabel('Data field', { exact: true })).toHaveValue('plan');
  await expect(colleague.getByLabel('Value', { exact: true })).toHaveValue('pro');
  await expect
    .poll(() => colleague.getByTestId('contact-row').getByRole('link').filter({ hasText: '@' }).allTextContents())
    .toEqual(['ada@example.com']);
  // Data alone: every pro contact of the seed, and none on another plan.
  await colleague.goto('/contacts?dataKey=plan&dataValue=pro');
  await expect
    .poll(async () => (await colleague.getByTestId('contact-row').getByRole('link').filter({ hasText: '@' }).allTextContents()).sort())
    .toEqual(['ada@example.com', 'edsger@example.com', 'frances@example.com', 'margaret@example.com']);
  // Half a data search in a link says what is wrong instead of showing something else.
  await colleague.goto('/contacts?dataKey=plan');
  await expect(colleague.getByRole('alert').filter({ hasText: 'not valid' })).toContainText('dataValue: give dataKey and dataValue together');
  await colleague.context().close();
  expect(errors).toEqual([]);
  await page.context().close();
});

test('a viewer sees no write controls, and the server refuses the writes anyway', async ({ browser }) => {
  const viewer = await signedIn(browser, DEMO.VIEWER, '/contacts');
  const errors = watchErrors(viewer);
  await expect(viewer.getByTestId('contact-row').first()).toBeVisible();
  await expect(viewer.getByRole('button', { name: 'Add contact' })).toHaveCount(0);
  await expect(viewer.getByRole('link', { name: 'Import CSV' })).toHaveCount(0);

  const [barbara] = (await trpcQuery<{ items: Contact[] }>(viewer.request, 'contacts.list', { search: 'barbara@' })).items;
  await viewer.goto(`/contacts/${barbara!.id}`);
  await expect(viewer.getByRole('heading', { level: 1, name: 'barbara@example.com' })).toBeVisible();
  await expect(viewer.getByTestId('journey-row').first()).toBeVisible();
  await expect(viewer.getByRole('button', { name: /subscribe/i })).toHaveCount(0);
  await expect(viewer.getByRole('form', { name: 'Contact data' })).toHaveCount(0);
  await expect(viewer.getByRole('form', { name: 'Enroll into a workflow' })).toHaveCount(0);
  await expect(viewer.getByRole('button', { name: /save|enroll/i })).toHaveCount(0);
  await expect(viewer.getByRole('region', { name: 'Data' })).toContainText('"firstName": "Barbara"');

  for (const [procedure, input] of [
    ['contacts.update', { id: barbara!.id, data: { hacked: true } }],
    ['contacts.setSubscribed', { id: barbara!.id, subscribed: false }],
    ['contacts.upsert', { email: 'viewer-made@e2e.test' }],
    ['enrollments.enroll', { workflowId: workflow('Win-back campaign').id, contactId: barbara!.id }],
  ] as const) {
    const response = await viewer.request.post(`/api/trpc/${procedure}`, { data: { json: input } });
    expect(response.status(), procedure).toBe(403);
  }
  expect(errors).toEqual([]);
  await viewer.context().close();
});

test('screenshots of a contact page with a journey across workflows', async () => {
  // Barbara: welcomed, then her abandoned cart; her events and emails on the same axis.
  const [barbara] = (await trpcQuery<{ items: Contact[] }>(marketer.request, 'contacts.list', { search: 'barbara@' })).items;
  await marketer.goto(`/contacts/${barbara!.id}`);
  await expect(marketer.getByTestId('journey-lane').first()).toBeVisible();
  await expect(marketer.getByTestId('contact-event-row').first()).toBeVisible();
  for (const [width, height] of [
    [1440, 1100],
    [1280, 1000],
  ] as const) {
    await marketer.setViewportSize({ width, height });
    await marketer.screenshot({ path: shot(`contact-${width}`), fullPage: true });
  }
});
