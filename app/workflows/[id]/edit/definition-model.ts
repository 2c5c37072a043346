import { BRANCHES, type StepType } from '@/server/common/workflow-definition';
import type { VersionDefinition, VersionStep } from '../../_components/versions';

// The editor's changes to a definition, as pure functions (the canvas, the side form and
// the tests all call these): a step added (connected after the selected one when it has
// a free branch), removed with its connections, connected (a step leaves by each branch
// at most once, so connecting a branch again moves it), disconnected, edited.

export const TYPE_LABEL: Record<StepType, string> = {
  TRIGGER: 'Trigger',
  SEND_EMAIL: 'Send email',
  DELAY: 'Delay',
  WAIT_FOR_EVENT: 'Wait for event',
  CONDITION: 'Condition',
  UPDATE_CONTACT: 'Update contact',
  EXIT: 'Exit',
};

/** What a marketer may add (there is exactly one trigger, already there). */
export const ADDABLE: readonly StepType[] = ['SEND_EMAIL', 'DELAY', 'WAIT_FOR_EVENT', 'CONDITION', 'UPDATE_CONTACT', 'EXIT'];

export function branchesOf(type: string): readonly (string | null)[] {
  return BRANCHES[type as StepType] ?? [null];
}

/** A new step's config: a starting point the form then fills in (an email's subject and body start empty, so they are asked for). */
export function defaultConfig(type: StepType): Record<string, unknown> {
  switch (type) {
    case 'SEND_EMAIL':
      return { subject: '', body: '' };
    case 'DELAY':
      return { seconds: 86400 };
    case 'WAIT_FOR_EVENT':
      return { eventName: '', timeoutSeconds: 3 * 86400 };
    case 'CONDITION':
      return { field: 'contact.data.plan', op: 'eq', value: '' };
    case 'UPDATE_CONTACT':
      return { set: { '': '' } };
    case 'EXIT':
      return {};
    case 'TRIGGER':
      return {};
  }
}

/** `send_email_2`: the type's name and the first number no step uses. */
export function newKey(def: VersionDefinition, type: StepType): string {
  const base = type.toLowerCase();
  const taken = new Set(def.steps.map((s) => s.key));
  for (let n = 1; ; n++) {
    const key = `${base}_${n}`;
    if (!taken.has(key)) return key;
  }
}

/** The branches of a step that lead nowhere yet. */
export function openBranches(def: VersionDefinition, key: string): (string | null)[] {
  const step = def.steps.find((s) => s.key === key);
  if (!step) return [];
  return branchesOf(step.type).filter((b) => !def.transitions.some((t) => t.from === key && t.branch === b));
}

/** Would an edge from → to close a cycle (is `from` reachable from `to`)? */
export function wouldCycle(def: VersionDefinition, from: string, to: string): boolean {
  if (from === to) return true;
  const next = new Map<string, string[]>();
  for (const t of def.transitions) next.set(t.from, [...(next.get(t.from) ?? []), t.to]);
  const seen = new Set<string>();
  const stack = [to];
  while (stack.length) {
    const k = stack.pop()!;
    if (k === from) return true;
    if (seen.has(k)) continue;
    seen.add(k);
    stack.push(...(next.get(k) ?? []));
  }
  return false;
}

/** Why from → to cannot be drawn, or null when it can. */
export function connectRefusal(def: VersionDefinition, from: string, to: string): string | null {
  const target = def.steps.find((s) => s.key === to);
  if (!target) return 'no such step';
  if (target.type === 'TRIGGER') return 'nothing may lead into the trigger';
  if (from === to) return 'a step cannot lead to itself';
  if (wouldCycle(def, from, to)) return 'that would make a loop (workflows run one way)';
  return null;
}

export function addStep(def: VersionDefinition, type: StepType, after: string | null): { def: VersionDefinition; key: string } {
  const key = newKey(def, type);
  const step: VersionStep = { key, type, name: TYPE_LABEL[type], config: defaultConfig(type) };
  let transitions = def.transitions;
  if (after) {
    const [branch] = openBranches(def, after);
    if (branch !== undefined) transitions = [...transitions, { from: after, to: key, branch }];
  }
  return { def: { steps: [...def.steps, step], transitions }, key };
}

export function removeStep(def: VersionDefinition, key: string): VersionDefinition {
  return { steps: def.steps.filter((s) => s.key !== key), transitions: def.transitions.filter((t) => t.from !== key && t.to !== key) };
}

/** Connect `from`'s branch to `to` (or disconnect it, `to` null); a branch already drawn is moved. */
export function connect(def: VersionDefinition, from: string, branch: string | null, to: string | null): VersionDefinition {
  const rest = def.transitions.filter((t) => !(t.from === from && t.branch === branch));
  return { steps: def.steps, transitions: to === null ? rest : [...rest, { from, to, branch }] };
}

export function updateStep(def: VersionDefinition, key: string, patch: Partial<Pick<VersionStep, 'key' | 'name' | 'config'>>): VersionDefinition {
  const renamed = patch.key !== undefined && patch.key !== key ? patch.key : null;
  return {
    steps: def.steps.map((s) => (s.key === key ? { ...s, ...patch } : s)),
    transitions: renamed
      ? def.transitions.map((t) => ({ ...t, from: t.from === key ? renamed : t.from, to: t.to === key ? renamed : t.to }))
      : def.transitions,
  };
}

/** Two definitions the same (what "unsaved changes" compares). */
export function sameDefinition(a: VersionDefinition, b: VersionDefinition): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
