import path from 'node:path';
import { expect, test, type Browser, type Page } from '@playwright/test';
import { asDistinctClient, DEMO, signedIn } from './sign-in';
import { trpcMutation, trpcQuery } from './staging';

// Joining a project by invitation, in a real browser: the owner invites and copies the
// link (shown once); the invitee, with no account yet, creates one from the link and lands
// in the project; signed in with no project, they see a new invitation and accept it; they
// decline another; someone else signed in who opens a link is told only that it is not
// theirs. Emails are unique per run: other specs share the server and database.

const SHOTS = process.env.SCREENSHOT_DIR ?? path.join(import.meta.dirname, 'screenshots');
const WIDTHS = [1280, 1440];

async function shots(page: Page, name: string) {
  for (const width of WIDTHS) {
    await page.setViewportSize({ width, height: 900 });
    await page.screenshot({ path: path.join(SHOTS, `${name}-${width}.png`), fullPage: true });
  }
}

const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
const INVITEE = `invitee-${run}@example.com`;
const STRANGER = `stranger-${run}@example.com`;
const INVITEE_PASSWORD = 'invitee chose this';

async function invite(owner: Page, email: string, role: string): Promise<string> {
  await owner.goto('/settings');
  const members = owner.getByRole('region', { name: 'Members' });
  const form = members.getByRole('form', { name: 'Invite a member' });
  await form.getByRole('textbox', { name: 'Email' }).fill(email);
  await form.getByRole('combobox', { name: 'Role', exact: true }).selectOption(role);
  await form.getByRole('button', { name: 'Invite' }).click();
  const link = members.getByLabel('Invitation link');
  await expect(link).toHaveValue(/\/invitations\/[A-Za-z0-9_-]{43}$/);
  await members.getByRole('button', { name: 'Copy link' }).click();
  await expect(members.getByRole('button', { name: 'Copied' })).toBeVisible();
  const copied = await owner.evaluate(() => navigator.clipboard.readText());
  expect(copied).toBe(await link.inputValue());
  return copied;
}

async function removeFromDemo(owner: Page, email: string) {
  const members = await trpcQuery<{ userId: string; email: string }[]>(owner.request, 'members.list', null);
  const member = members.find((m) => m.email === email);
  expect(member, `${email} among the members`).toBeTruthy();
  await trpcMutation(owner.request, 'members.remove', { userId: member!.userId });
}

async function freshPage(browser: Browser): Promise<Page> {
  const page = await (await browser.newContext()).newPage();
  await asDistinctClient(page);
  return page;
}

test.describe.configure({ mode: 'serial' });

