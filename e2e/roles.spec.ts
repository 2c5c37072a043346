import path from 'node:path';
import { expect, test, type Page } from '@playwright/test';
import { asDistinctClient, DEMO, DEMO_PASSWORD, signIn, type DemoRole } from './sign-in';

// What each demo person sees of the console, signed in through a real browser: their
// email, project and role in the top bar; Settings (members and API keys) for the OWNER
// only; and the API refusing them what their role does not allow, with their own cookie.

const shot = (name: string) => path.join(import.meta.dirname, 'screenshots', `${name}.png`);

/** One procedure per minimum role; each person may call those at or below their role. */
const PROBES: { path: string; minimum: DemoRole }[] = [
  { path: 'health.invariants', minimum: 'VIEWER' },
  { path: 'repair.stuck', minimum: 'OPERATOR' },
  { path: 'apiKeys.list', minimum: 'OWNER' },
];
const RANK: Record<DemoRole, number> = { VIEWER: 0, MARKETER: 1, OPERATOR: 2, OWNER: 3 };

async function statusOf(page: Page, procedure: string): Promise<number> {
  // page.request carries the browser context's cookies: this is the signed-in person calling.
  const response = await page.request.get(`/api/trpc/${procedure}`);
  return response.status();
}

test.beforeEach(async ({ page }) => {
  await asDistinctClient(page);
});

test('a signed-out visitor is sent to the sign-in page, and back where they were going after signing in', async ({ page }) => {
  await page.goto('/');
  await expect(page).toHaveURL(/\/sign-in$/);
  await expect(page.getByRole('heading', { name: 'Sign in' })).toBeVisible();

  await page.goto('/settings');
  await expect(page).toHaveURL(/\/sign-in\?next=%2Fsettings$/);

  // The API never redirects: it answers 401 with JSON.
  const api = await page.request.get('/api/trpc/health.invariants');
  expect(api.status()).toBe(401);
  expect((await api.json()).error.json.data.code).toBe('UNAUTHORIZED');

  await page.getByLabel('Email').fill(DEMO.OWNER);
  await page.getByLabel('Password').fill('not the password');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('alert').filter({ hasText: 'Wrong' })).toHaveText('Wrong email or password.');
  await expect(page.getByRole('button', { name: 'Sign in' })).toBeEnabled();
  await page.screenshot({ path: shot('sign-in-error') });

  await signIn(page, DEMO.OWNER, DEMO_PASSWORD);
  await expect(page).toHaveURL(/\/settings$/);
  await expect(page.getByRole('heading', { level: 1, name: 'Settings' })).toBeVisible();
});

for (const role of ['OWNER', 'OPERATOR', 'MARKETER', 'VIEWER'] as const) {
  test(`${role}: sees their role in the top bar and only what the role may do`, async ({ page, playwright, baseURL }) => {
    const browserErrors: string[] = [];
    page.on('pageerror', (error) => browserErrors.push(error.message));

    await page.goto('/');
    await signIn(page, DEMO[role]);
    await expect(page.getByRole('heading', { level: 1, name: 'Overview' })).toBeVisible();
    await expect(page.getByTestId('current-role')).toHaveText(role);
    await expect(page.getByTestId('current-project')).toHaveText('demo');

    const nav = page.getByRole('navigation', { name: 'Sections' });
    await expect(nav.getByRole('link', { name: 'Overview' })).toBeVisible();
    if (role === 'OWNER') await expect(nav.getByRole('link', { name: 'Settings' })).toBeVisible();
    else await expect(nav.getByText('Settings')).toHaveCount(0);
    await page.screenshot({ path: shot(`overview-${role.toLowerCase()}`) });

    for (const probe of PROBES) {
      const allowed = RANK[role] >= RANK[probe.minimum];
      expect(await statusOf(page, probe.path), `${role} calling ${probe.path}`).toBe(allowed ? 200 : 403);
    }

    await page.goto('/settings');
    if (role === 'OWNER') {
      await expect(page.getByRole('region', { name: 'Members' }).getByText(DEMO.VIEWER)).toBeVisible();
      const keys = page.getByRole('region', { name: 'API keys' });
      await keys.getByLabel('Name').fill('e2e integration');
      await keys.getByLabel('Role').selectOption('MARKETER');
      await keys.getByRole('button', { name: 'Create key' }).click();
      const secret = keys.getByTestId('new-api-key');
      await expect(secret).toHaveText(/^wp_[0-9A-Za-z]{40}$/);
      await expect(keys.getByRole('button', { name: 'Copy' })).toBeVisible();
      await expect(keys.getByText('it will not be shown again')).toBeVisible();
      await page.screenshot({ path: shot('settings-owner'), fullPage: true });

      // The key works for a program, until the owner revokes it.
      const program = await playwright.request.newContext({ baseURL, extraHTTPHeaders: { authorization: `Bearer ${await secret.textContent()}` } });
      const asProgram = () => program.get('/api/trpc/health.invariants');
      expect((await asProgram()).status()).toBe(200);
      await keys.getByRole('button', { name: 'Done' }).click();
      await expect(secret).toHaveCount(0);
      await keys.getByRole('button', { name: 'Revoke e2e integration' }).click();
      await keys.getByRole('button', { name: 'Confirm revoke' }).click();
      await expect(keys.getByRole('row', { name: /e2e integration/ })).toContainText('revoked');
      expect((await asProgram()).status()).toBe(401);
      await program.dispose();
    } else {
      const refusal = page.getByRole('alert').filter({ hasText: 'Not allowed' });
      await expect(refusal).toContainText(`you are ${role}`);
      await expect(page.getByRole('region', { name: 'API keys' })).toHaveCount(0);
      await page.screenshot({ path: shot(`settings-${role.toLowerCase()}`) });
    }

    await page.getByRole('button', { name: 'Sign out' }).click();
    await expect(page).toHaveURL(/\/sign-in$/);
    await page.goto('/');
    await expect(page).toHaveURL(/\/sign-in$/);
    expect(browserErrors).toEqual([]);
  });
}

test('sign-in is rate limited per address by the running server: the 6th rapid wrong attempt is 429', async ({ playwright, baseURL }) => {
  // No X-Forwarded-For from the client: the address is the one `next start` saw the
  // connection come from, as for a visitor reaching the server directly.
  const client = await playwright.request.newContext({ baseURL });
  const statuses: number[] = [];
  for (let attempt = 1; attempt <= 6; attempt++) {
    const response = await client.post('/api/auth/sign-in/email', {
      headers: { origin: baseURL! },
      data: { email: DEMO.VIEWER, password: `guess number ${attempt}` },
    });
    statuses.push(response.status());
  }
  expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
  await client.dispose();
});
