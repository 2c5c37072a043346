import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect, test, type Page } from '@playwright/test';
import { Webhook } from 'standardwebhooks';
import { screenshots, watchErrors } from './page-support';
import { DEMO, signedIn } from './sign-in';

// Outgoing webhooks in a real browser against the running product (its workers deliver):
// an owner adds an endpoint pointing at a receiver this spec runs on 127.0.0.1 (the e2e
// server allows that host: scripts/e2e-server.ts, WEBHOOK_ALLOWED_HOSTS), sees the
// secret once, sends a test event and sees it DELIVERED in the endpoint's log with its
// latency; the receiver checks each signature with the standardwebhooks package and the
// secret the page showed. Then the receiver fails: the log shows the retries and the
// message dead-lettered (the e2e server retries after 1 and 2 seconds), the owner
// redelivers it, and it arrives with the same webhook-id. Last, the endpoint is deleted.

interface Received {
  id: string;
  type: string;
  verified: boolean;
}

/** A receiver that answers `status` and records every request with whether its signature verifies. */
function receiver() {
  const received: Received[] = [];
  const state = { status: 200, secret: '' };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const headers = req.headers as IncomingHttpHeaders & Record<string, string>;
      let verified = false;
      try {
        new Webhook(state.secret).verify(body, headers);
        verified = true;
      } catch {
        verified = false;
      }
      const type = (JSON.parse(body) as { type: string }).type;
      received.push({ id: String(headers['webhook-id']), type, verified });
      res.writeHead(state.status, { 'content-type': 'text/plain' });
      res.end(state.status < 300 ? 'ok, thanks' : 'receiver is down for the test');
    });
  });
  return { server, received, state };
}

const hook = receiver();
let url = '';

