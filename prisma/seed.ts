import { hashPassword } from 'better-auth/crypto';
import type { Db } from '../server/db';
import {
  createEngineContext,
  createWorkflow,
  enroll,
  runWorkerOnce,
  trackEvent,
  type WorkflowInput,
} from '../server/engine';
import { claimEventDispatch, claimStep, failEventDispatch } from '../server/engine/claims';
import { runClaimedStep } from '../server/engine/runner';

// The demo project: one user per role, contacts, workflows and executions in several
// states, all made by the engine itself (enroll, track, run), so the console has
// something real to show from the first minute. Idempotent: a second run changes nothing.

export const DEMO_PROJECT = 'demo';
export const DEMO_PASSWORD = 'waypost-demo';
export const DEMO_USERS = [
  { email: 'owner@demo.waypost.dev', name: 'Olivia Owner', role: 'OWNER' },
  { email: 'operator@demo.waypost.dev', name: 'Oscar Operator', role: 'OPERATOR' },
  { email: 'marketer@demo.waypost.dev', name: 'Maya Marketer', role: 'MARKETER' },
  { email: 'viewer@demo.waypost.dev', name: 'Victor Viewer', role: 'VIEWER' },
] as const;

export interface DemoLogin {
  email: string;
  password: string;
  role: string;
}

export const WELCOME_SERIES: WorkflowInput = {
  name: 'Welcome series',
  description: 'Welcome new sign-ups, give them time, then nudge them towards a first purchase.',
  trigger: 'MANUAL',
  allowReentry: false,
  steps: [
    { key: 'signed_up', type: 'TRIGGER', name: 'Signed up', config: {} },
    {
      key: 'welcome',
      type: 'SEND_EMAIL',
      name: 'Welcome email',
      config: { subject: 'Welcome aboard, {{contact.data.firstName}}!', body: 'Hi {{contact.data.firstName}}, glad to have you.' },
    },
    { key: 'settle_in', type: 'DELAY', name: 'Let them settle in', config: { seconds: 3600 } },
    { key: 'first_purchase', type: 'WAIT_FOR_EVENT', name: 'Wait for a first purchase', config: { eventName: 'purchase', timeoutSeconds: 3 * 86400 } },
    { key: 'mark_customer', type: 'UPDATE_CONTACT', name: 'Mark as customer', config: { set: { customer: true } } },
    { key: 'thanks', type: 'SEND_EMAIL', name: 'Thank-you email', config: { subject: 'Thank you for your order', body: 'Enjoy!' } },
    { key: 'is_pro', type: 'CONDITION', name: 'On the pro plan?', config: { field: 'contact.data.plan', op: 'eq', value: 'pro' } },
    { key: 'discount', type: 'SEND_EMAIL', name: 'Discount offer', config: { subject: '10% off your first order', body: 'Use code WELCOME10.' } },
    { key: 'done', type: 'EXIT', name: 'Pro users need no discount', config: { reason: 'pro plan' } },
  ],
  transitions: [
    { from: 'signed_up', to: 'welcome', branch: null },
    { from: 'welcome', to: 'settle_in', branch: null },
    { from: 'settle_in', to: 'first_purchase', branch: null },
    { from: 'first_purchase', to: 'mark_customer', branch: 'EVENT' },
    { from: 'mark_customer', to: 'thanks', branch: null },
    { from: 'first_purchase', to: 'is_pro', branch: 'TIMEOUT' },
    { from: 'is_pro', to: 'done', branch: 'yes' },
    { from: 'is_pro', to: 'discount', branch: 'no' },
  ],
};

export const ABANDONED_CART: WorkflowInput = {
  name: 'Abandoned cart recovery',
  description: 'When a cart is abandoned, wait for checkout; remind once if it does not come.',
  trigger: 'EVENT',
  triggerEvent: 'cart_abandoned',
  allowReentry: true,
  steps: [
    { key: 'abandoned', type: 'TRIGGER', name: 'Cart abandoned', config: {} },
    { key: 'checkout', type: 'WAIT_FOR_EVENT', name: 'Wait for checkout', config: { eventName: 'checkout_completed', timeoutSeconds: 3600 } },
    { key: 'recovered', type: 'EXIT', name: 'Recovered', config: { reason: 'checked out' } },
    { key: 'reminder', type: 'SEND_EMAIL', name: 'Cart reminder', config: { subject: 'You left something behind', body: 'Your cart is waiting.' } },
  ],
  transitions: [
    { from: 'abandoned', to: 'checkout', branch: null },
    { from: 'checkout', to: 'recovered', branch: 'EVENT' },
    { from: 'checkout', to: 'reminder', branch: 'TIMEOUT' },
  ],
};

