import { graphIssues, stepConfigSchemas, stepInput, storableWorkflowInput, transitionInput, type StepType } from '@/server/common/workflow-definition';
import type { VersionDefinition } from '../../_components/versions';

// The editor's checks are the server's own schemas (server/common/workflow-definition.ts,
// zod only): each step's config, key and name, each transition, the graph rules, and the
// whole workflow as workflows.create stores it. Each issue lands where the marketer can
// fix it: a step's field (`config.subject`), a step's branch (`goes.yes`), the step as a
// whole (unreachable), or the definition (no trigger, a loop).

export interface FieldIssue {
  /** '' the step as a whole; 'name', 'key'; 'config.subject'; 'goes.<branch|next>' its connection. */
  field: string;
  message: string;
}

export interface EditorIssues {
  byStep: Map<string, FieldIssue[]>;
  general: { path: string; message: string }[];
  count: number;
  /** What publish will accept (modulo what changed on the server meanwhile). */
  ok: boolean;
}

export interface WorkflowFrame {
  name: string;
  trigger: 'EVENT' | 'MANUAL';
  triggerEvent: string | null;
  allowReentry: boolean;
}

type Path = readonly PropertyKey[];

/** Place an issue at its path into the definition (`steps.2.config.subject`, `transitions.4.to`, `steps`). */
export function placeIssue(def: VersionDefinition, path: Path | string, message: string, into: EditorIssues): void {
  const parts = typeof path === 'string' ? (path === '' ? [] : path.split('.')) : path.map(String);
  const add = (key: string, field: string) => {
    const list = into.byStep.get(key) ?? [];
    if (list.some((i) => i.field === field && i.message === message)) return;
    list.push({ field, message });
    into.byStep.set(key, list);
    into.count++;
  };
  const index = parts[1] !== undefined && /^\d+$/.test(parts[1]) ? Number(parts[1]) : null;
  if (parts[0] === 'steps' && index !== null && def.steps[index]) {
    return add(def.steps[index].key, parts.slice(2).join('.'));
  }
  if (parts[0] === 'transitions' && index !== null && def.transitions[index]) {
    const t = def.transitions[index];
    return add(t.from, `goes.${t.branch ?? 'next'}`);
  }
  const shown = parts.join('.') || '(definition)';
  if (into.general.some((g) => g.path === shown && g.message === message)) return;
  into.general.push({ path: shown, message });
  into.count++;
}

export function validateVersion(def: VersionDefinition, frame: WorkflowFrame): EditorIssues {
  const issues: EditorIssues = { byStep: new Map(), general: [], count: 0, ok: false };
  def.steps.forEach((step, i) => {
    const base = stepInput.safeParse(step);
    if (!base.success) for (const issue of base.error.issues) placeIssue(def, ['steps', i, ...issue.path], issue.message, issues);
    const schema = stepConfigSchemas[step.type as StepType];
    const config = schema?.safeParse(step.config);
    if (config && !config.success) for (const issue of config.error.issues) placeIssue(def, ['steps', i, 'config', ...issue.path], issue.message, issues);
  });
  def.transitions.forEach((t, i) => {
    const parsed = transitionInput.safeParse(t);
    if (!parsed.success) for (const issue of parsed.error.issues) placeIssue(def, ['transitions', i, ...issue.path], issue.message, issues);
  });
  const known = def.steps.every((s) => s.type in stepConfigSchemas);
  if (known) {
    const graph = graphIssues({
      trigger: frame.trigger,
      triggerEvent: frame.triggerEvent ?? undefined,
      steps: def.steps.map((s) => ({ key: s.key, type: s.type as StepType, config: s.config })),
      transitions: def.transitions,
    });
    for (const issue of graph) placeIssue(def, issue.path, issue.message, issues);
  }
  const whole = storableWorkflowInput.safeParse({
    name: frame.name,
    trigger: frame.trigger,
    ...(frame.triggerEvent ? { triggerEvent: frame.triggerEvent } : {}),
    allowReentry: frame.allowReentry,
    steps: def.steps,
    transitions: def.transitions,
  });
  if (!whole.success) for (const issue of whole.error.issues) placeIssue(def, issue.path, issue.message, issues);
  issues.ok = whole.success && issues.count === 0;
  return issues;
}

/** The issues of one field of a step ('config.subject', or a prefix such as 'config.set'). */
export function issuesAt(list: FieldIssue[] | undefined, field: string, prefix = false): string[] {
  return (list ?? []).filter((i) => (prefix ? i.field === field || i.field.startsWith(`${field}.`) : i.field === field)).map((i) => i.message);
}
