import pg from 'pg';
import type { Db } from '../../server/db';
import { enroll } from '../../server/engine/enrollment';
import type { WorkflowInput } from '../../server/common/workflow-definition';
import { createWorkflow } from '../../server/engine/workflows';
import { driveFromStart } from './drive';

// Small builders for the rows tests need. They go through the same functions as the
// product (createWorkflow validates the graph), never around them.

export async function createProject(db: Db, name = `project-${Math.random().toString(36).slice(2, 8)}`) {
  return db.project.create({ data: { name } });
}

export async function createContact(db: Db, projectId: string, email: string, data: Record<string, unknown> = {}) {
  return db.contact.create({ data: { projectId, email, data: data as object } });
}

/** trigger -> send one email: the smallest workflow with a side effect. */
export function mailWorkflow(overrides: Partial<WorkflowInput> = {}): WorkflowInput {
  return {
    name: `mail-${Math.random().toString(36).slice(2, 8)}`,
    trigger: 'MANUAL',
    allowReentry: true,
    steps: [
      { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
      { key: 'mail', type: 'SEND_EMAIL', name: 'Mail', config: { subject: 'Hi', body: 'Hello' } },
    ],
    transitions: [{ from: 'start', to: 'mail', branch: null }],
    ...overrides,
  };
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

/** The id of the step `key` of the workflow's version `versionNumber` (default: its newest version). */
export async function stepId(db: Db, workflowId: string, key: string, versionNumber?: number): Promise<string> {
  const step = await db.workflowStep.findFirstOrThrow({
    where: { workflowId, key, ...(versionNumber === undefined ? {} : { workflowVersion: { number: versionNumber } }) },
    orderBy: { workflowVersion: { number: 'desc' } },
  });
  return step.id;
}

/** The id of the workflow's version `number` (default 1: every workflow createWorkflow makes has it). */
export async function versionId(db: Db, workflowId: string, number = 1): Promise<string> {
  const version = await db.workflowVersion.findUniqueOrThrow({ where: { workflowId_number: { workflowId, number } } });
  return version.id;
}

/** An execution enrolled and driven to its first wait (waitWorkflow's WAIT_FOR_EVENT), as a worker would. */
export async function parkedAtWait(
  db: Db,
  projectId: string,
  workflowId: string,
  email: string,
): Promise<{ id: string; version: number; stepExecutionId: string }> {
  const enrolled = await enroll(db, { projectId, workflowId, email });
  if (!enrolled.ok) throw new Error(`enroll: ${enrolled.reason}`);
  await driveFromStart(db, enrolled.executionId);
  const x = await db.workflowExecution.findUniqueOrThrow({ where: { id: enrolled.executionId } });
  if (x.status !== 'WAITING') throw new Error(`expected the execution to be WAITING, it is ${x.status}`);
  const wait = await db.stepExecution.findFirstOrThrow({ where: { executionId: x.id, status: 'WAITING' } });
  return { id: x.id, version: x.version, stepExecutionId: wait.id };
}

/**
 * Another session holding an execution's row (SELECT ... FOR UPDATE) for `ms`: work on the
 * row waits for it. `released` settles once it has let go.
 */
export async function holdExecutionRow(url: string, executionId: string, ms: number): Promise<{ released: Promise<void> }> {
  const holder = new pg.Client({ connectionString: url });
  await holder.connect();
  await holder.query('BEGIN');
  await holder.query('SELECT id FROM "WorkflowExecution" WHERE id = $1 FOR UPDATE', [executionId]);
  const released = (async () => {
    await new Promise((r) => setTimeout(r, ms));
    await holder.query('COMMIT');
    await holder.end();
  })();
  return { released };
}