export const ORDER_CONFIRMATION: WorkflowInput = {
  name: 'Order confirmation',
  trigger: 'EVENT',
  triggerEvent: 'order_placed',
  allowReentry: true,
  steps: [
    { key: 'placed', type: 'TRIGGER', name: 'Order placed', config: {} },
    { key: 'confirm', type: 'SEND_EMAIL', name: 'Confirmation', config: { subject: 'Order confirmed', body: 'Order {{context.trigger.data.orderId}} is on its way.' } },
  ],
  transitions: [{ from: 'placed', to: 'confirm', branch: null }],
};

export const WIN_BACK: WorkflowInput = {
  name: 'Win-back campaign',
  description: 'Lapsed customers: wait a week for a purchase, else send a win-back offer.',
  trigger: 'MANUAL',
  allowReentry: false,
  steps: [
    { key: 'lapsed', type: 'TRIGGER', name: 'Customer lapsed', config: {} },
    { key: 'purchase', type: 'WAIT_FOR_EVENT', name: 'Wait for a purchase', config: { eventName: 'purchase', timeoutSeconds: 7 * 86400 } },
    { key: 'welcome_back', type: 'SEND_EMAIL', name: 'Welcome back', config: { subject: 'Welcome back!', body: 'Good to see you again.' } },
    { key: 'offer', type: 'SEND_EMAIL', name: 'Win-back offer', config: { subject: 'We miss you: 20% off', body: 'Come back with code MISSYOU.' } },
  ],
  transitions: [
    { from: 'lapsed', to: 'purchase', branch: null },
    { from: 'purchase', to: 'welcome_back', branch: 'EVENT' },
    { from: 'purchase', to: 'offer', branch: 'TIMEOUT' },
  ],
};

const PEOPLE = [
  ['ada@example.com', 'Ada', 'pro'],
  ['grace@example.com', 'Grace', 'free'],
  ['linus@example.com', 'Linus', 'free'],
  ['margaret@example.com', 'Margaret', 'pro'],
  ['alan@example.com', 'Alan', 'free'],
  ['barbara@example.com', 'Barbara', 'free'],
  ['edsger@example.com', 'Edsger', 'pro'],
  ['katherine@example.com', 'Katherine', 'free'],
  ['donald@example.com', 'Donald', 'free'],
  ['frances@example.com', 'Frances', 'pro'],
] as const;

function logins(): DemoLogin[] {
  return DEMO_USERS.map((u) => ({ email: u.email, password: DEMO_PASSWORD, role: u.role }));
}

