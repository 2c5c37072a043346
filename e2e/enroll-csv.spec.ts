import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, test, type Page } from '@playwright/test';
import Papa from 'papaparse';
import { asDistinctClient, DEMO, signIn } from './sign-in';
import { sql } from './staging';

// CSV enrollment from the marketer's side: a file read and checked in the
// browser, sent a chunk at a time with a progress bar that moves, stoppable between chunks,
// and answered row by row in a result that downloads as CSV. Bad files are refused with a
// message and nothing is sent; a viewer gets no upload controls at all.

const shot = (name: string) => path.join(import.meta.dirname, 'screenshots', `${name}.png`);

/** Full-page screenshots at the two widths the console is checked at. */
async function screenshots(page: Page, name: string): Promise<void> {
  for (const width of [1280, 1440]) {
    await page.setViewportSize({ width, height: 900 });
    await page.screenshot({ path: shot(`${name}-${width}`), fullPage: true });
  }
}

const ENROLL_MANY = /\/api\/trpc\/enrollments\.enrollMany/;

async function workflowId(name: string): Promise<string> {
  const [row] = await sql<{ id: string }>(
    `SELECT w.id FROM "Workflow" w JOIN "Project" p ON p.id = w."projectId" WHERE p.name = 'demo' AND w.name = $1`,
    [name],
  );
  expect(row, `demo workflow ${name}`).toBeTruthy();
  return row!.id;
}

/** Executions of the workflow whose contact's email starts with `prefix`. */
async function enrolledWith(workflow: string, prefix: string): Promise<number> {
  const [row] = await sql<{ n: string }>(
    `SELECT count(*) AS n FROM "WorkflowExecution" e JOIN "Contact" c ON c.id = e."contactId"
      WHERE e."workflowId" = $1 AND c.email LIKE $2`,
    [workflow, `${prefix}%`],
  );
  return Number(row!.n);
}

/**
 * Wait until the workers have taken every execution of this import to its first wait: the
 * suite's later specs share this server, and a backlog of thousands of steps would make
 * their own executions queue behind it.
 */
async function drained(workflow: string, prefix: string): Promise<void> {
  await expect
    .poll(
      async () =>
        Number(
          (
            await sql<{ n: string }>(
              `SELECT count(*) AS n FROM "WorkflowExecution" e JOIN "Contact" c ON c.id = e."contactId"
                WHERE e."workflowId" = $1 AND c.email LIKE $2 AND e.status = 'RUNNING'`,
              [workflow, `${prefix}%`],
            )
          )[0]!.n,
        ),
      { timeout: 240_000, intervals: [1_000, 2_000, 5_000] },
    )
    .toBe(0);
}

async function contactsWith(prefix: string): Promise<number> {
  const [row] = await sql<{ n: string }>(`SELECT count(*) AS n FROM "Contact" WHERE email LIKE $1`, [`${prefix}%`]);
  return Number(row!.n);
}

/** A prefix no contact of an earlier run has, so every row is a new contact. */
function freshPrefix(label: string): string {
  return `csv-${label}-${Date.now().toString(36)}-`;
}

function csvOf(prefix: string, rows: number, bad: Record<number, string> = {}): string {
  const lines = ['email,firstName,plan'];
  for (let i = 1; i <= rows; i++) lines.push(`${bad[i] ?? `${prefix}${i}@example.com`},Person ${i},${i % 3 === 0 ? 'pro' : 'free'}`);
  return `${lines.join('\n')}\n`;
}

async function openAs(page: Page, email: string, url: string): Promise<void> {
  await asDistinctClient(page);
  await page.goto(url);
  await signIn(page, email);
  await expect(page.getByRole('heading', { level: 1, name: 'Enroll from CSV' })).toBeVisible();
}

async function upload(page: Page, name: string, content: string | Buffer): Promise<void> {
  await page.getByLabel('CSV file', { exact: true }).setInputFiles({ name, mimeType: 'text/csv', buffer: typeof content === 'string' ? Buffer.from(content) : content });
}

/** Drop a file on the drop zone, as dragging one from the desktop does. */
async function drop(page: Page, name: string, content: string): Promise<void> {
  const dataTransfer = await page.evaluateHandle(
    ({ name, content }) => {
      const transfer = new DataTransfer();
      transfer.items.add(new File([content], name, { type: 'text/csv' }));
      return transfer;
    },
    { name, content },
  );
  await page.getByTestId('csv-drop-zone').dispatchEvent('drop', { dataTransfer });
}

