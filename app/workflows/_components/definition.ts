import type { RouterOutputs } from '@/app/_trpc/types';
import { storableWorkflowInput } from '@/server/common/workflow-definition';

// A workflow's definition as the console edits and draws it. The editor validates with
// workflows.create's own input schema (zod only, safe in the browser), so what it accepts
// is exactly what the server accepts, and its issues carry the same paths.

export type WorkflowDetail = RouterOutputs['workflows']['get'];
export type StepCounts = Pick<WorkflowDetail['steps'][number], 'running' | 'waiting' | 'stuck' | 'stuckReasons'>;

/** What the graph needs of a step and a transition (the editor's draft or a stored workflow). */
export interface GraphStep {
  key: string;
  type: string;
  name: string;
  config?: unknown;
}
export interface GraphTransition {
  from: string;
  to: string;
  branch: string | null;
}

/** A stored workflow as workflows.create input, e.g. to duplicate it under a new name. */
export function definitionOf(wf: WorkflowDetail, name: string) {
  return {
    name,
    ...(wf.description ? { description: wf.description } : {}),
    trigger: wf.trigger,
    ...(wf.triggerEvent ? { triggerEvent: wf.triggerEvent } : {}),
    allowReentry: wf.allowReentry,
    enabled: true,
    steps: wf.steps.map((s) => ({ key: s.key, type: s.type, name: s.name, config: s.config ?? {} })),
    transitions: wf.transitions.map((t) => ({ from: t.from, to: t.to, branch: t.branch })),
  };
}

/** `transitions.3.to` (as the server's zodError reports it) or a zod path, written as `transitions[3].to`. */
export function formatPath(path: readonly PropertyKey[] | string): string {
  const parts = typeof path === 'string' ? (path === '' ? [] : path.split('.')) : path.map(String);
  let out = '';
  for (const part of parts) out += /^\d+$/.test(part) ? `[${part}]` : out === '' ? part : `.${part}`;
  return out || '(root)';
}

export interface DefinitionIssue {
  path: string;
  message: string;
  /** 1-based line and column, for JSON syntax errors. */
  line?: number;
  column?: number;
}

/** Did JSON.parse fail only because the text stopped early (or not at all)? */
function isValidPrefix(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch (error) {
    const message = (error as Error).message;
    // "Unexpected end of JSON input", or an error placed at the very end ("Unterminated
    // string in JSON at position 3" of a 3-character text): it only stopped early.
    const position = /position (\d+)/.exec(message);
    return /end of (JSON )?(input|data)/i.test(message) || (position !== null && Number(position[1]) >= text.length);
  }
}

/**
 * Where a JSON.parse error happened. Browsers' messages do not all say where (Chromium's
 * often quotes an excerpt instead), so find it: every prefix up to the offending
 * character is a valid beginning of JSON, and none after it is; a binary search over
 * prefixes finds that character in about log2(length) parses.
 */
function syntaxIssue(text: string, error: SyntaxError): DefinitionIssue {
  const message = error.message.replace(/\s*\(line \d+ column \d+\)$/, '');
  let at = text.length; // the text ended too early
  if (!isValidPrefix(text)) {
    let lo = 0; // a valid prefix length
    let hi = text.length; // an invalid one
    while (hi - lo > 1) {
      const mid = (lo + hi) >> 1;
      if (isValidPrefix(text.slice(0, mid))) lo = mid;
      else hi = mid;
    }
    at = hi - 1;
  }
  const before = text.slice(0, at).split('\n');
  return { path: '(JSON)', message, line: before.length, column: before[before.length - 1]!.length + 1 };
}

export type Validation =
  | { ok: true; value: ReturnType<typeof storableWorkflowInput.parse>; draft: unknown; issues: [] }
  | { ok: false; draft: unknown; issues: DefinitionIssue[] };