test('invite, create an account from the link, accept after signing in, decline, and a stranger refused', async ({ browser }) => {
  test.setTimeout(180_000);
  const owner = await signedIn(browser, DEMO.OWNER, '/settings');
  await owner.context().grantPermissions(['clipboard-read', 'clipboard-write']);

  // 1. The owner invites an email with no account and copies the link.
  const link = await invite(owner, INVITEE, 'MARKETER');
  const members = owner.getByRole('region', { name: 'Members' });
  await expect(members.getByRole('row', { name: new RegExp(INVITEE) })).toContainText('PENDING');
  await shots(owner, 'invitations-settings-link');
  // Shown once: gone after a reload, and no list holds it.
  await owner.reload();
  await expect(members.getByLabel('Invitation link')).toHaveCount(0);
  await expect(members.getByRole('row', { name: new RegExp(INVITEE) })).toContainText('PENDING');

  // 2. The invitee opens it signed out, creates an account for that email, and is in.
  const invitee = await freshPage(browser);
  await invitee.goto(link);
  await expect(invitee.getByRole('heading', { name: 'You are invited' })).toBeVisible();
  await expect(invitee.getByText(`invites ${INVITEE} to the project demo as MARKETER`)).toBeVisible();
  await shots(invitee, 'invitations-link-signed-out');
  const form = invitee.getByRole('form', { name: 'Create your account' });
  await expect(form.getByLabel('Email')).toHaveValue(INVITEE);
  await form.getByLabel('Your name').fill('Ivy Invitee');
  await form.getByLabel('Choose a password').fill(INVITEE_PASSWORD);
  await form.getByLabel('Repeat it').fill(INVITEE_PASSWORD);
  await form.getByRole('button', { name: 'Create account and join' }).click();
  await expect(invitee.getByTestId('current-user')).toHaveText(INVITEE, { timeout: 20_000 });
  await expect(invitee.getByTestId('current-project')).toHaveText('demo');
  await expect(invitee.getByTestId('current-role')).toHaveText('MARKETER');
  // The link is spent.
  await invitee.goto(link);
  await expect(invitee.getByRole('heading', { name: 'This invitation link does not work' })).toBeVisible();
  await owner.reload();
  await expect(members.getByRole('row', { name: new RegExp(INVITEE) }).first()).toContainText('ACCEPTED');

  // 3. Out of the project, invited again: after signing in they see it, and accept.
  await removeFromDemo(owner, INVITEE);
  await invite(owner, INVITEE, 'VIEWER');
  const again = await freshPage(browser);
  await again.goto('/');
  await again.getByLabel('Email').fill(INVITEE);
  await again.getByLabel('Password').fill(INVITEE_PASSWORD);
  await again.getByRole('button', { name: 'Sign in' }).click();
  await expect(again.getByRole('heading', { name: 'No project yet' })).toBeVisible({ timeout: 20_000 });
  const pending = again.getByRole('list', { name: 'Pending invitations' });
  await expect(pending.getByRole('listitem')).toHaveCount(1);
  await expect(pending).toContainText('demo');
  await expect(pending).toContainText('VIEWER');
  await expect(pending).toContainText(`from ${DEMO.OWNER}`);
  await shots(again, 'invitations-pending-after-sign-in');
  await pending.getByRole('button', { name: 'Accept demo' }).click();
  await expect(again.getByTestId('current-project')).toHaveText('demo', { timeout: 20_000 });
  await expect(again.getByTestId('current-role')).toHaveText('VIEWER');
  await expect(again.getByRole('heading', { level: 1, name: 'Overview' })).toBeVisible();

  // 4. Out again, invited again: this time they decline, and stay out.
  await removeFromDemo(owner, INVITEE);
  await invite(owner, INVITEE, 'OPERATOR');
  await again.goto('/invitations');
  const list = again.getByRole('list', { name: 'Pending invitations' });
  await list.getByRole('button', { name: 'Decline demo' }).click();
  await list.getByRole('button', { name: 'Confirm declining demo' }).click();
  await expect(again.getByText('No pending invitations.')).toBeVisible();
  await expect(again.getByRole('status').filter({ hasText: 'Invitation declined.' })).toBeVisible();
  await shots(again, 'invitations-declined');
  await again.goto('/');
  await expect(again.getByRole('heading', { name: 'No project yet' })).toBeVisible();
  await owner.reload();
  await expect(members.getByRole('row', { name: new RegExp(INVITEE) }).first()).toContainText('DECLINED');

  // 5. A link opened by someone else signed in: refused, naming neither the project nor the invitee.
  const strangerLink = await invite(owner, STRANGER, 'OWNER');
  await again.goto(strangerLink);
  const refusal = again.getByRole('alert').filter({ hasText: 'This invitation is for someone else' });
  await expect(refusal).toBeVisible();
  await expect(refusal).not.toContainText(STRANGER);
  await expect(refusal).not.toContainText('demo');
  await shots(again, 'invitations-someone-else');

  // The owner revokes it; the link then works for nobody.
  await owner.goto('/settings');
  await members.getByRole('button', { name: `Revoke the invitation of ${STRANGER}` }).click();
  await members.getByRole('button', { name: 'Confirm revoke' }).click();
  await expect(members.getByRole('row', { name: new RegExp(STRANGER) })).toContainText('REVOKED');
  const nobody = await freshPage(browser);
  await nobody.goto(strangerLink);
  await expect(nobody.getByRole('heading', { name: 'This invitation link does not work' })).toBeVisible();
});