/** Record every value the progress bar shows, from before the run starts. */
async function recordProgress(page: Page): Promise<void> {
  await page.evaluate(() => {
    const seen: number[] = [];
    (window as unknown as { progressSeen: number[] }).progressSeen = seen;
    const read = () => {
      const bar = document.querySelector('[role="progressbar"][aria-label="Import progress"]');
      const value = bar?.getAttribute('aria-valuenow');
      if (value !== null && value !== undefined && seen[seen.length - 1] !== Number(value)) seen.push(Number(value));
    };
    new MutationObserver(read).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['aria-valuenow'] });
  });
}

async function downloadedResult(page: Page): Promise<Record<string, string>[]> {
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download result (CSV)' }).click()]);
  const parsed = Papa.parse<Record<string, string>>(readFileSync(await download.path(), 'utf8'), { header: true, skipEmptyLines: true });
  expect(parsed.errors).toEqual([]);
  expect(parsed.meta.fields).toEqual(['row', 'email', 'outcome', 'reason', 'execution_id']);
  return parsed.data;
}

test('a marketer enrolls a 1,000-row CSV with 3 bad rows: progress moves, 997 enrolled, the 3 reported, the result file has 1,000 rows', async ({ page }) => {
  test.setTimeout(300_000);
  const welcome = await workflowId('Welcome series');
  const prefix = freshPrefix('thousand');
  await openAs(page, DEMO.MARKETER, `/enroll?workflow=${welcome}`);
  await expect(page.getByLabel('Workflow', { exact: true })).toHaveValue(welcome);
  await screenshots(page, 'enroll-choose');

  await upload(page, 'contacts-1000.csv', csvOf(prefix, 1000, { 100: 'not-an-email', 500: '', 900: `${prefix}900@@example.com` }));
  await expect(page.getByLabel('Email column')).toHaveValue('0');
  await expect(page.getByRole('checkbox', { name: 'firstName' })).toBeChecked();
  await expect(page.getByRole('checkbox', { name: 'plan' })).toBeChecked();
  const counts = page.getByTestId('preview-counts');
  await expect(counts).toContainText('1,000 rows');
  await expect(counts).toContainText('997 valid');
  await expect(counts).toContainText('3 invalid');
  await expect(page.getByTestId('preview-row')).toHaveCount(20);
  await page.getByRole('button', { name: 'Invalid rows' }).click();
  await expect(page.getByTestId('preview-row')).toHaveCount(3);
  await expect(page.getByTestId('preview-row').nth(1)).toContainText('the email cell is empty');
  await screenshots(page, 'enroll-preview');
  expect(await contactsWith(prefix), 'nothing is sent by the preview').toBe(0);

  await recordProgress(page);
  await page.getByRole('button', { name: 'Enroll 997 contacts into Welcome series' }).click();
  await expect(page.getByTestId('enroll-status')).toContainText('Finished: all 1,000 rows processed.', { timeout: 60_000 });
  const seen = await page.evaluate(() => (window as unknown as { progressSeen: number[] }).progressSeen);
  expect(seen.some((v) => v > 0 && v < 100), `progress values seen: ${seen.join(', ')}`).toBe(true);
  expect(seen[seen.length - 1]).toBe(100);

  const summary = page.getByTestId('result-summary');
  await expect(summary).toContainText('1,000 rows into Welcome series');
  await expect(summary).toContainText('997 enrolled');
  await expect(summary).toContainText('3 invalid');
  await page.getByRole('group', { name: 'Outcome' }).getByRole('button', { name: /invalid/ }).click();
  const invalidRows = page.getByTestId('result-row');
  await expect(invalidRows).toHaveCount(3);
  await expect(invalidRows.nth(0)).toContainText('100');
  await expect(invalidRows.nth(0)).toContainText('not a valid email address');
  await expect(invalidRows.nth(1)).toContainText('the email cell is empty');
  await expect(invalidRows.nth(2)).toContainText('not a valid email address');
  await page.getByRole('group', { name: 'Outcome' }).getByRole('button', { name: /invalid/ }).click();
  await expect(page.getByTestId('result-row')).toHaveCount(50);
  await expect(page.getByTestId('result-row').first().getByRole('link', { name: /^execution / })).toBeVisible();
  await screenshots(page, 'enroll-result');

  expect(await enrolledWith(welcome, prefix)).toBe(997);
  const result = await downloadedResult(page);
  expect(result).toHaveLength(1000);
  expect(result.filter((r) => r.outcome === 'enrolled')).toHaveLength(997);
  expect(result.filter((r) => r.outcome === 'invalid').map((r) => r.row)).toEqual(['100', '500', '900']);
  expect(result.filter((r) => r.outcome === 'enrolled').every((r) => /^[0-9a-f-]{36}$/.test(r.execution_id!))).toBe(true);

  // The same file again: nobody is enrolled twice, and each row says why.
  await page.getByRole('button', { name: 'Start another import' }).click();
  await upload(page, 'contacts-1000.csv', csvOf(prefix, 1000, { 100: 'not-an-email', 500: '', 900: `${prefix}900@@example.com` }));
  await page.getByRole('button', { name: 'Enroll 997 contacts into Welcome series' }).click();
  await expect(page.getByTestId('enroll-status')).toContainText('Finished', { timeout: 60_000 });
  await expect(summary).toContainText('0 enrolled');
  // Welcome series allows no re-entry: those still in it are active, the rest blocked.
  await expect(summary).toContainText(/already active|re-entry blocked/);
  expect(await enrolledWith(welcome, prefix)).toBe(997);
  await drained(welcome, prefix);
});

