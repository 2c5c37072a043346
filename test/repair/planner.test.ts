import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import type { WorkflowGraph } from '../../server/engine/workflow-graph';
import { claimMayMove, TRANSITIONS } from '../../server/engine/transitions';
import { planAction } from '../../server/repair/actions';
import { ACTION_CLAIMS, planCancel, planRetryStep, planSkipStep, planWaitResolution, planResumeContinuation, REPAIR_ACTIONS, type RepairAction } from '../../server/repair/planner';
import { REPAIRS } from '../../server/repair/actions';
import type { ExecutionSnapshot, StepRowSummary } from '../../server/repair/snapshot';

// The repair planner on its own, no database: every execution state an operator meets ×
// every execution action, allowed or
// refused, and for the actions backed by an operator claim (retry, skip, cancel) the
// planner says yes only where the transitions table — which the claims' SQL reads — does.

const NOW = new Date('2026-12-01T12:00:00Z');
const LATER = new Date(NOW.getTime() + 60_000);
const EARLIER = new Date(NOW.getTime() - 60_000);

const step = (id: string, type: string, name = id) => ({ id, key: id, name, type: type as never, config: {} });
// start -> mail -> wait (EVENT: pause -> last, TIMEOUT: last)
const graph: WorkflowGraph = {
  id: 'wf',
  projectId: 'p',
  name: 'Journey',
  enabled: true,
  trigger: 'MANUAL',
  triggerEvent: null,
  allowReentry: true,
  versionId: 'v1',
  versionNumber: 1,
  latestVersion: 1,
  triggerStepId: 'start',
  steps: new Map(
    [step('start', 'TRIGGER'), step('mail', 'SEND_EMAIL'), step('wait', 'WAIT_FOR_EVENT'), step('pause', 'DELAY'), step('last', 'SEND_EMAIL')].map((s) => [s.id, s]),
  ),
  transitions: new Map([
    ['start:', 'mail'],
    ['mail:', 'wait'],
    ['wait:EVENT', 'pause'],
    ['wait:TIMEOUT', 'last'],
    ['pause:', 'last'],
  ]),
};

interface State {
  status: string;
  at: string;
  row: Partial<StepRowSummary> | null;
  sibling?: string;
}

function snapshot(s: State): ExecutionSnapshot {
  const node = graph.steps.get(s.at)!;
  return {
    kind: 'execution',
    id: 'x',
    projectId: 'p',
    workflowId: 'wf',
    workflowVersionId: graph.versionId,
    workflowVersionNumber: graph.versionNumber,
    workflowName: graph.name,
    contactId: 'c',
    contactEmail: 'c@example.com',
    status: s.status,
    version: 7,
    updatedAt: EARLIER,
    step: { id: node.id, key: node.key, name: node.name, type: node.type },
    stepRow: s.row
      ? {
          id: 'row',
          status: 'RUNNING',
          attempt: 1,
          leaseExpiresAt: null,
          dueAt: null,
          resolvedBy: null,
          resolvedAt: null,
          resolvedBranch: null,
          error: null,
          ...s.row,
        }
      : null,
    message: null,
    stuck: [],
    inWindowEvents: [],
    activeExecutionId: s.sibling ?? null,
  };
}

