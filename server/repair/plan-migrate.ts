import { stepByKey, type StepNode, type WorkflowGraph } from '../engine/workflow-graph';
import { heldByLiveWorker, refuse, when, type ExecutionPlanner, type MigrationPlan, type MigrationRefusal, type Plan } from './planner';
import type { ExecutionSnapshot, StepSummary } from './snapshot';

// Planning MIGRATE, pure like the other planners (test/repair/plan-migrate.test.ts): may
// this execution move to the later version, to which step, does its pending wait keep its
// deadline and look-back, and would any email it already sent be sent again?
// docs/versions.md, "Moving executions".

/** What the operator chose for MIGRATE. */
export interface MigrateChoices {
  /** The version to move to; default the latest. */
  toVersion?: number;
  /** For steps whose key the later version lacks (or to move elsewhere): old key → new key. */
  stepMap?: Record<string, string>;
  /** Accept that a step this execution already sent may send again on the new version. */
  allowResend?: boolean;
}

/** A refusal of MIGRATE, with its code (and the move, when the refusal is about what the move would do). */
function refuseMove(code: MigrationRefusal, text: string, migration?: MigrationPlan): Plan {
  return { ...refuse(text), migrationRefusal: code, ...(migration ? { migration } : {}) };
}

const summaryOf = (s: StepNode): StepSummary => ({ id: s.id, key: s.key, name: s.name, type: s.type });

/** Keys of the SEND_EMAIL steps reachable from `from` (itself included). */
export function emailsReachable(graph: WorkflowGraph, from: string): string[] {
  const seen = new Set<string>();
  const keys: string[] = [];
  const walk = (id: string) => {
    if (seen.has(id)) return;
    seen.add(id);
    const step = graph.steps.get(id);
    if (step?.type === 'SEND_EMAIL') keys.push(step.key);
    for (const [edge, to] of graph.transitions) if (edge.startsWith(`${id}:`)) walk(to);
  };
  walk(from);
  return keys;
}

/** How long a step of this type waits (a DELAY's seconds, a WAIT_FOR_EVENT's timeout), or null for a step that does not wait. */
export const waitSeconds = (config: Record<string, unknown>, type: string): number | null => {
  const value = type === 'DELAY' ? config.seconds : type === 'WAIT_FOR_EVENT' ? config.timeoutSeconds : null;
  return typeof value === 'number' ? value : null;
};

/** Does a wait at `from` continue as a wait at `to`: the same kind, and for WAIT_FOR_EVENT the same event? */
function sameWait(from: StepNode, to: StepNode): boolean {
  if (from.type !== to.type) return false;
  if (from.type === 'DELAY') return true;
  return from.type === 'WAIT_FOR_EVENT' && from.config.eventName === to.config.eventName;
}

