import { hashPassword } from 'better-auth/crypto';
import type { Db } from '../server/db';
import { createEngineContext } from '../server/engine/context';
import type { WorkflowInput } from '../server/common/workflow-definition';
import { enroll } from '../server/engine/enrollment';
import { trackEvent } from '../server/engine/events';
import { runWorkerOnce } from '../server/engine/worker';
import { createWorkflow } from '../server/engine/workflows';
import { claimEventDispatch, claimStep, failEventDispatch } from '../server/engine/claims';
import { runClaimedStep } from '../server/engine/runner';

// The demo project: one user per role, contacts, workflows and executions in several
// states, all made by the engine itself (enroll, track, run), so the console has
// something real to show from the first minute. Idempotent: a second run changes nothing.
//
// Its logins share a password printed in the README, so when it is seeded is decided in
// one place, seedDemoOnce (below): on the first start of an empty embedded database, or
// when someone asks; never where SEED_DEMO=0, never again once seeded (a deleted demo
// project stays deleted), never over https unless forced, and never onto a person who
// already has one of the demo emails.

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

export interface DemoSeedResult {
  created: boolean;
  /** The demo logins made by this run (none when the project existed already). */
  logins: DemoLogin[];
  /** Demo emails that already belonged to a person: left exactly as they were. */
  skipped: string[];
}

/**
 * Seed the demo project unless it exists. Prefer seedDemoOnce, which decides whether to;
 * this is the seed itself (tests call it on databases of their own).
 */
