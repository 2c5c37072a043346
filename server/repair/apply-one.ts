import type { Db } from '../db';
import { applyRepair } from './actions';
import type { ApplyResult } from './apply';
import { applyMessageRepair, isMessageRepairAction, type MessageApplyResult, type MessageRepairAction } from './messages';
import type { RepairAction, RepairChoices } from './planner';
import type { RepairOptions, RepairRequest } from './target';

// One repair as the API asks for it (repair.applyOne): an execution's or an event's
// action (actions.ts) or an email's (messages.ts). Each writes its own audit entry in its
// transaction, a target that is not there included (REJECTED, NOT_FOUND).

export interface RepairAsked {
  action: RepairAction | MessageRepairAction;
  executionId?: string | null | undefined;
  eventId?: string | null | undefined;
  /** FORCE_TIMEOUT: time out past an event accepted inside the wait's window (RepairChoices). */
  ignoreInWindowEvents?: boolean | undefined;
  /** MIGRATE (RepairChoices). */
  toVersion?: number | undefined;
  stepMap?: Record<string, string> | undefined;
  allowResend?: boolean | undefined;
}

/** The choices beside the action, as the planner takes them (only those given). */
export function choicesOf(asked: {
  ignoreInWindowEvents?: boolean | undefined;
  toVersion?: number | undefined;
  stepMap?: Record<string, string> | undefined;
  allowResend?: boolean | undefined;
}): RepairChoices {
  const choices: RepairChoices = {};
  if (asked.ignoreInWindowEvents !== undefined) choices.ignoreInWindowEvents = asked.ignoreInWindowEvents;
  if (asked.toVersion !== undefined) choices.toVersion = asked.toVersion;
  if (asked.stepMap !== undefined) choices.stepMap = asked.stepMap;
  if (asked.allowResend !== undefined) choices.allowResend = asked.allowResend;
  return choices;
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
  return { target: 'execution', result };
}