test('a 10,000-row file with 50 invalid rows moves the bar steadily, chunk by chunk, and every row is answered', async ({ page }) => {
  test.setTimeout(540_000);
  const winBack = await workflowId('Win-back campaign');
  const prefix = freshPrefix('tenk');
  await openAs(page, DEMO.MARKETER, `/enroll?workflow=${winBack}`);
  const bad = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [200 * i + 7, `broken-${i}`]));
  await upload(page, 'contacts-10000.csv', csvOf(prefix, 10_000, bad));
  await expect(page.getByTestId('preview-counts')).toContainText('9,950 valid');
  await recordProgress(page);
  await page.getByRole('button', { name: 'Enroll 9,950 contacts into Win-back campaign' }).click();
  await expect(page.getByTestId('enroll-status')).toContainText('Finished: all 10,000 rows processed.', { timeout: 240_000 });
  const seen = await page.evaluate(() => (window as unknown as { progressSeen: number[] }).progressSeen);
  // One step per chunk of 250 rows: 40 of them, never backwards.
  expect(seen.filter((v) => v > 0 && v < 100).length, `progress values seen: ${seen.join(', ')}`).toBeGreaterThanOrEqual(30);
  expect(seen).toEqual([...seen].sort((a, b) => a - b));
  await expect(page.getByTestId('result-summary')).toContainText('9,950 enrolled, 50 invalid');
  expect(await enrolledWith(winBack, prefix)).toBe(9950);
  const result = await downloadedResult(page);
  expect(result).toHaveLength(10_000);
  expect(result.filter((r) => r.outcome === 'invalid')).toHaveLength(50);
  await drained(winBack, prefix);
});

test('bad files are refused with a clear message and nothing is sent: empty, no email column, not UTF-8, unparseable', async ({ page }) => {
  const welcome = await workflowId('Welcome series');
  const prefix = freshPrefix('bad');
  await openAs(page, DEMO.MARKETER, `/enroll?workflow=${welcome}`);
  const requests: string[] = [];
  page.on('request', (r) => {
    if (ENROLL_MANY.test(r.url())) requests.push(r.url());
  });
  const problem = page.getByTestId('csv-problem');

  await upload(page, 'empty.csv', '');
  await expect(problem).toContainText('empty.csv cannot be imported');
  await expect(problem).toContainText('The file is empty');
  await expect(problem).toContainText('Nothing was sent and no one was enrolled.');
  await screenshots(page, 'enroll-bad-file');

  await upload(page, 'header-only.csv', 'email,firstName\n');
  await expect(problem).toContainText('has a header row but no data rows');

  // Latin-1 "é" (0xE9) is not UTF-8.
  await upload(page, 'latin1.csv', Buffer.concat([Buffer.from(`email,firstName\n${prefix}1@example.com,Ren`), Buffer.from([0xe9, 0x0a])]));
  await expect(problem).toContainText('not UTF-8 text');

  await upload(page, 'too-many.csv', csvOf(prefix, 10_001));
  await expect(problem).toContainText('The file has 10,001 rows; at most 10,000 can be imported at once.');

  await upload(page, 'too-large.csv', Buffer.alloc(10 * 1024 * 1024 + 1, 'a'));
  await expect(problem).toContainText('at most 10 MB can be imported at once');

  await upload(page, 'quotes.csv', `email,firstName\n${prefix}1@example.com,"Ada\n${prefix}2@example.com,Bob\n`);
  await expect(problem).toContainText('not valid CSV');

  // A header without an email column: the page asks which column holds the emails, and
  // offers no Enroll button until one is chosen.
  await drop(page, 'no-email.csv', `name,plan\nAda,pro\nBob,free\n`);
  await expect(page.getByTestId('csv-drop-zone')).toContainText('no-email.csv');
  await expect(problem).toBeHidden();
  await expect(page.getByTestId('no-email-column')).toContainText('No column is called email');
  await expect(page.getByRole('button', { name: /^Enroll / })).toHaveCount(0);
  // Mapping a column that holds no emails leaves nothing valid to send.
  await page.getByLabel('Email column').selectOption({ label: 'name' });
  await expect(page.getByTestId('preview-counts')).toContainText('0 valid');
  await expect(page.getByRole('button', { name: /^Enroll 0 contacts/ })).toBeDisabled();
  await screenshots(page, 'enroll-no-email-column');

  expect(requests).toEqual([]);
  expect(await contactsWith(prefix)).toBe(0);
});

