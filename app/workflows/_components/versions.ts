import type { RouterInputs, RouterOutputs } from '@/app/_trpc/types';
import { REPAIR_PARAM } from '../../executions/search';
import { formatPath } from './definition';

// Workflow versions as the console shows them (docs/versions.md): published versions
// 1, 2, … never change; a workflow has at most one draft; publishing is a
// compare-and-swap on the version the editor started from, so a second tab based on the
// same version is refused with who published what, never overwrites it.

/** A version's definition: what the editor edits and publish stores (trigger and name stay on the workflow). */
export interface VersionStep {
  key: string;
  type: string;
  name: string;
  config: Record<string, unknown>;
}
export interface VersionTransition {
  from: string;
  to: string;
  branch: string | null;
}
export interface VersionDefinition {
  steps: VersionStep[];
  transitions: VersionTransition[];
}

export type PublishPreview = RouterOutputs['workflows']['publishPreview'];
type DefinitionInput = RouterInputs['workflows']['publish']['definition'];

/**
 * The definition as publish, publishPreview and saveDraft take it. The editor's step types
 * and branches are the schema's own (it only offers those); one read from a damaged draft
 * is refused by the server with its path, as any other problem.
 */
export function asInput(def: VersionDefinition): DefinitionInput {
  return def as DefinitionInput;
}
export type VersionList = RouterOutputs['workflows']['versions'];
export type VersionSummary = VersionList['items'][number];

/** The steps a publish adds, removes and changes, with the executions at each removed or changed step now (by version too). */
export type StepDiff = PublishPreview['diff'];

/** A conflict's diff: what the version published meanwhile changed (its counts, when the server sends them). */
export interface ConflictDiff {
  added: { key: string; name: string; type: string }[];
  removed: { key: string; name: string; type: string; active?: number; activeByVersion?: Record<number, number> }[];
  changed: { key: string; name: string; type: string; fields: string[]; active?: number; activeByVersion?: Record<number, number> }[];
  unchanged: number;
}

export interface VersionConflict {
  reason: 'VERSION_CONFLICT';
  current: { number: number; publishedBy: string; publishedAt: string | Date };
  diff: ConflictDiff;
}

/** What a tRPC error from these procedures carries (superjson-decoded). */
export type ServerError = {
  message: string;
  data?: {
    code?: string;
    zodError?: { issues?: { path: string; message: string }[] } | null;
    conflict?: ({ reason?: string } & Record<string, unknown>) | null;
  } | null;
};

export function versionConflictOf(error: unknown): VersionConflict | null {
  const conflict = (error as ServerError | null)?.data?.conflict;
  return conflict?.reason === 'VERSION_CONFLICT' ? (conflict as unknown as VersionConflict) : null;
}

/** A refusal's issues at their paths into the definition (`steps.2.config.subject`; the server's `definition.` prefix dropped), or its message. */
export function serverIssuesOf(error: unknown): { path: string; message: string }[] {
  const e = error as ServerError;
  const issues = e.data?.zodError?.issues;
  if (issues?.length) return issues.map((i) => ({ path: i.path.replace(/^definition(\.|$)/, ''), message: i.message }));
  return [{ path: '', message: e.message }];
}

export { formatPath };

/** A definition with only what a version holds, in a stable order (what is compared and sent). */
export function cleanDefinition(d: { steps: readonly VersionStep[]; transitions: readonly VersionTransition[] }): VersionDefinition {
  return {
    steps: d.steps.map((s) => ({ key: s.key, type: s.type, name: s.name, config: s.config ?? {} })),
    transitions: d.transitions.map((t) => ({ from: t.from, to: t.to, branch: t.branch ?? null })),
  };
}

/** Read a stored definition (a draft's JSON) defensively: whatever is not a step or transition is left out. */
export function definitionFromJson(value: unknown): VersionDefinition {
  const record = value && typeof value === 'object' ? (value as Record<string, unknown>) : {};
  const steps: VersionStep[] = [];
  for (const s of Array.isArray(record.steps) ? record.steps : []) {
    if (!s || typeof s !== 'object') continue;
    const { key, type, name, config } = s as Record<string, unknown>;
    if (typeof key !== 'string' || typeof type !== 'string') continue;
    steps.push({
      key,
      type,
      name: typeof name === 'string' ? name : '',
      config: config && typeof config === 'object' && !Array.isArray(config) ? (config as Record<string, unknown>) : {},
    });
  }
  const transitions: VersionTransition[] = [];
  for (const t of Array.isArray(record.transitions) ? record.transitions : []) {
    if (!t || typeof t !== 'object') continue;
    const { from, to, branch } = t as Record<string, unknown>;
    if (typeof from !== 'string' || typeof to !== 'string') continue;
    transitions.push({ from, to, branch: typeof branch === 'string' ? branch : null });
  }
  return { steps, transitions };
}

/** A field name of a changed step as a marketer reads it ("config.subject" → "subject", "next.yes" → "yes →"). */
export function fieldLabel(field: string): string {
  if (field === 'next' || field === 'transitions') return 'next step';
  if (field.startsWith('next.')) return `${field.slice('next.'.length)} →`;
  return field.startsWith('config.') ? field.slice('config.'.length) : field;
}

/**
 * Where to list the executions at a step of a version: the step row ids are the version's
 * own. `move`: with "Repair matching…" opened on them, MIGRATE chosen (operators only; the
 * executions page ignores it for anyone else).
 */
export function executionsAtStep(workflowId: string, stepId: string, move = false): string {
  return `/executions?workflowId=${workflowId}&stepId=${stepId}${move ? `&${REPAIR_PARAM}=MIGRATE` : ''}`;
}

/** The notice the workflow page shows once after a publish (kept in sessionStorage: survives a reload, not a new tab). */
export interface PublishedNotice {
  version: number;
  basedOn: number;
  diff: StepDiff;
}
const noticeKey = (workflowId: string, version: number) => `waypost.published.${workflowId}.${version}`;

export function rememberPublished(workflowId: string, notice: PublishedNotice): void {
  try {
    sessionStorage.setItem(noticeKey(workflowId, notice.version), JSON.stringify(notice));
  } catch {
    // Storage full or refused: the page shows the version without the notice.
  }
}
export function recallPublished(workflowId: string, version: number): PublishedNotice | null {
  try {
    const raw = sessionStorage.getItem(noticeKey(workflowId, version));
    return raw ? (JSON.parse(raw) as PublishedNotice) : null;
  } catch {
    return null;
  }
}
export function forgetPublished(workflowId: string, version: number): void {
  try {
    sessionStorage.removeItem(noticeKey(workflowId, version));
  } catch {
    // Nothing to forget.
  }
}
