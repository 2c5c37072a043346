import { transaction, type Db } from '../db';
import { writeAudit } from '../engine/audit';

import { applyRepair } from './actions';
import type { ApplyResult } from './apply';
import { applyMessageRepair, isMessageRepairAction, type MessageApplyResult, type MessageRepairAction } from './messages';
import type { RepairAction, RepairChoices } from './planner';
import type { RepairOptions, RepairRequest } from './target';

// One repair as the API asks for it (repair.applyOne): an execution's or an event's
// action (actions.ts) or an email's (messages.ts). The repair writes its own audit entry
// in its transaction; when its target is not there that transaction is gone, so the
// refused attempt is recorded here, on its own, before the caller answers NOT_FOUND.

export interface RepairAsked {
  action: RepairAction | MessageRepairAction;
  executionId?: string | null | undefined;
  eventId?: string | null | undefined;
  /** FORCE_TIMEOUT: time out past an event accepted inside the wait's window (RepairChoices). */
  ignoreInWindowEvents?: boolean | undefined;
}

/** The choices beside the action, as the planner takes them. */
export function choicesOf(asked: { ignoreInWindowEvents?: boolean | undefined }): RepairChoices {
  return asked.ignoreInWindowEvents !== undefined ? { ignoreInWindowEvents: asked.ignoreInWindowEvents } : {};
}

/** An execution's or an event's repair request (REDRIVE_EVENT aims at its event only). */
export function repairRequestOf(projectId: string, asked: RepairAsked): RepairRequest {
  if (isMessageRepairAction(asked.action)) throw new Error(`${asked.action} is a message repair`);
  return {
    projectId,
    action: asked.action,
    executionId: asked.action === 'REDRIVE_EVENT' ? null : (asked.executionId ?? null),
    eventId: asked.eventId ?? null,
    choices: choicesOf(asked),
  };
}

export interface ApplyOneRequest extends RepairAsked {
  projectId: string;
  actor: string;
  messageId?: string | null | undefined;
  expectedVersion: number;
  reason: string;
  providerId?: string | null | undefined;
  /** The step execution the preview looked at; undefined: not checked. */
  expectedStepExecutionId?: string | null | undefined;
}

export type ApplyOneResult = { target: 'message'; result: MessageApplyResult } | { target: 'execution'; result: ApplyResult };

export async function applyOneRepair(db: Db, req: ApplyOneRequest, opts: RepairOptions): Promise<ApplyOneResult> {
  const notFound = async (targetType: string, targetId: string, message: string) => {
    await transaction(db, 'ENGINE', (tx) =>
      writeAudit(tx, {
        projectId: req.projectId,
        actor: req.actor,
        action: `repair.${req.action}`,
        targetType,
        targetId,
        outcome: 'REJECTED',
        reason: req.reason,
        after: { reason: 'NOT_FOUND', message },
      }),
    );
  };
  if (isMessageRepairAction(req.action)) {
    const result = await applyMessageRepair(db, {
      projectId: req.projectId,
      action: req.action,
      messageId: req.messageId!,
      actor: req.actor,
      expectedVersion: req.expectedVersion,
      reason: req.reason,
      providerId: req.providerId ?? null,
    });
    if (!result.ok && result.code === 'NOT_FOUND') await notFound('message', req.messageId!, result.message);
    return { target: 'message', result };
  }
  const result = await applyRepair(
    db,
    {
      ...repairRequestOf(req.projectId, req),
      actor: req.actor,
      expectedVersion: req.expectedVersion,
      reason: req.reason,
      ...(req.expectedStepExecutionId !== undefined ? { expectedStepExecutionId: req.expectedStepExecutionId } : {}),
    },
    opts,
  );
  if (!result.ok && result.code === 'NOT_FOUND') {
    const redrive = req.action === 'REDRIVE_EVENT';
    await notFound(redrive ? 'event' : 'execution', (redrive ? req.eventId : req.executionId) ?? '', result.message);
  }
  return { target: 'execution', result };
}
