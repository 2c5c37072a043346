import type { Db } from '../server/db';
import type { WorkflowInput } from '../server/common/workflow-definition';
import { enrollBatch } from '../server/engine/enrollment';
import { createWorkflow } from '../server/engine/workflows';

// The workflows and contacts the throughput phases run on.

/** The workflow: TRIGGER -> SEND_EMAIL -> DELAY 0 -> CONDITION -> EXIT (five steps). */
export function stepsWorkflow(name: string): WorkflowInput {
  return {
    name,
    trigger: 'MANUAL',
    allowReentry: false,
    steps: [
      { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
      { key: 'mail', type: 'SEND_EMAIL', name: 'Mail', config: { subject: 'Hello {{contact.email}}', body: 'Hi' } },
      { key: 'pause', type: 'DELAY', name: 'Pause', config: { seconds: 0 } },
      { key: 'check', type: 'CONDITION', name: 'Pro?', config: { field: 'contact.data.plan', op: 'eq', value: 'pro' } },
      { key: 'done', type: 'EXIT', name: 'Done', config: { reason: 'bench' } },
    ],
    transitions: [
      { from: 'start', to: 'mail', branch: null },
      { from: 'mail', to: 'pause', branch: null },
      { from: 'pause', to: 'check', branch: null },
      { from: 'check', to: 'done', branch: 'yes' },
      { from: 'check', to: 'done', branch: 'no' },
    ],
  };
}

export const STEPS_PER_EXECUTION = 5;

/** TRIGGER -> WAIT_FOR_EVENT purchase -> EVENT: EXIT | TIMEOUT: EXIT. */
export function waitWorkflow(name: string, timeoutSeconds: number): WorkflowInput {
  return {
    name,
    trigger: 'MANUAL',
    allowReentry: false,
    steps: [
      { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
      { key: 'wait', type: 'WAIT_FOR_EVENT', name: 'Wait', config: { eventName: 'purchase', timeoutSeconds } },
      { key: 'bought', type: 'EXIT', name: 'Bought', config: { reason: 'event' } },
      { key: 'late', type: 'EXIT', name: 'Late', config: { reason: 'timeout' } },
    ],
    transitions: [
      { from: 'start', to: 'wait', branch: null },
      { from: 'wait', to: 'bought', branch: 'EVENT' },
      { from: 'wait', to: 'late', branch: 'TIMEOUT' },
    ],
  };
}

export async function newWorkflow(db: Db, projectId: string, input: WorkflowInput): Promise<string> {
  return (await createWorkflow(db, projectId, input)).id;
}

/** `count` contacts named <prefix>-<n>@bench.example, set-based. */
export async function seedContacts(db: Db, projectId: string, prefix: string, count: number): Promise<string[]> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    INSERT INTO "Contact" (id, "projectId", email, data, "createdAt", "updatedAt")
    SELECT gen_random_uuid(), ${projectId}::uuid, ${prefix} || '-' || i || '@bench.example',
           jsonb_build_object('plan', CASE WHEN i % 3 = 0 THEN 'pro' ELSE 'free' END), now(), now()
      FROM generate_series(1, ${count}::int) i
    RETURNING id`;
  return rows.map((r) => r.id);
}

/** Enroll every contact through the engine's own enrollment, 1,000 rows a batch. */
export async function enrollAll(db: Db, projectId: string, workflowId: string, contactIds: string[]): Promise<void> {
  for (let i = 0; i < contactIds.length; i += 1000) {
    const results = await enrollBatch(db, projectId, workflowId, contactIds.slice(i, i + 1000).map((contactId) => ({ contactId })));
    const refused = results.filter((r) => !r.ok);
    if (refused.length > 0) throw new Error(`enrollment refused ${refused.length} rows: ${JSON.stringify(refused[0])}`);
  }
}

/**
 * Hold a workflow's RUNNING executions back (due in a day), so workers started meanwhile
 * find nothing until release() makes them due at once: start-up is not timed.
 */
export async function holdBack(db: Db, workflowId: string): Promise<void> {
  await db.$executeRaw`
    UPDATE "WorkflowExecution" SET "readyAt" = now() + interval '1 day'
     WHERE "workflowId" = ${workflowId}::uuid AND status = 'RUNNING'`;
}

export async function release(db: Db, workflowId: string): Promise<void> {
  await db.$executeRaw`
    UPDATE "WorkflowExecution" SET "readyAt" = now()
     WHERE "workflowId" = ${workflowId}::uuid AND status = 'RUNNING'`;
  await db.$executeRaw`SELECT pg_notify('waypost_work', '')`;
}

/** Executions of the workflow not finished yet, and emails of it not delivered yet. */
export async function remaining(db: Db, workflowId: string): Promise<number> {
  const [row] = await db.$queryRaw<{ n: number }[]>`
    SELECT (SELECT count(*) FROM "WorkflowExecution" WHERE "workflowId" = ${workflowId}::uuid AND status IN ('RUNNING', 'WAITING'))::int
         + (SELECT count(*) FROM "Message" m JOIN "WorkflowExecution" e ON e.id = m."executionId"
             WHERE e."workflowId" = ${workflowId}::uuid AND m.status IN ('QUEUED', 'SENDING'))::int AS n`;
  return row!.n;
}

export async function finishedSteps(db: Db, workflowId: string): Promise<number> {
  const [row] = await db.$queryRaw<{ n: number }[]>`
    SELECT count(*)::int AS n FROM "StepExecution" s JOIN "WorkflowExecution" e ON e.id = s."executionId"
     WHERE e."workflowId" = ${workflowId}::uuid AND s."finishedAt" IS NOT NULL`;
  return row!.n;
}

/** Hold back every RUNNING execution (a phase's leftovers), so the next phase's workers run only their own. */
export async function holdBackAll(db: Db): Promise<void> {
  await db.$executeRaw`
    UPDATE "WorkflowExecution" SET "readyAt" = now() + interval '10 years' WHERE status = 'RUNNING'`;
}