test('Stop midway keeps what was done and says so; Continue finishes the rest', async ({ page }) => {
  test.setTimeout(180_000);
  const welcome = await workflowId('Welcome series');
  const prefix = freshPrefix('stop');
  await openAs(page, DEMO.MARKETER, `/enroll?workflow=${welcome}`);
  // Each chunk's call is held a moment, so there is time to press Stop between chunks.
  await page.route(ENROLL_MANY, async (route) => {
    await new Promise((resolve) => setTimeout(resolve, 700));
    await route.continue();
  });
  await upload(page, 'contacts-3000.csv', csvOf(prefix, 3000));
  await page.getByRole('button', { name: 'Enroll 3,000 contacts into Welcome series' }).click();

  const bar = page.getByRole('progressbar', { name: 'Import progress' });
  await expect.poll(async () => Number(await bar.getAttribute('aria-valuenow')), { timeout: 30_000 }).toBeGreaterThan(0);
  await expect(page.getByRole('button', { name: 'Stop' })).toBeVisible();
  await screenshots(page, 'enroll-running');
  await page.getByRole('button', { name: 'Stop' }).click();

  const status = page.getByTestId('enroll-status');
  await expect(status).toContainText(/Stopped after [\d,]+ of 3,000 rows/, { timeout: 30_000 });
  const text = (await status.textContent())!;
  const processed = Number(/Stopped after ([\d,]+) of/.exec(text)![1]!.replace(/,/g, ''));
  expect(processed).toBeGreaterThan(0);
  expect(processed).toBeLessThan(3000);
  expect(processed % 250).toBe(0);
  await expect(status).toContainText(`${processed.toLocaleString('en-US')} processed, the remaining ${(3000 - processed).toLocaleString('en-US')} not sent`);
  await expect(page.getByTestId('result-summary')).toContainText(`${processed.toLocaleString('en-US')} enrolled`);
  await expect(page.getByTestId('result-summary')).toContainText('(import incomplete)');
  await screenshots(page, 'enroll-stopped');

  // What the page says is what the database holds.
  expect(await enrolledWith(welcome, prefix)).toBe(processed);
  const result = await downloadedResult(page);
  expect(result).toHaveLength(3000);
  expect(result.filter((r) => r.outcome === 'enrolled')).toHaveLength(processed);
  expect(result.filter((r) => r.outcome === 'not sent')).toHaveLength(3000 - processed);

  await page.unroute(ENROLL_MANY);
  await page.getByRole('button', { name: /^Continue with the remaining/ }).click();
  await expect(status).toContainText('Finished: all 3,000 rows processed.', { timeout: 60_000 });
  await expect(page.getByTestId('result-summary')).toContainText('3,000 enrolled');
  expect(await enrolledWith(welcome, prefix)).toBe(3000);
});

test('a failed chunk is reported with its rows not processed, and Retry goes on from it', async ({ page }) => {
  test.setTimeout(120_000);
  const welcome = await workflowId('Welcome series');
  const prefix = freshPrefix('retry');
  await openAs(page, DEMO.MARKETER, `/enroll?workflow=${welcome}`);
  let calls = 0;
  await page.route(ENROLL_MANY, async (route) => {
    // The second chunk's call never reaches the server.
    if (++calls === 2) await route.abort('connectionreset');
    else await route.continue();
  });
  await upload(page, 'contacts-600.csv', csvOf(prefix, 600));
  await page.getByRole('button', { name: 'Enroll 600 contacts into Welcome series' }).click();
  const failure = page.getByTestId('enroll-status').getByRole('alert');
  await expect(failure).toContainText('Rows 251–500 were not processed');
  await expect(failure).toContainText('The 250 rows before them are done; 350 rows are not processed.');
  expect(await enrolledWith(welcome, prefix)).toBe(250);
  await expect(page.getByTestId('result-summary')).toContainText('250 enrolled, 350 not sent');
  await screenshots(page, 'enroll-failed-chunk');

  await page.getByRole('button', { name: 'Retry from row 251' }).click();
  await expect(page.getByTestId('enroll-status')).toContainText('Finished: all 600 rows processed.', { timeout: 60_000 });
  await expect(page.getByTestId('result-summary')).toContainText('600 enrolled');
  expect(await enrolledWith(welcome, prefix)).toBe(600);
});

