import type { WorkflowInput } from '../server/common/workflow-definition';
import type { Api, ClientLog } from './api';
import type { Rng } from './schedule';

// What the drill's clients do for its whole duration, through the HTTP API with API keys:
// enroll one by one (/api/v1) and in bulk (enrollMany, CSV import), track events that
// resolve waits (inside and after their windows) and trigger a workflow, and, as
// operators, resolve and cancel waiting executions by hand. Every answer goes to the log.

export const WAIT_SECONDS = 6;
export const SIGNUP_WAIT_SECONDS = 4;

/** Every step type: SEND_EMAIL, WAIT_FOR_EVENT (both branches), UPDATE_CONTACT, CONDITION, EXIT. */
export function journeyWorkflow(): WorkflowInput {
  return {
    name: 'drill journey',
    trigger: 'MANUAL',
    allowReentry: false,
    steps: [
      { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
      { key: 'hello', type: 'SEND_EMAIL', name: 'Hello', config: { subject: 'Hello {{contact.email}}', body: 'Hi' } },
      { key: 'wait', type: 'WAIT_FOR_EVENT', name: 'Wait for purchase', config: { eventName: 'purchase', timeoutSeconds: WAIT_SECONDS } },
      { key: 'tag', type: 'UPDATE_CONTACT', name: 'Tag buyer', config: { set: { buyer: true } } },
      { key: 'check', type: 'CONDITION', name: 'Pro?', config: { field: 'contact.data.plan', op: 'eq', value: 'pro' } },
      { key: 'thanks', type: 'SEND_EMAIL', name: 'Thanks', config: { subject: 'Thanks', body: 'Thanks for buying' } },
      { key: 'bought', type: 'EXIT', name: 'Bought', config: { reason: 'bought' } },
      { key: 'reminder', type: 'SEND_EMAIL', name: 'Reminder', config: { subject: 'Reminder', body: 'Still there?' } },
      { key: 'late', type: 'EXIT', name: 'Late', config: { reason: 'timeout' } },
    ],
    transitions: [
      { from: 'start', to: 'hello', branch: null },
      { from: 'hello', to: 'wait', branch: null },
      { from: 'wait', to: 'tag', branch: 'EVENT' },
      { from: 'wait', to: 'reminder', branch: 'TIMEOUT' },
      { from: 'tag', to: 'check', branch: null },
      { from: 'check', to: 'thanks', branch: 'yes' },
      { from: 'check', to: 'bought', branch: 'no' },
      { from: 'thanks', to: 'bought', branch: null },
      { from: 'reminder', to: 'late', branch: null },
    ],
  };
}

/** Bulk and CSV enrollments: DELAY, SEND_EMAIL, CONDITION, UPDATE_CONTACT, EXIT. */
export function nurtureWorkflow(): WorkflowInput {
  return {
    name: 'drill nurture',
    trigger: 'MANUAL',
    allowReentry: false,
    steps: [
      { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
      { key: 'pause', type: 'DELAY', name: 'Pause', config: { seconds: 2 } },
      { key: 'mail', type: 'SEND_EMAIL', name: 'Mail', config: { subject: 'News for {{contact.email}}', body: 'News' } },
      { key: 'check', type: 'CONDITION', name: 'Pro?', config: { field: 'contact.data.plan', op: 'eq', value: 'pro' } },
      { key: 'upgrade', type: 'UPDATE_CONTACT', name: 'Mark nurtured', config: { set: { nurtured: true } } },
      { key: 'done', type: 'EXIT', name: 'Done', config: {} },
    ],
    transitions: [
      { from: 'start', to: 'pause', branch: null },
      { from: 'pause', to: 'mail', branch: null },
      { from: 'mail', to: 'check', branch: null },
      { from: 'check', to: 'upgrade', branch: 'yes' },
      { from: 'check', to: 'done', branch: 'no' },
      { from: 'upgrade', to: 'done', branch: null },
    ],
  };
}

/** Enrolled by a tracked `signup` event (I3), then waits for `activate`. */
export function signupWorkflow(): WorkflowInput {
  return {
    name: 'drill signup',
    trigger: 'EVENT',
    triggerEvent: 'signup',
    allowReentry: false,
    steps: [
      { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
      { key: 'welcome', type: 'SEND_EMAIL', name: 'Welcome', config: { subject: 'Welcome', body: 'Welcome aboard' } },
      { key: 'wait', type: 'WAIT_FOR_EVENT', name: 'Wait for activation', config: { eventName: 'activate', timeoutSeconds: SIGNUP_WAIT_SECONDS } },
      { key: 'active', type: 'EXIT', name: 'Active', config: { reason: 'activated' } },
      { key: 'idle', type: 'EXIT', name: 'Idle', config: { reason: 'idle' } },
    ],
    transitions: [
      { from: 'start', to: 'welcome', branch: null },
      { from: 'welcome', to: 'wait', branch: null },
      { from: 'wait', to: 'active', branch: 'EVENT' },
      { from: 'wait', to: 'idle', branch: 'TIMEOUT' },
    ],
  };
}

export interface Workflows {
  journey: string;
  nurture: string;
  signup: string;
}

export interface Clients {
  marketer: Api;
  /**
   * The marketer's API for one client, by name: the topology drill gives each client a key
   * of its own, so that a per-key limit low enough to measure is not met by the workload.
   * Unset: every client uses `marketer`.
   */
  marketerFor?: (client: string) => Api;
  operator: Api;
  log: ClientLog;
  workflows: Workflows;
  rng: Rng;
  /** Stop when this returns true. */
  done: () => boolean;
  /** Tag in every email, so reruns on one server never collide. */
  runTag: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Emails accepted into the journey, and signups, so events can name them. */
const journeyEmails: string[] = [];
const signupEmails: string[] = [];
let serial = 0;
const nextEmail = (c: Clients, kind: string) => `${kind}-${++serial}-${c.runTag}@drill.example`;

async function singleEnroller(c: Clients, name: string): Promise<void> {
  while (!c.done()) {
    const again = journeyEmails.length > 10 && c.rng.chance(0.08);
    const email = again ? c.rng.pick(journeyEmails) : nextEmail(c, 'j');
    const a = await c.marketer.v1<{ executionId: string }>('enrollments', { workflowId: c.workflows.journey, email });
    c.log.add({ client: name, op: again ? 'enroll.again' : 'enroll', told: a.told, status: a.status, code: a.code, email, executionId: a.data?.executionId, detail: a.told === 'accepted' ? undefined : a.message });
    if (a.told === 'accepted' && !again) journeyEmails.push(email);
    await sleep(c.rng.int(20, 120));
  }
}

async function bulkEnroller(c: Clients, name: string): Promise<void> {
  let round = 0;
  while (!c.done()) {
    const rows = Array.from({ length: 25 }, () => ({ email: nextEmail(c, 'n'), plan: c.rng.chance(0.4) ? 'pro' : 'free' }));
    const csv = round++ % 2 === 1;
    const a = csv
      ? await c.marketer.trpc<{ results: { email: string; executionId?: string; error?: unknown }[] }>('enrollments.importCsv', {
          workflowId: c.workflows.nurture,
          csv: `email,plan\n${rows.map((r) => `${r.email},${r.plan}`).join('\n')}\n`,
        })
      : await c.marketer.trpc<{ results: { email: string; executionId?: string; error?: unknown }[] }>('enrollments.enrollMany', {
          workflowId: c.workflows.nurture,
          contacts: rows.map((r) => ({ email: r.email, data: { plan: r.plan } })),
        });
    const op = csv ? 'importCsv' : 'enrollMany';
    if (a.told !== 'accepted') {
      c.log.add({ client: name, op, told: a.told, status: a.status, code: a.code, detail: a.message });
    } else {
      for (const r of a.data!.results) {
        c.log.add({ client: name, op: `${op}.row`, told: r.executionId ? 'accepted' : 'refused', status: a.status, email: r.email, executionId: r.executionId, detail: r.error });
      }
    }
    await sleep(c.rng.int(200, 600));
  }
}

async function tracker(c: Clients, name: string): Promise<void> {
  while (!c.done()) {
    const roll = c.rng.next();
    let body: { name: string; email: string; idempotencyKey?: string };
    if (roll < 0.5 && journeyEmails.length > 0) {
      // Recent enrollments, so many purchases land inside their wait's window and some just after.
      body = { name: 'purchase', email: c.rng.pick(journeyEmails.slice(-40)) };
    } else if (roll < 0.75 || signupEmails.length === 0) {
      const email = nextEmail(c, 's');
      signupEmails.push(email);
      body = { name: 'signup', email };
    } else {
      body = { name: 'activate', email: c.rng.pick(signupEmails.slice(-30)) };
    }
    if (c.rng.chance(0.6)) body.idempotencyKey = `${body.name}-${body.email}-${c.rng.int(0, 2)}`;
    const viaV1 = c.rng.chance(0.5);
    const a = viaV1
      ? await c.marketer.v1<{ eventId: string }>('events', body)
      : await c.marketer.trpc<{ eventId: string }>('events.track', body);
    c.log.add({ client: name, op: `track.${body.name}`, told: a.told, status: a.status, code: a.code, email: body.email, eventId: a.data?.eventId, detail: a.told === 'accepted' ? undefined : a.message });
    await sleep(c.rng.int(20, 100));
  }
}

interface ListItem { id: string; status: string; version: number; stepType: string | null }

/** Operators: resolve a waiting journey by hand (FORCE_TIMEOUT, DELIVER_EVENT) or cancel a nurture, through preview and apply. */
async function operator(c: Clients, name: string): Promise<void> {
  while (!c.done()) {
    await sleep(c.rng.int(800, 2000));
    const journey = c.rng.chance(0.75);
    const list = await c.operator.trpc<{ items: ListItem[] }>(
      'executions.list',
      { workflowId: journey ? c.workflows.journey : c.workflows.nurture, status: ['WAITING'], limit: 20 },
      'query',
    );
    if (list.told !== 'accepted' || list.data!.items.length === 0) continue;
    const target = c.rng.pick(list.data!.items);
    const action = journey ? (c.rng.chance(0.5) ? 'FORCE_TIMEOUT' : 'DELIVER_EVENT') : 'CANCEL';
    const preview = await c.operator.trpc<{ expectedVersion: number; expectedStepExecutionId: string | null; plan: { allowed: boolean; refusal?: string | null } }>(
      'repair.preview',
      { executionId: target.id, action },
      'query',
    );
    if (preview.told !== 'accepted') {
      c.log.add({ client: name, op: `preview.${action}`, told: preview.told, status: preview.status, code: preview.code, executionId: target.id, detail: preview.message });
      continue;
    }
    if (!preview.data!.plan.allowed) continue;
    const a = await c.operator.trpc<unknown>('repair.applyOne', {
      executionId: target.id,
      action,
      expectedVersion: preview.data!.expectedVersion,
      expectedStepExecutionId: preview.data!.expectedStepExecutionId,
      reason: `drill operator: ${action}`,
    });
    c.log.add({ client: name, op: `repair.${action}`, told: a.told, status: a.status, code: a.code, executionId: target.id, detail: a.told === 'accepted' ? undefined : (a.conflict ?? a.message) });
  }
}

/** Every client, until `done()`. */
export async function runClients(c: Clients): Promise<void> {
  const as = (name: string): Clients => (c.marketerFor ? { ...c, marketer: c.marketerFor(name) } : c);
  await Promise.all([
    singleEnroller(as('enroll-1'), 'enroll-1'),
    singleEnroller(as('enroll-2'), 'enroll-2'),
    bulkEnroller(as('bulk-1'), 'bulk-1'),
    tracker(as('events-1'), 'events-1'),
    tracker(as('events-2'), 'events-2'),
    operator(c, 'operator-1'),
  ]);
}

/** The clients that send as the marketer (each gets a key of its own in the topology drill). */
export const MARKETER_CLIENTS = ['enroll-1', 'enroll-2', 'bulk-1', 'events-1', 'events-2'] as const;