test.beforeAll(async () => {
  await new Promise<void>((resolve) => hook.server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(hook.server.address() as AddressInfo).port}/hooks/${Date.now().toString(36)}`;
});
test.afterAll(async () => {
  await new Promise<void>((resolve) => hook.server.close(() => resolve()));
});

const tests = (type = 'webhook.test') => hook.received.filter((r) => r.type === type);

async function openLog(page: Page) {
  await page.goto('/settings');
  await page.getByRole('table', { name: 'Webhook endpoints' }).getByRole('link', { name: url }).click();
  await expect(page.getByRole('region', { name: 'Delivery log' })).toBeVisible();
}

test('an owner adds an endpoint, sees the secret once, a test event is delivered and signed, a failing receiver is retried to DEAD and redelivered', async ({ browser }) => {
  test.setTimeout(180_000);
  const page = await signedIn(browser, DEMO.OWNER, '/settings');
  const errors = watchErrors(page);
  const panel = page.getByRole('region', { name: 'Webhooks' });
  await expect(panel).toBeVisible();

  // Add: the stuck settings appear only with execution.stuck ticked.
  await panel.getByRole('button', { name: 'Add endpoint' }).click();
  const form = panel.getByRole('form', { name: 'Add endpoint' });
  await form.getByLabel('URL').fill(url);
  await form.getByLabel('Description (optional)').fill('e2e receiver');
  await form.getByRole('checkbox', { name: /execution\.failed/ }).check();
  await expect(form.getByTestId('stuck-settings')).toHaveCount(0);
  await form.getByRole('checkbox', { name: /execution\.stuck/ }).check();
  await expect(form.getByTestId('stuck-settings')).toBeVisible();
  await form.getByLabel('Notify when a stuck group reaches').fill('3');
  await screenshots(page, 'webhooks-add');
  await form.getByRole('button', { name: 'Add endpoint' }).click();

  // The secret, once.
  const secretField = panel.getByTestId('new-webhook-secret');
  await expect(secretField).toHaveText(/^whsec_[A-Za-z0-9+/]{32}$/);
  hook.state.secret = (await secretField.textContent())!;
  await expect(panel.getByText('it will not be shown again')).toBeVisible();
  const row = panel.getByTestId('webhook-row').filter({ hasText: url });
  await expect(row).toContainText('execution.stuck');
  await expect(row).toContainText(`secret …${hook.state.secret.slice(-4)}`);
  await screenshots(page, 'webhooks-secret');
  await panel.getByRole('button', { name: 'Done' }).click();
  await expect(secretField).toHaveCount(0);
  await page.reload();
  expect(await page.content()).not.toContain(hook.state.secret);

  // A test event: delivered, signed, in the log with its latency.
  await row.getByRole('button', { name: `Send test event to ${url}` }).click();
  await expect(row.getByText('Queued')).toBeVisible();
  await expect.poll(() => tests().length, { timeout: 30_000 }).toBe(1);
  expect(tests()[0]!.verified, 'the signature verifies with the secret the page showed').toBe(true);
  await openLog(page);
  const log = page.getByRole('region', { name: 'Delivery log' });
  const delivered = log.getByTestId('delivery-row').filter({ hasText: 'webhook.test' }).first();
  await expect(delivered).toContainText('DELIVERED', { timeout: 20_000 });
  await expect(delivered).toContainText('HTTP 200');
  await expect(delivered).toContainText(/\d+ ms/);
  await delivered.getByRole('button', { name: /Open the webhook.test delivery/ }).click();
  await expect(page).toHaveURL(/[?&]delivery=/);
  const detail = page.getByRole('region', { name: 'Delivery', exact: true });
  await expect(detail.getByTestId('delivery-payload')).toContainText('"type": "webhook.test"');
  await expect(detail.getByTestId('delivery-attempt')).toHaveCount(1);
  await expect(detail.getByTestId('delivery-attempt')).toContainText('ok, thanks');
  await screenshots(page, 'webhooks-log-delivered');

  // The receiver fails: retried, then dead-lettered.
  hook.state.status = 500;
  // The delivery opens as a drawer over the page's right side; Escape closes it.
  await page.keyboard.press('Escape');
  await expect(detail).toHaveCount(0);
  await expect(page).not.toHaveURL(/[?&]delivery=/);
  await page.getByRole('region', { name: 'Endpoint' }).getByRole('button', { name: `Send test event to ${url}` }).click();
  await expect.poll(() => tests().length, { timeout: 30_000 }).toBeGreaterThanOrEqual(3);
  const deadId = tests()[1]!.id;
  expect(tests().slice(1).every((r) => r.id === deadId), 'every retry carries the same webhook-id').toBe(true);
  // The live log keeps its rows still and counts the newcomer until asked to show it.
  await log.getByRole('button', { name: '1 new — show' }).click();
  const failing = log.getByTestId('delivery-row').first();
  await expect(failing).toContainText('HTTP 500', { timeout: 20_000 });
  await expect(failing).toContainText('DEAD', { timeout: 30_000 });
  await log.getByRole('group', { name: 'Status' }).getByRole('button', { name: 'DEAD' }).click();
  await expect(page).toHaveURL(/[?&]status=DEAD/);
  const dead = log.getByTestId('delivery-row').first();
  await expect(log.getByTestId('delivery-row')).toHaveCount(1);
  await expect(dead).toContainText('DEAD');
  await expect(dead).toContainText('HTTP 500');
  await dead.getByRole('button', { name: /Open the webhook.test delivery/ }).click();
  await expect(detail.getByTestId('delivery-attempt').first()).toContainText('receiver is down for the test');
  expect(await detail.getByTestId('delivery-attempt').count()).toBeGreaterThanOrEqual(3);
  await screenshots(page, 'webhooks-log-dead');

  // Redeliver: the same message, the same webhook-id, delivered this time.
  hook.state.status = 200;
  const before = tests().length;
  // From the open delivery (the row has the same button, under the drawer now).
  await detail.getByRole('button', { name: `Redeliver ${deadId}` }).click();
  await expect.poll(() => tests().length, { timeout: 30_000 }).toBe(before + 1);
  expect(tests().at(-1)).toEqual({ id: deadId, type: 'webhook.test', verified: true });
  await page.keyboard.press('Escape');
  await log.getByRole('group', { name: 'Status' }).getByRole('button', { name: 'DEAD' }).click();
  await expect(page).not.toHaveURL(/status=DEAD/);
  await expect(log.getByTestId('delivery-row').filter({ hasText: 'DELIVERED' })).toHaveCount(2, { timeout: 20_000 });

  // Delete, behind a confirm that names the URL.
  const settings = page.getByRole('region', { name: 'Endpoint' });
  await settings.getByRole('button', { name: `Delete ${url}` }).click();
  await expect(settings.getByText(`Delete ${url} and its delivery log?`)).toBeVisible();
  await settings.getByRole('button', { name: 'Confirm delete' }).click();
  await expect(page).toHaveURL(/\/settings$/);
  await expect(page.getByRole('region', { name: 'Webhooks' }).getByTestId('webhook-row').filter({ hasText: url })).toHaveCount(0);
  expect(errors).toEqual([]);
});

test('non-owners do not see webhooks: Settings and an endpoint page say who manages them', async ({ browser }) => {
  const page = await signedIn(browser, DEMO.OPERATOR, '/settings');
  await expect(page.getByRole('main').getByRole('alert')).toContainText('Members, API keys and webhooks are managed by the project');
  await expect(page.getByRole('region', { name: 'Webhooks' })).toHaveCount(0);
  await page.goto(`/settings/webhooks/${'0'.repeat(8)}-0000-0000-0000-${'0'.repeat(12)}`);
  await expect(page.getByRole('main').getByRole('alert')).toContainText('Webhooks are managed by the project');
});