const STATES: Record<string, State> = {
  'RUNNING, never claimed (MISSING_STEP)': { status: 'RUNNING', at: 'mail', row: null },
  'RUNNING, a live worker holds it': { status: 'RUNNING', at: 'mail', row: { status: 'RUNNING', leaseExpiresAt: LATER } },
  'RUNNING, lease expired (LEASE_EXPIRED)': { status: 'RUNNING', at: 'mail', row: { status: 'RUNNING', leaseExpiresAt: EARLIER } },
  'RUNNING, waiting for a retry backoff': { status: 'RUNNING', at: 'mail', row: { status: 'FAILED' } },
  'RUNNING, operator reset it (PENDING)': { status: 'RUNNING', at: 'mail', row: { status: 'PENDING' } },
  'RUNNING, its step row COMPLETED (not claimable)': { status: 'RUNNING', at: 'mail', row: { status: 'COMPLETED' } },
  'WAITING on an event': { status: 'WAITING', at: 'wait', row: { status: 'WAITING', dueAt: LATER } },
  'WAITING, wait resolved (CONTINUATION_PENDING)': { status: 'WAITING', at: 'wait', row: { status: 'WAITING', resolvedBy: 'TIMEOUT', resolvedAt: EARLIER, resolvedBranch: 'TIMEOUT' } },
  'WAITING on a DELAY': { status: 'WAITING', at: 'pause', row: { status: 'WAITING', dueAt: LATER } },
  'WAITING on a DELAY, resolved': { status: 'WAITING', at: 'pause', row: { status: 'WAITING', resolvedBy: 'TIMEOUT', resolvedAt: EARLIER } },
  FAILED: { status: 'FAILED', at: 'mail', row: { status: 'FAILED', error: 'boom' } },
  'FAILED, contact re-enrolled (active sibling)': { status: 'FAILED', at: 'mail', row: { status: 'FAILED' }, sibling: 'sibling-1' },
  'FAILED at the last step, active sibling': { status: 'FAILED', at: 'last', row: { status: 'FAILED' }, sibling: 'sibling-2' },
  'FAILED with a COMPLETED step row (unclaimable)': { status: 'FAILED', at: 'mail', row: { status: 'COMPLETED' } },
  COMPLETED: { status: 'COMPLETED', at: 'last', row: { status: 'COMPLETED' } },
  EXITED: { status: 'EXITED', at: 'last', row: { status: 'COMPLETED' } },
  CANCELLED: { status: 'CANCELLED', at: 'mail', row: { status: 'SKIPPED' } },
};

const ACTIONS = ['RESUME_CONTINUATION', 'FORCE_TIMEOUT', 'DELIVER_EVENT', 'RETRY_STEP', 'SKIP_STEP', 'CANCEL'] as const satisfies readonly RepairAction[];
type Verdict = 'yes' | 'no' | 'I1';
const row = (resume: Verdict, timeout: Verdict, deliver: Verdict, retry: Verdict, skip: Verdict, cancel: Verdict) => [resume, timeout, deliver, retry, skip, cancel];

// yes: allowed; no: refused; I1: refused because it would make a second active execution.
//                                                                    resume timeout deliver retry skip  cancel
const EXPECTED: Record<keyof typeof STATES, Verdict[]> = {
  'RUNNING, never claimed (MISSING_STEP)':                        row('no', 'no',  'no',  'yes', 'yes', 'yes'),
  'RUNNING, a live worker holds it':                              row('no', 'no',  'no',  'no',  'no',  'yes'),
  'RUNNING, lease expired (LEASE_EXPIRED)':                       row('no', 'no',  'no',  'yes', 'yes', 'yes'),
  'RUNNING, waiting for a retry backoff':                         row('no', 'no',  'no',  'yes', 'yes', 'yes'),
  'RUNNING, operator reset it (PENDING)':                         row('no', 'no',  'no',  'yes', 'yes', 'yes'),
  'RUNNING, its step row COMPLETED (not claimable)':              row('no', 'no',  'no',  'no',  'no',  'yes'),
  'WAITING on an event':                                          row('no', 'yes', 'yes', 'no',  'no',  'yes'),
  'WAITING, wait resolved (CONTINUATION_PENDING)':                row('yes','no',  'no',  'no',  'no',  'yes'),
  'WAITING on a DELAY':                                           row('no', 'yes', 'no',  'no',  'yes', 'yes'),
  'WAITING on a DELAY, resolved':                                 row('yes','no',  'no',  'no',  'no',  'yes'),
  FAILED:                                                         row('no', 'no',  'no',  'yes', 'yes', 'yes'),
  'FAILED, contact re-enrolled (active sibling)':                 row('no', 'no',  'no',  'I1',  'I1',  'yes'),
  'FAILED at the last step, active sibling':                      row('no', 'no',  'no',  'I1',  'yes', 'yes'),
  'FAILED with a COMPLETED step row (unclaimable)':               row('no', 'no',  'no',  'no',  'no',  'yes'),
  COMPLETED:                                                      row('no', 'no',  'no',  'no',  'no',  'no'),
  EXITED:                                                         row('no', 'no',  'no',  'no',  'no',  'no'),
  CANCELLED:                                                      row('no', 'no',  'no',  'no',  'no',  'no'),
};

