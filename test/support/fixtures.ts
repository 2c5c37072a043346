import type { Db } from '../../server/db';
import type { WorkflowInput } from '../../server/engine/definition';
import { createWorkflow } from '../../server/engine/workflows';

// Small builders for the rows tests need. They go through the same functions as the
// product (createWorkflow validates the graph), never around them.

export async function createProject(db: Db, name = `project-${Math.random().toString(36).slice(2, 8)}`) {
  return db.project.create({ data: { name } });
}

export async function createContact(db: Db, projectId: string, email: string, data: Record<string, unknown> = {}) {
  return db.contact.create({ data: { projectId, email, data: data as object } });
}

/** trigger -> send "hello" -> wait for `purchase` (timeout) -> EVENT: send "thanks" | TIMEOUT: send "reminder". */
export function waitWorkflow(overrides: Partial<WorkflowInput> = {}, timeoutSeconds = 3600): WorkflowInput {
  return {
    name: `wait-${Math.random().toString(36).slice(2, 8)}`,
    trigger: 'MANUAL',
    allowReentry: false,
    steps: [
      { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
      { key: 'hello', type: 'SEND_EMAIL', name: 'Hello', config: { subject: 'Hello {{contact.email}}', body: 'Hi' } },
      { key: 'wait', type: 'WAIT_FOR_EVENT', name: 'Wait for purchase', config: { eventName: 'purchase', timeoutSeconds } },
      { key: 'thanks', type: 'SEND_EMAIL', name: 'Thanks', config: { subject: 'Thanks', body: 'Thanks for buying' } },
      { key: 'reminder', type: 'SEND_EMAIL', name: 'Reminder', config: { subject: 'Reminder', body: 'Still there?' } },
    ],
    transitions: [
      { from: 'start', to: 'hello', branch: null },
      { from: 'hello', to: 'wait', branch: null },
      { from: 'wait', to: 'thanks', branch: 'EVENT' },
      { from: 'wait', to: 'reminder', branch: 'TIMEOUT' },
    ],
    ...overrides,
  };
}

/** trigger -> email -> delay 0 -> email: two side effects per execution, every step type a worker claims. */
export function twoEmailWorkflow(overrides: Partial<WorkflowInput> = {}): WorkflowInput {
  return {
    name: `two-emails-${Math.random().toString(36).slice(2, 8)}`,
    trigger: 'MANUAL',
    allowReentry: false,
    steps: [
      { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
      { key: 'hello', type: 'SEND_EMAIL', name: 'Hello', config: { subject: 'Hello', body: 'Hi {{contact.email}}' } },
      { key: 'pause', type: 'DELAY', name: 'No pause', config: { seconds: 0 } },
      { key: 'bye', type: 'SEND_EMAIL', name: 'Bye', config: { subject: 'Bye', body: 'Bye' } },
    ],
    transitions: [
      { from: 'start', to: 'hello', branch: null },
      { from: 'hello', to: 'pause', branch: null },
      { from: 'pause', to: 'bye', branch: null },
    ],
    ...overrides,
  };
}

/** trigger -> delay -> send. */
export function delayWorkflow(seconds: number, overrides: Partial<WorkflowInput> = {}): WorkflowInput {
  return {
    name: `delay-${Math.random().toString(36).slice(2, 8)}`,
    trigger: 'MANUAL',
    allowReentry: false,
    steps: [
      { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
      { key: 'pause', type: 'DELAY', name: 'Pause', config: { seconds } },
      { key: 'mail', type: 'SEND_EMAIL', name: 'Mail', config: { subject: 'After the pause', body: 'Hello' } },
    ],
    transitions: [
      { from: 'start', to: 'pause', branch: null },
      { from: 'pause', to: 'mail', branch: null },
    ],
    ...overrides,
  };
}

export async function workflowFrom(db: Db, projectId: string, input: WorkflowInput) {
  return createWorkflow(db, projectId, input);
}

export async function stepId(db: Db, workflowId: string, key: string): Promise<string> {
  const step = await db.workflowStep.findFirstOrThrow({ where: { workflowId, key } });
  return step.id;
}