/** Parse and validate the editor's text exactly as workflows.create will. */
export function validateDefinition(text: string): Validation {
  if (text.trim() === '') return { ok: false, draft: null, issues: [{ path: '(JSON)', message: 'the definition is empty', line: 1, column: 1 }] };
  let draft: unknown;
  try {
    draft = JSON.parse(text);
  } catch (error) {
    return { ok: false, draft: null, issues: [syntaxIssue(text, error as SyntaxError)] };
  }
  const parsed = storableWorkflowInput.safeParse(draft);
  if (parsed.success) return { ok: true, value: parsed.data, draft, issues: [] };
  const lines = pathLines(text);
  return {
    ok: false,
    draft,
    issues: parsed.error.issues.map((i) => {
      const path = formatPath(i.path);
      const line = lineOf(lines, path);
      return line === undefined ? { path, message: i.message } : { path, message: i.message, line };
    }),
  };
}

const childPath = (parent: string, child: string | number) =>
  typeof child === 'number' ? `${parent}[${child}]` : parent === '' ? child : `${parent}.${child}`;

/**
 * The line each path of a (valid) JSON text starts on: an object member's key, an array
 * element's first character. Paths are written as formatPath writes them.
 */
export function pathLines(text: string): Map<string, number> {
  const lines = new Map<string, number>();
  const stack: { kind: 'object' | 'array'; path: string; key: string | null; index: number; expectKey: boolean }[] = [];
  let line = 1;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    const top = stack[stack.length - 1];
    if (c === '\n') line++;
    else if (c === ',') {
      if (top?.kind === 'object') top.expectKey = true;
      else if (top) top.index++;
    } else if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      let value: string;
      try {
        value = JSON.parse(text.slice(i, j + 1)) as string;
      } catch {
        value = text.slice(i + 1, j);
      }
      if (top?.kind === 'object' && top.expectKey) {
        top.key = value;
        top.expectKey = false;
        lines.set(childPath(top.path, value), line);
      } else if (top?.kind === 'array') lines.set(childPath(top.path, top.index), line);
      i = j;
    } else if (c === '{' || c === '[') {
      let path = '';
      if (top?.kind === 'object') path = childPath(top.path, top.key ?? '');
      else if (top) lines.set((path = childPath(top.path, top.index)), line);
      stack.push({ kind: c === '{' ? 'object' : 'array', path, key: null, index: 0, expectKey: c === '{' });
    } else if (c === '}' || c === ']') stack.pop();
    else if (!/\s|:/.test(c)) {
      // A number or literal: an array element starts here; skip to its end.
      if (top?.kind === 'array') lines.set(childPath(top.path, top.index), line);
      while (i + 1 < text.length && !/[\s,\]}]/.test(text[i + 1]!)) i++;
    }
  }
  return lines;
}

/** The line of a path, or of its nearest ancestor present in the text (a missing key is reported on its object). */
function lineOf(lines: Map<string, number>, path: string): number | undefined {
  for (let p = path; p !== ''; p = p.replace(/(\.[^.[\]]+|\[\d+\]|^[^.[\]]+)$/, '')) {
    const line = lines.get(p);
    if (line !== undefined) return line;
  }
  return undefined;
}

/** The steps and transitions of a draft that can be drawn, however invalid the rest is. */
export function drawable(draft: unknown): { steps: GraphStep[]; transitions: GraphTransition[] } {
  const record = draft && typeof draft === 'object' ? (draft as Record<string, unknown>) : {};
  const steps: GraphStep[] = [];
  const keys = new Set<string>();
  for (const s of Array.isArray(record.steps) ? record.steps : []) {
    if (!s || typeof s !== 'object') continue;
    const { key, type, name, config } = s as Record<string, unknown>;
    if (typeof key !== 'string' || key === '' || keys.has(key)) continue;
    keys.add(key);
    steps.push({ key, type: typeof type === 'string' ? type : '?', name: typeof name === 'string' ? name : key, config });
  }
  const transitions: GraphTransition[] = [];
  const seen = new Set<string>();
  for (const t of Array.isArray(record.transitions) ? record.transitions : []) {
    if (!t || typeof t !== 'object') continue;
    const { from, to, branch } = t as Record<string, unknown>;
    if (typeof from !== 'string' || typeof to !== 'string' || !keys.has(from) || !keys.has(to)) continue;
    const b = typeof branch === 'string' ? branch : null;
    const id = `${from}\u0000${b}`;
    if (seen.has(id)) continue;
    seen.add(id);
    transitions.push({ from, to, branch: b });
  }
  return { steps, transitions };
}