const cases = Object.entries(STATES).flatMap(([name, state]) =>
  ACTIONS.map((action, i) => [name, action, EXPECTED[name]![i]!, state] as const),
);

describe('planAction: state × action', () => {
  it.each(cases)('%s × %s → %s', (_name, action, verdict, state) => {
    const x = snapshot(state);
    const plan = planAction(action, x, graph, NOW);
    expect(plan.allowed, plan.refusal ?? plan.change).toBe(verdict === 'yes');
    if (verdict === 'yes') {
      expect(plan.refusal).toBeNull();
      expect(plan.conflict ?? null).toBeNull();
    } else {
      expect(plan.refusal).toEqual(expect.any(String));
      expect(plan.change).toBe('nothing');
    }
    if (verdict === 'I1') {
      expect(plan.conflict).toEqual({ reason: 'ACTIVE_EXECUTION', executionId: state.sibling });
      expect(plan.refusal).toContain(state.sibling);
    } else {
      expect(plan.conflict ?? null).toBeNull();
    }
  });

  // The property the table exists for: where the planner allows an action backed by an
  // operator claim, the claim's from-statuses (the same table its SQL reads) allow it too,
  // and where the table says no, the planner refuses.
  it.each(Object.entries(ACTION_CLAIMS))('%s agrees with TRANSITIONS.%s in every state', (action, claim) => {
    for (const [name, state] of Object.entries(STATES)) {
      const x = snapshot(state);
      const plan = planAction(action as RepairAction, x, graph, NOW);
      const table = claimMayMove(claim, x.status, x.stepRow?.status ?? null);
      if (plan.allowed) expect(table, `${name}: planner allows ${action}, table forbids ${claim}`).toBe(true);
      if (!table) expect(plan.allowed, `${name}: table forbids ${claim}, planner allows ${action}`).toBe(false);
    }
    expect(TRANSITIONS[claim].execution.from.length).toBeGreaterThan(0);
  });

  it('REDRIVE_EVENT is planned on events, not executions', () => {
    expect(planAction('REDRIVE_EVENT', snapshot(STATES.FAILED!), graph, NOW)).toMatchObject({ allowed: false });
    const event = { kind: 'event' as const, id: 'e', projectId: 'p', name: 'purchase', contactId: 'c', version: 8, processedAt: null, deadAt: EARLIER, lastError: 'x', leaseExpiresAt: null };
    expect(planAction('REDRIVE_EVENT', event, null, NOW)).toMatchObject({ allowed: true });
    expect(planAction('REDRIVE_EVENT', { ...event, processedAt: EARLIER }, null, NOW)).toMatchObject({ allowed: false });
    expect(planAction('REDRIVE_EVENT', { ...event, leaseExpiresAt: LATER }, null, NOW)).toMatchObject({ allowed: false });
  });
});