test('a workflow disabled mid-import: the next chunk is refused with the reason, what was done is reported, Retry after enabling finishes', async ({ page }) => {
  test.setTimeout(120_000);
  const winBack = await workflowId('Win-back campaign');
  const prefix = freshPrefix('disabled');
  await openAs(page, DEMO.MARKETER, `/enroll?workflow=${winBack}`);
  let calls = 0;
  await page.route(ENROLL_MANY, async (route) => {
    // Someone switches the workflow off while the second chunk is on its way.
    if (++calls === 2) await sql(`UPDATE "Workflow" SET enabled = false WHERE id = $1`, [winBack]);
    await route.continue();
  });
  try {
    await upload(page, 'contacts-700.csv', csvOf(prefix, 700));
    await page.getByRole('button', { name: 'Enroll 700 contacts into Win-back campaign' }).click();
    const failure = page.getByTestId('enroll-status').getByRole('alert');
    await expect(failure).toContainText('Rows 251–500 were not processed: The workflow is disabled; enable it to enroll contacts.');
    await expect(page.getByTestId('result-summary')).toContainText('250 enrolled, 450 not sent');
    expect(await enrolledWith(winBack, prefix)).toBe(250);
    await sql(`UPDATE "Workflow" SET enabled = true WHERE id = $1`, [winBack]);
    await page.getByRole('button', { name: 'Retry from row 251' }).click();
    await expect(page.getByTestId('enroll-status')).toContainText('Finished: all 700 rows processed.', { timeout: 60_000 });
    expect(await enrolledWith(winBack, prefix)).toBe(700);
  } finally {
    await sql(`UPDATE "Workflow" SET enabled = true WHERE id = $1`, [winBack]);
  }
});

test('a disabled workflow is listed but cannot be chosen, and says why; a link to no workflow says so', async ({ page }) => {
  const winBack = await workflowId('Win-back campaign');
  await sql(`UPDATE "Workflow" SET enabled = false WHERE id = $1`, [winBack]);
  try {
    await openAs(page, DEMO.MARKETER, `/enroll?workflow=${winBack}`);
    await expect(page.getByRole('alert').filter({ hasText: 'is disabled' })).toContainText('Win-back campaign is disabled, so no one can be enrolled into it');
    await expect(page.getByRole('option', { name: /Win-back campaign/ })).toBeDisabled();
    await expect(page.getByLabel('Workflow', { exact: true })).toHaveValue('');
    await upload(page, 'two.csv', 'email\nwin-back-1@example.com\nwin-back-2@example.com\n');
    await expect(page.getByRole('button', { name: 'Enroll 2 contacts' })).toBeDisabled();
    await expect(page.getByText('Choose an enabled workflow first.')).toBeVisible();
    await screenshots(page, 'enroll-disabled-workflow');
  } finally {
    await sql(`UPDATE "Workflow" SET enabled = true WHERE id = $1`, [winBack]);
  }
  await page.goto('/enroll?workflow=00000000-0000-4000-8000-000000000000');
  await expect(page.getByRole('alert').filter({ hasText: 'not in this project' })).toBeVisible();
  await page.goto('/enroll?workflow=not-an-id');
  await expect(page.getByRole('alert').filter({ hasText: 'not valid' })).toContainText('workflow:');
});

test('a viewer sees no upload controls, and the API refuses them', async ({ page }) => {
  const welcome = await workflowId('Welcome series');
  await openAs(page, DEMO.VIEWER, `/enroll?workflow=${welcome}`);
  await expect(page.getByRole('alert').filter({ hasText: 'You need the marketer role to enroll contacts' })).toBeVisible();
  await expect(page.getByLabel('CSV file', { exact: true })).toHaveCount(0);
  await expect(page.getByRole('button', { name: /Choose a file/ })).toHaveCount(0);
  await expect(page.getByTestId('csv-drop-zone')).toHaveCount(0);
  await screenshots(page, 'enroll-viewer');
  const response = await page.request.post('/api/trpc/enrollments.enrollMany', {
    data: { json: { workflowId: welcome, contacts: [{ email: 'viewer-csv@example.com' }] } },
  });
  expect(response.status()).toBe(403);
});
