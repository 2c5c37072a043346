import { transaction, type Db, type DbTx } from '../db';
import { writeAudit, type Acting } from './audit';
import { workflowInput, type WorkflowInput } from '../common/workflow-definition';
import { insertVersion } from './versions';

// A workflow: its name, trigger and flags. Its graph lives in published versions
// (versions.ts); creating a workflow publishes version 1.

export class WorkflowDefinitionError extends Error {
  override name = 'WorkflowDefinitionError';
  constructor(readonly issues: { message: string; path: (string | number)[] }[]) {
    super(issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
  }
}

/** Validate and store a workflow with its steps and transitions, in one transaction. */
export async function createWorkflow(
  db: Db | DbTx,
  projectId: string,
  input: WorkflowInput,
  publishedBy = 'system',
): Promise<{ id: string }> {
  const parsed = workflowInput.safeParse(input);
  if (!parsed.success) {
    throw new WorkflowDefinitionError(
      parsed.error.issues.map((i) => ({ message: i.message, path: i.path.map((p) => p as string | number) })),
    );
  }
  const wf = parsed.data;
  return transaction(db, 'ENGINE', async (tx) => {
    const workflow = await tx.workflow.create({
      data: {
        projectId,
        name: wf.name,
        description: wf.description ?? null,
        trigger: wf.trigger,
        triggerEvent: wf.triggerEvent ?? null,
        allowReentry: wf.allowReentry,
        enabled: wf.enabled,
      },
    });
    await insertVersion(tx, { workflowId: workflow.id, number: 1, basedOn: null, publishedBy }, wf);
    return { id: workflow.id };
  });
}

function isUniqueViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'P2002';
}

export type CreateWorkflowResult = { ok: true; id: string } | { ok: false; reason: 'NAME_TAKEN'; workflowId: string | null };

/**
 * workflows.create: store a workflow and its audit entry in one transaction. Names are
 * unique per project: a taken name is refused (and audited) naming the workflow that holds it.
 */
export async function createWorkflowAudited(db: Db, by: Acting, input: WorkflowInput): Promise<CreateWorkflowResult> {
  const rejectTaken = async (tx: DbTx): Promise<CreateWorkflowResult> => {
    const holder = await tx.workflow.findFirst({ where: { projectId: by.projectId, name: input.name }, select: { id: true } });
    await writeAudit(tx, {
      ...by,
      action: 'workflows.create',
      targetType: 'workflow',
      targetId: holder?.id ?? input.name,
      outcome: 'REJECTED',
      after: { reason: 'NAME_TAKEN', name: input.name },
    });
    return { ok: false, reason: 'NAME_TAKEN', workflowId: holder?.id ?? null };
  };
  try {
    return await transaction(db, 'ENGINE', async (tx) => {
      const taken = await tx.workflow.findFirst({ where: { projectId: by.projectId, name: input.name }, select: { id: true } });
      if (taken) return rejectTaken(tx);
      // createWorkflow opens its own transaction; inside ours, it runs as part of it.
      const created = await createWorkflow(tx, by.projectId, input, by.actor);
      await writeAudit(tx, {
        ...by,
        action: 'workflows.create',
        targetType: 'workflow',
        targetId: created.id,
        outcome: 'APPLIED',
        after: { name: input.name, trigger: input.trigger, triggerEvent: input.triggerEvent ?? null, steps: input.steps.length },
      });
      return { ok: true as const, id: created.id };
    });
  } catch (error) {
    // Two creates with one name at once: both passed the check, the unique index
    // refused the second, and its transaction is gone; audit the refusal on its own.
    if (!isUniqueViolation(error)) throw error;
    return transaction(db, 'ENGINE', rejectTaken);
  }
}

export type SetWorkflowEnabledResult = { ok: true; id: string; enabled: boolean } | { ok: false; reason: 'WORKFLOW_NOT_FOUND' };

/** workflows.setEnabled: enable or disable enrollment into a workflow, audited; executions already running go on. */
export function setWorkflowEnabled(db: Db, by: Acting, workflowId: string, enabled: boolean): Promise<SetWorkflowEnabledResult> {
  return transaction(db, 'ENGINE', async (tx): Promise<SetWorkflowEnabledResult> => {
    const [row] = await tx.$queryRaw<{ id: string; enabled: boolean }[]>`
      -- setWorkflowEnabled
      SELECT id, enabled FROM "Workflow"
       WHERE id = ${workflowId}::uuid AND "projectId" = ${by.projectId}::uuid
       FOR UPDATE`;
    if (!row) {
      await writeAudit(tx, {
        ...by,
        action: 'workflows.setEnabled',
        targetType: 'workflow',
        targetId: workflowId,
        outcome: 'REJECTED',
        after: { reason: 'NOT_FOUND' },
      });
      return { ok: false, reason: 'WORKFLOW_NOT_FOUND' };
    }
    await tx.workflow.update({ where: { id: row.id }, data: { enabled } });
    await writeAudit(tx, {
      ...by,
      action: 'workflows.setEnabled',
      targetType: 'workflow',
      targetId: row.id,
      outcome: 'APPLIED',
      before: { enabled: row.enabled },
      after: { enabled },
    });
    return { ok: true, id: row.id, enabled };
  });
}
