import type { VersionDefinition } from './version-definition';

// What changes between two versions of a workflow, step by step. A step's identity across
// versions is its key (docs/versions.md): same key, same step, whatever else changed.

export interface DiffStep {
  key: string;
  type: string;
  name: string;
}

export interface ChangedStep extends DiffStep {
  /** What differs: 'type', 'name', 'config.<field>', 'next' or 'next.<branch>'. */
  fields: string[];
}

export interface DefinitionDiff {
  added: DiffStep[];
  removed: DiffStep[];
  changed: ChangedStep[];
  unchanged: number;
}

type Definition = Pick<VersionDefinition, 'steps' | 'transitions'>;

function outgoing(def: Definition, key: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const t of def.transitions) if (t.from === key) out.set(t.branch ?? '', t.to);
  return out;
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

/** The steps added, removed and changed going from `before` to `after`, each in `after`'s (or `before`'s) order. */
export function diffDefinitions(before: Definition, after: Definition): DefinitionDiff {
  const old = new Map(before.steps.map((s) => [s.key, s]));
  const now = new Map(after.steps.map((s) => [s.key, s]));
  const diff: DefinitionDiff = { added: [], removed: [], changed: [], unchanged: 0 };
  for (const step of after.steps) {
    const was = old.get(step.key);
    if (!was) {
      diff.added.push({ key: step.key, type: step.type, name: step.name });
      continue;
    }
    const fields: string[] = [];
    if (was.type !== step.type) fields.push('type');
    if (was.name !== step.name) fields.push('name');
    const configs = [was.config ?? {}, step.config ?? {}] as Record<string, unknown>[];
    const configKeys = new Set([...Object.keys(configs[0]!), ...Object.keys(configs[1]!)]);
    for (const k of [...configKeys].sort()) if (!same(configs[0]![k], configs[1]![k])) fields.push(`config.${k}`);
    const [wasNext, isNext] = [outgoing(before, step.key), outgoing(after, step.key)];
    const branches = new Set([...wasNext.keys(), ...isNext.keys()]);
    for (const b of [...branches].sort()) if (wasNext.get(b) !== isNext.get(b)) fields.push(b === '' ? 'next' : `next.${b}`);
    if (fields.length) diff.changed.push({ key: step.key, type: step.type, name: step.name, fields });
    else diff.unchanged++;
  }
  for (const step of before.steps) if (!now.has(step.key)) diff.removed.push({ key: step.key, type: step.type, name: step.name });
  return diff;
}

/** One line for the audit log and notices: "1 added, 1 removed, 2 changed". */
export function diffSummary(diff: DefinitionDiff): string {
  const parts = [
    diff.added.length && `${diff.added.length} added`,
    diff.removed.length && `${diff.removed.length} removed`,
    diff.changed.length && `${diff.changed.length} changed`,
  ].filter(Boolean);
  return parts.length ? parts.join(', ') : 'no step changed';
}