describe('the planner on its own', () => {
  // What "pure" means here: the planner's module, and every module it loads at run time,
  // never loads the database client. Type-only imports are erased, so they do not count.
  it('loads nothing that reaches the database', () => {
    const ROOT = path.resolve(import.meta.dirname, '../..');
    const seen = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest);
      for (const s of source.statements) {
        if (!ts.isImportDeclaration(s) && !ts.isExportDeclaration(s)) continue;
        if (!s.moduleSpecifier || !ts.isStringLiteral(s.moduleSpecifier) || !s.moduleSpecifier.text.startsWith('.')) continue;
        if (ts.isImportDeclaration(s)) {
          const clause = s.importClause;
          const named = clause?.namedBindings && ts.isNamedImports(clause.namedBindings) ? clause.namedBindings.elements : null;
          if (clause?.isTypeOnly || (clause && !clause.name && named && named.every((e) => e.isTypeOnly))) continue;
        } else if (s.isTypeOnly) continue;
        const base = path.resolve(path.dirname(file), s.moduleSpecifier.text);
        visit([`${base}.ts`, path.join(base, 'index.ts')].find((f) => existsSync(f))!);
      }
    };
    visit(path.join(ROOT, 'server/repair/planner.ts'));
    const loaded = [...seen].map((f) => path.relative(ROOT, f));
    expect(loaded).toContain('server/engine/transitions.ts');
    expect(loaded.filter((f) => f.startsWith('server/db/') || f.startsWith('server/generated/prisma/client'))).toEqual([]);
  });

  it('every action has one entry: its planner, its applier and how its loss is explained', () => {
    expect(Object.keys(REPAIRS).sort()).toEqual([...REPAIR_ACTIONS].sort());
    for (const repair of Object.values(REPAIRS)) {
      expect(typeof repair.plan).toBe('function');
      expect(typeof repair.apply).toBe('function');
      expect(typeof repair.explain).toBe('function');
    }
    expect(REPAIRS.REDRIVE_EVENT.target).toBe('event');
  });

  it('an execution action on a tracked event is refused, naming what it needs', () => {
    const event = { kind: 'event' as const, id: 'e', projectId: 'p', name: 'purchase', contactId: 'c', version: 1, processedAt: null, deadAt: null, lastError: null, leaseExpiresAt: null };
    for (const action of ACTIONS) {
      expect(planAction(action, event, graph, NOW)).toMatchObject({ allowed: false, refusal: `${action} applies to an execution; give its executionId`, change: 'nothing' });
    }
  });

  it('resolving a wait by hand follows the branch the operator names, and says whether the next step sends an email', () => {
    const waiting = snapshot(STATES['WAITING on an event']!);
    expect(planWaitResolution('TIMEOUT')(waiting, graph, NOW)).toMatchObject({
      allowed: true,
      branch: 'TIMEOUT',
      nextStep: { id: 'last' },
      sideEffect: { emailMayBeSent: false, note: 'the next step "last" sends an email (once)' },
    });
    expect(planWaitResolution('EVENT')(waiting, graph, NOW)).toMatchObject({ allowed: true, branch: 'EVENT', nextStep: { id: 'pause' }, sideEffect: { note: 'the next step sends no email' } });
    // A DELAY has one way on, whatever was asked.
    expect(planWaitResolution('TIMEOUT')(snapshot(STATES['WAITING on a DELAY']!), graph, NOW)).toMatchObject({ allowed: true, branch: null, nextStep: { id: 'last' } });
    expect(planResumeContinuation(snapshot(STATES['WAITING, wait resolved (CONTINUATION_PENDING)']!), graph, NOW)).toMatchObject({ allowed: true, branch: 'TIMEOUT', nextStep: { id: 'last' } });
  });

  it("a retry sends a step's email only if none was queued yet (I5)", () => {
    const failed = snapshot(STATES.FAILED!);
    expect(planRetryStep(failed, graph, NOW)).toMatchObject({ allowed: true, sideEffect: { emailMayBeSent: true, existingMessage: null } });
    const message = { id: 'm', status: 'SENT', subject: 'Hi', sentAt: EARLIER, createdAt: EARLIER };
    const plan = planRetryStep({ ...failed, message }, graph, NOW);
    expect(plan).toMatchObject({ allowed: true, sideEffect: { emailMayBeSent: false, existingMessage: message } });
    expect(plan.sideEffect.note).toContain('will NOT be sent again');
    expect(planSkipStep({ ...failed, message }, graph, NOW)).toMatchObject({ allowed: true, nextStep: { id: 'wait' }, sideEffect: { emailMayBeSent: false, existingMessage: message } });
  });

  it('cancelling a step a live worker holds says its result will be discarded', () => {
    const plan = planCancel(snapshot(STATES['RUNNING, a live worker holds it']!), graph, NOW);
    expect(plan.allowed).toBe(true);
    expect(plan.change).toContain('its result will be discarded');
    expect(planCancel(snapshot(STATES['RUNNING, lease expired (LEASE_EXPIRED)']!), graph, NOW).change).not.toContain('discarded');
  });
});