export const planMigrate: ExecutionPlanner = (execution, graph, now, choices = {}): Plan => {
  const { step, stepRow: row, migration } = execution;
  const asked = choices as MigrateChoices;
  if (execution.status !== 'RUNNING' && execution.status !== 'WAITING') {
    return refuseMove('NOT_ACTIVE', `only a RUNNING or WAITING execution can be moved to another version (it is ${execution.status})`);
  }
  if (!step) return refuseMove('NO_STEP', 'the execution is at no step');
  if (!migration?.to) return refuseMove('NO_VERSION', `the workflow has no version ${asked.toVersion ?? '(latest)'}`);
  const target = migration.to;
  if (target.number <= execution.workflowVersionNumber) {
    return refuseMove('NOT_LATER', `the execution is on version ${execution.workflowVersionNumber}; executions move only to a later version (asked: ${target.number})`);
  }
  if (heldByLiveWorker(execution, now)) {
    return refuseMove('WORKER_HOLDS', `a worker holds "${step.name}" right now (lease until ${row!.leaseExpiresAt!.toISOString()}); wait for it to finish`);
  }
  if (execution.status === 'WAITING' && (row?.status !== 'WAITING' || row.resolvedBy)) {
    return refuseMove(
      'WAIT_RESOLVED',
      row?.resolvedBy
        ? `its wait "${step.name}" was already resolved by ${row.resolvedBy}; let the continuation run (RESUME_CONTINUATION) and move it afterwards`
        : `it is WAITING at "${step.name}" without an open wait`,
    );
  }
  const fromNode = graph.steps.get(step.id);
  if (!fromNode) return refuseMove('NO_STEP', `"${step.name}" is not a step of version ${execution.workflowVersionNumber}`);
  const mapped = asked.stepMap?.[step.key];
  const key = mapped ?? step.key;
  const toNode = stepByKey(target.graph, key);
  if (!toNode) {
    return refuseMove(
      mapped ? 'MAPPED_STEP_GONE' : 'STEP_GONE',
      mapped
        ? `stepMap sends "${step.key}" to "${mapped}", which version ${target.number} does not have`
        : `version ${target.number} has no step "${step.key}" ("${step.name}" was removed): name the step it should move to (stepMap)`,
    );
  }
  if (toNode.type === 'TRIGGER') return refuseMove('TRIGGER', `cannot move an execution back to the TRIGGER step of version ${target.number}`);

  const waiting = execution.status === 'WAITING';
  const keepsWait = waiting && sameWait(fromNode, toNode);
  const dueSeconds = keepsWait ? waitSeconds(toNode.config, toNode.type) : null;
  const start = migration.waitStartedAt;
  const after = keepsWait && start && dueSeconds !== null ? new Date(start.getTime() + dueSeconds * 1000) : null;
  const sent = new Set(migration.sentKeys);
  const resends = emailsReachable(target.graph, toNode.id).filter((k) => sent.has(k));
  const movePlan: MigrationPlan = {
    fromVersion: execution.workflowVersionNumber,
    toVersion: target.number,
    fromStep: { id: step.id, key: step.key, name: step.name, type: step.type },
    toStep: summaryOf(toNode),
    keepsWait,
    deadline: keepsWait ? { before: row?.dueAt ?? null, after } : null,
    lookBackFrom: keepsWait && toNode.type === 'WAIT_FOR_EVENT' ? start : null,
    resends,
  };
  if (resends.length > 0 && !asked.allowResend) {
    return refuseMove(
        'RESEND',
        `moving to "${toNode.name}" of version ${target.number} would send again ${resends.map((k) => `"${k}"`).join(', ')}, already sent to ${execution.contactEmail} by this execution; choose allowResend to accept, or map it further on (stepMap)`,
        movePlan,
    );
  }
  const where = `"${step.name}" (version ${movePlan.fromVersion}) to "${toNode.name}" (version ${target.number})`;
  const resumedNow = keepsWait && toNode.type === 'WAIT_FOR_EVENT' && execution.inWindowEvents.length > 0;
  const waitNote = resumedNow
    ? `; it keeps its wait, and the "${execution.inWindowEvents[0]!.name}" event accepted ${when(execution.inWindowEvents[0]!.createdAt)} inside its window resumes it at once along EVENT on version ${target.number}`
    : keepsWait
    ? `; it keeps waiting${toNode.type === 'WAIT_FOR_EVENT' ? ` for "${String(toNode.config.eventName)}", with events accepted since ${start ? when(start) : 'its start'} still counting` : ''}, deadline ${after ? when(after) : '—'}${row?.dueAt && after && row.dueAt.getTime() !== after.getTime() ? ` (was ${when(row.dueAt)})` : ' (unchanged)'}`
    : waiting
      ? `; its wait "${step.name}" ends unresolved${execution.inWindowEvents.length ? ` (${execution.inWindowEvents.length} event(s) accepted in its window will not resume it)` : ''} and "${toNode.name}" runs now`
      : `; "${toNode.name}" runs next`;
  const emails = emailsReachable(target.graph, toNode.id);
  return {
    allowed: true,
    refusal: null,
    change: `move from ${where}${waitNote}`,
    branch: null,
    nextStep: summaryOf(toNode),
    sideEffect: {
      emailMayBeSent: emails.length > 0,
      existingMessage: null,
      note: resends.length
        ? `would send again (allowed by the operator): ${resends.join(', ')}`
        : emails.length
          ? `emails ahead on version ${target.number}: ${emails.join(', ')} (none of them sent to this contact yet by this execution)`
          : 'no email ahead on the new version',
    },
    migration: movePlan,
  };
};
