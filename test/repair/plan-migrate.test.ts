import { describe, expect, it } from 'vitest';
import type { StepNode, WorkflowGraph } from '../../server/engine/workflow-graph';
import { emailsReachable, planMigrate } from '../../server/repair/plan-migrate';
import type { ExecutionSnapshot, StepRowSummary } from '../../server/repair/snapshot';

// MIGRATE's planner on its own, no database (server/repair/plan-migrate.ts): which step,
// whether the wait is kept, re-sends, and each refusal with its code.

const NOW = new Date('2026-12-07T12:00:00Z');
const START = new Date('2026-12-07T11:00:00Z');

function graph(version: number, steps: [string, string, Record<string, unknown>?][], edges: [string, string, string?][]): WorkflowGraph {
  const id = (key: string) => `v${version}-${key}`;
  const nodes: StepNode[] = steps.map(([key, type, config]) => ({ id: id(key), key, name: key.toUpperCase(), type: type as never, config: config ?? {} }));
  return {
    id: 'wf',
    projectId: 'p',
    name: 'Journey',
    enabled: true,
    trigger: 'MANUAL',
    triggerEvent: null,
    allowReentry: true,
    versionId: `version-${version}`,
    versionNumber: version,
    latestVersion: 2,
    triggerStepId: id('start'),
    steps: new Map(nodes.map((n) => [n.id, n])),
    transitions: new Map(edges.map(([from, to, branch]) => [`${id(from)}:${branch ?? ''}`, id(to)])),
  };
}

const v1 = graph(
  1,
  [['start', 'TRIGGER'], ['hello', 'SEND_EMAIL'], ['pause', 'DELAY', { seconds: 3600 }], ['wait', 'WAIT_FOR_EVENT', { eventName: 'ping', timeoutSeconds: 3600 }], ['yay', 'SEND_EMAIL']],
  [['start', 'hello'], ['hello', 'pause'], ['pause', 'wait'], ['wait', 'yay', 'EVENT']],
);
const v2 = graph(
  2,
  [['start', 'TRIGGER'], ['hello', 'SEND_EMAIL'], ['wait', 'WAIT_FOR_EVENT', { eventName: 'ping', timeoutSeconds: 7200 }], ['other', 'WAIT_FOR_EVENT', { eventName: 'pong', timeoutSeconds: 60 }], ['yay', 'SEND_EMAIL']],
  [['start', 'hello'], ['hello', 'wait'], ['wait', 'yay', 'EVENT'], ['wait', 'other', 'TIMEOUT']],
);

function at(key: string, status: string, row: Partial<StepRowSummary> | null, sentKeys: string[] = [], to: WorkflowGraph | null = v2): ExecutionSnapshot {
  const node = [...v1.steps.values()].find((s) => s.key === key)!;
  return {
    kind: 'execution',
    id: 'x',
    projectId: 'p',
    workflowId: 'wf',
    workflowVersionId: v1.versionId,
    workflowVersionNumber: 1,
    workflowName: 'Journey',
    contactId: 'c',
    contactEmail: 'c@example.com',
    status,
    version: 4,
    updatedAt: START,
    step: { id: node.id, key: node.key, name: node.name, type: node.type },
    stepRow: row
      ? { id: 'row', status: 'WAITING', attempt: 1, leaseExpiresAt: null, dueAt: new Date(START.getTime() + 3600_000), resolvedBy: null, resolvedAt: null, resolvedBranch: null, error: null, ...row }
      : null,
    message: null,
    stuck: [],
    inWindowEvents: [],
    activeExecutionId: null,
    migration: { to: to ? { number: to.versionNumber, graph: to } : null, sentKeys, waitStartedAt: row ? START : null },
  };
}

describe('planMigrate', () => {
  it('keeps a wait on the same event: its window start, the new timeout', () => {
    const plan = planMigrate(at('wait', 'WAITING', {}, ['hello']), v1, NOW, {});
    expect(plan.allowed).toBe(true);
    expect(plan.migration).toMatchObject({ fromVersion: 1, toVersion: 2, toStep: { key: 'wait' }, keepsWait: true, lookBackFrom: START, resends: [] });
    expect(plan.migration!.deadline!.after!.getTime()).toBe(START.getTime() + 7200_000);
    expect(plan.change).toMatch(/keeps waiting for "ping".*was /);
  });

  it('ends a wait mapped to a wait on another event, or to a step that does not wait', () => {
    const other = planMigrate(at('wait', 'WAITING', {}), v1, NOW, { stepMap: { wait: 'other' } });
    expect(other).toMatchObject({ allowed: true, migration: { keepsWait: false, toStep: { key: 'other' } } });
    expect(other.change).toMatch(/ends unresolved/);
    const delay = planMigrate(at('pause', 'WAITING', {}), v1, NOW, { stepMap: { pause: 'wait' } });
    expect(delay).toMatchObject({ allowed: true, migration: { keepsWait: false } });
  });

  it.each([
    ['a step the later version lacks', at('pause', 'WAITING', {}), {}, 'STEP_GONE'],
    ['a mapped step that does not exist', at('pause', 'WAITING', {}), { stepMap: { pause: 'nope' } }, 'MAPPED_STEP_GONE'],
    ['the TRIGGER', at('pause', 'WAITING', {}), { stepMap: { pause: 'start' } }, 'TRIGGER'],
    ['a re-send', at('pause', 'WAITING', {}, ['hello']), { stepMap: { pause: 'hello' } }, 'RESEND'],
    ['a resolved wait', at('wait', 'WAITING', { resolvedBy: 'EVENT' }), {}, 'WAIT_RESOLVED'],
    ['a live lease', at('hello', 'RUNNING', { status: 'RUNNING', leaseExpiresAt: new Date(NOW.getTime() + 30_000) }), {}, 'WORKER_HOLDS'],
    ['a finished execution', at('yay', 'COMPLETED', null), {}, 'NOT_ACTIVE'],
    ['no such version', at('wait', 'WAITING', {}, [], null), { toVersion: 5 }, 'NO_VERSION'],
    ['the same version', at('wait', 'WAITING', {}, [], v1), { toVersion: 1 }, 'NOT_LATER'],
  ] as const)('refuses %s', (_, snapshot, choices, code) => {
    const plan = planMigrate(snapshot, v1, NOW, choices);
    expect(plan).toMatchObject({ allowed: false, migrationRefusal: code });
    expect(plan.refusal!.length).toBeGreaterThan(10);
  });

  it('allows a re-send the operator accepts, and says so', () => {
    const plan = planMigrate(at('pause', 'WAITING', {}, ['hello']), v1, NOW, { stepMap: { pause: 'hello' }, allowResend: true });
    expect(plan).toMatchObject({ allowed: true, migration: { resends: ['hello'] }, sideEffect: { emailMayBeSent: true } });
  });

  it('finds the emails reachable from a step, along every branch', () => {
    expect(emailsReachable(v2, 'v2-hello').sort()).toEqual(['hello', 'yay']);
    expect(emailsReachable(v2, 'v2-other')).toEqual([]);
  });
});