export async function seedDemo(db: Db): Promise<DemoSeedResult> {
  if (await db.project.findUnique({ where: { name: DEMO_PROJECT } })) return { created: false, logins: [], skipped: [] };

  const project = await db.project.create({ data: { name: DEMO_PROJECT } });
  const hash = await hashPassword(DEMO_PASSWORD);
  const made: DemoLogin[] = [];
  const skipped: string[] = [];
  for (const u of DEMO_USERS) {
    // A person who already has this email keeps their credentials and memberships: no
    // password account (the published one) and no membership is added to them. ON
    // CONFLICT, not a look-up first: someone signing up the same email meanwhile wins.
    // User, account and membership in one transaction, so a crash cannot leave a demo
    // user without its account (which the next run would then take for a person's).
    const created = await db.$transaction(async (tx) => {
      const [user] = await tx.$queryRaw<{ id: string }[]>`
        INSERT INTO "User" (email, name, "emailVerified") VALUES (${u.email}, ${u.name}, true)
        ON CONFLICT (email) DO NOTHING RETURNING id`;
      if (!user) return false;
      await tx.account.create({ data: { userId: user.id, accountId: user.id, providerId: 'credential', password: hash } });
      await tx.membership.create({ data: { userId: user.id, projectId: project.id, role: u.role } });
      return true;
    });
    if (created) made.push({ email: u.email, password: DEMO_PASSWORD, role: u.role });
    else skipped.push(u.email);
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
      const claimed = await claimStep(db, {
        executionId: incident.executionId,
        expectedVersion: version,
        leaseSeconds: attempt === 0 ? 30 : 0,
        owner: `worker:demo-${attempt}`,
      });
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

  return { created: true, logins: made, skipped };
}

/** Who asks for the demo seed, and what they said. */
export type DemoSeedRequest =
  | {
      by: 'npm start';
      /** The product's database is the embedded one under .data/. */
      embedded: boolean;
      /** SEED_DEMO. */
      seedDemo?: '0' | '1' | 'force';
      publicUrl?: string;
    }
  | {
      /** `npm run cli -- seed`: a person asking now; recreates a deleted demo project. */
      by: 'cli seed';
      force: boolean;
      publicUrl?: string;
    };

export type DemoSeedOutcome =
  | 'SEEDED'
  /** SEED_DEMO=0. */
  | 'OFF'
  /** npm start on an external database without SEED_DEMO. */
  | 'NOT_ASKED'
  /** npm start on an embedded database that already holds projects or people. */
  | 'NOT_EMPTY'
  /** npm start on a database the demo was seeded on before (it may have been deleted since). */
  | 'SEEDED_BEFORE'
  /** npm start without SEED_DEMO on a database where an earlier start said SEED_DEMO=0. */
  | 'DECLINED_BEFORE'
  /** cli seed: the demo project is there. */
  | 'EXISTS'
  /** PUBLIC_URL is https and nobody forced it. */
  | 'REFUSED_HTTPS';

export interface DemoSeedDecision extends DemoSeedResult {
  outcome: DemoSeedOutcome;
  /** A sentence for the person who started it. */
  message: string;
}

/** Any key: it only has to be the same for every process that seeds. */
const DEMO_SEED_LOCK = 7_261_201;

type Refusal = Exclude<DemoSeedOutcome, 'SEEDED'>;

interface SeedFacts {
  seededBefore: boolean;
  declinedBefore: boolean;
  demoExists: boolean;
  empty: boolean;
}

function decide(request: DemoSeedRequest, facts: SeedFacts): Refusal | 'SEED' {
  if (request.by === 'npm start') {
    if (request.seedDemo === '0') return 'OFF';
    if (facts.seededBefore) return 'SEEDED_BEFORE';
    if (request.seedDemo === undefined) {
      if (facts.declinedBefore) return 'DECLINED_BEFORE';
      if (!request.embedded) return 'NOT_ASKED';
      if (!facts.empty) return 'NOT_EMPTY';
    }
  } else if (facts.demoExists) {
    return 'EXISTS';
  }
  const forced = request.by === 'npm start' ? request.seedDemo === 'force' : request.force;
  if (request.publicUrl?.startsWith('https:') && !forced) return 'REFUSED_HTTPS';
  return 'SEED';
}

const MESSAGES: Record<Refusal, string> = {
  OFF: 'SEED_DEMO=0: no demo project seeded',
  NOT_ASKED: 'no demo project seeded (an external database: SEED_DEMO=1 or `npm run cli -- seed` seeds it)',
  NOT_EMPTY: 'no demo project seeded: this embedded database already holds projects or people (`npm run cli -- seed` seeds it)',
  DECLINED_BEFORE: 'no demo project seeded: an earlier start said SEED_DEMO=0 (SEED_DEMO=1 or `npm run cli -- seed` seeds it)',
  SEEDED_BEFORE: 'the demo project was seeded on this database before; not seeding it again (`npm run cli -- seed` recreates it if it was deleted)',
  EXISTS: 'demo project "demo" already exists; nothing changed',
  REFUSED_HTTPS:
    'refusing to seed the demo project: PUBLIC_URL is https, a public address, and the demo logins\' password is published ' +
    '(SEED_DEMO=force or `npm run cli -- seed --force` seeds it anyway)',
};

/**
 * Seed the demo project if the request and this database call for it (see the top of this
 * file), and remember in DemoSeed that it was. Serialised by an advisory lock held for the
 * whole seed: two `npm start`s (or a start and a `cli seed`) on one database must not both
 * see "not seeded yet" and both seed, the second then failing on the project's unique name.
 */
export async function seedDemoOnce(db: Db, request: DemoSeedRequest): Promise<DemoSeedDecision> {
  return db.$transaction(
    async (tx) => {
      await tx.$executeRaw`SELECT pg_advisory_xact_lock(${DEMO_SEED_LOCK})`;
      const [facts] = await tx.$queryRaw<SeedFacts[]>`
        SELECT EXISTS (SELECT 1 FROM "DemoSeed" WHERE NOT declined) AS "seededBefore",
               EXISTS (SELECT 1 FROM "DemoSeed" WHERE declined) AS "declinedBefore",
               EXISTS (SELECT 1 FROM "Project" WHERE name = ${DEMO_PROJECT}) AS "demoExists",
               NOT EXISTS (SELECT 1 FROM "Project") AND NOT EXISTS (SELECT 1 FROM "User") AS empty`;
      const decision = decide(request, facts!);
      if (decision === 'OFF') {
        // Remember the "no", so that a later start that forgets SEED_DEMO=0 does not seed.
        await tx.$executeRaw`
          INSERT INTO "DemoSeed" ("seededBy", declined) VALUES (${request.by}, true) ON CONFLICT (id) DO NOTHING`;
      }
      if (decision !== 'SEED') return { outcome: decision, message: MESSAGES[decision], created: false, logins: [], skipped: [] };
      // The seed runs on the client's other connections (the engine's own transactions);
      // this transaction only holds the lock and records the seed when it is complete.
      const result = await seedDemo(db);
      await tx.$executeRaw`
        INSERT INTO "DemoSeed" ("seededBy") VALUES (${request.by})
        ON CONFLICT (id) DO UPDATE SET "seededBy" = EXCLUDED."seededBy", "seededAt" = now(), declined = false`;
      const parts = [result.created ? 'demo project "demo" seeded' : MESSAGES.EXISTS];
      for (const email of result.skipped) {
        parts.push(`${email} already belongs to a person: left as it was (no demo password, no membership)`);
      }
      return { outcome: result.created ? 'SEEDED' : 'EXISTS', message: parts.join('; '), ...result };
    },
    // The seed takes seconds on a loaded machine; a second starter waits for it.
    { timeout: 600_000, maxWait: 60_000 },
  );
}