export async function seedDemo(db: Db): Promise<{ created: boolean; logins: DemoLogin[] }> {
  if (await db.project.findUnique({ where: { name: DEMO_PROJECT } })) return { created: false, logins: logins() };

  const project = await db.project.create({ data: { name: DEMO_PROJECT } });
  const hash = await hashPassword(DEMO_PASSWORD);
  for (const u of DEMO_USERS) {
    const user = await db.user.upsert({
      where: { email: u.email },
      update: {},
      create: { email: u.email, name: u.name, emailVerified: true },
    });
    await db.account.create({ data: { userId: user.id, accountId: user.id, providerId: 'credential', password: hash } });
    await db.membership.create({ data: { userId: user.id, projectId: project.id, role: u.role } });
  }

  const ctx = createEngineContext(db, { owner: 'seed', config: { maxStepAttempts: 1, eventMaxAttempts: 8, inlineDispatchSeconds: 0 } });
  const welcome = await createWorkflow(db, project.id, WELCOME_SERIES);
  await createWorkflow(db, project.id, ABANDONED_CART);
  await createWorkflow(db, project.id, ORDER_CONFIRMATION);

  const contacts = [];
  for (const [email, firstName, plan] of PEOPLE) {
    contacts.push(await db.contact.create({ data: { projectId: project.id, email, data: { firstName, plan } } }));
  }

  // Welcome series: most contacts welcomed and now settling in (a DELAY, WAITING).
  for (const c of contacts.slice(0, 7)) await enroll(db, { projectId: project.id, workflowId: welcome.id, contactId: c.id });
  // Abandoned carts: three waiting for checkout, one recovered (the EVENT branch won).
  for (const c of contacts.slice(5, 9)) {
    await trackEvent(ctx, { projectId: project.id, name: 'cart_abandoned', contactId: c.id, data: { items: 2 } });
  }
  await runWorkerOnce(ctx);
  await trackEvent(ctx, { projectId: project.id, name: 'checkout_completed', contactId: contacts[8]!.id, data: { total: 129 } });
  // Orders: confirmations sent, executions COMPLETED.
  for (const [i, c] of contacts.slice(0, 3).entries()) {
    await trackEvent(ctx, {
      projectId: project.id,
      name: 'order_placed',
      contactId: c.id,
      data: { orderId: `A-10${i}` },
      idempotencyKey: `order-A-10${i}`,
    });
  }
  await runWorkerOnce(ctx);

  // A workflow whose step config predates the current schema (a legacy import): the
  // engine cannot run it and fails the execution, which the console lists as FAILED.
  const legacy = await createWorkflow(db, project.id, {
    name: 'Legacy newsletter import',
    trigger: 'MANUAL',
    steps: [
      { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
      { key: 'digest', type: 'SEND_EMAIL', name: 'Weekly digest', config: { subject: 'Your week', body: 'News' } },
    ],
    transitions: [{ from: 'start', to: 'digest', branch: null }],
  });
  await db.$executeRaw`
    UPDATE "WorkflowStep" SET config = '{"template_id": 17}'::jsonb
     WHERE "workflowId" = ${legacy.id}::uuid AND key = 'digest'`;
  await enroll(db, { projectId: project.id, workflowId: legacy.id, contactId: contacts[9]!.id });
  await runWorkerOnce(ctx);

  // An incident, as the engine leaves it: a "Win-back campaign" execution whose
  // WAIT_FOR_EVENT step killed its worker on three attempts in a row (a poison step, so
  // the fleet stops retrying it: LEASE_EXPIRED), and the contact's "purchase" event,
  // which cannot be delivered while that wait is not in place, retried with backoff
  // until it was dead-lettered (EVENT_DEAD). Both wait for an operator.
  const winBack = await createWorkflow(db, project.id, WIN_BACK);
  const lapsed = await db.contact.create({ data: { projectId: project.id, email: 'lapsed@example.com', data: { firstName: 'Lapsed', plan: 'free' } } });
  const incident = await enroll(db, { projectId: project.id, workflowId: winBack.id, contactId: lapsed.id });
  if (incident.ok) {
    let version = 1;
    for (let attempt = 0; attempt < 4; attempt++) {
      // The first claim runs the trigger; each later one is a worker that dies holding the wait step.
      const claimed = await claimStep(db, { executionId: incident.executionId, expectedVersion: version, leaseSeconds: attempt === 0 ? 30 : 0 });
      if (!claimed.won) break;
      version = claimed.claim.version;
      if (attempt === 0) version = (await runClaimedStep(ctx, claimed.claim)).continueAt ?? version;
    }
    const purchase = await trackEvent(
      ctx,
      { projectId: project.id, name: 'purchase', contactId: lapsed.id, data: { total: 59 } },
      { dispatch: false },
    );
    if (purchase.ok) {
      // Its dispatches ran on the same crashing workers: each attempt failed, with backoff,
      // until the last one dead-lettered it.
      for (let attempt = 0; attempt < ctx.config.eventMaxAttempts; attempt++) {
        const owner = `worker:demo-${attempt}`;
        if (!(await claimEventDispatch(db, { eventId: purchase.eventId, owner, leaseSeconds: 30 }))) break;
        await failEventDispatch(db, {
          eventId: purchase.eventId,
          owner,
          error: 'dispatch aborted: the worker process was killed (out of memory in "Wait for a purchase")',
          maxAttempts: ctx.config.eventMaxAttempts,
        });
      }
    }
  }

  return { created: true, logins: logins() };
}
