// The statuses a claim's SQL guards on, read from its statements (test/support/claims-source.ts
// writes the shared fragments out): for each table with a status, the literal statuses
// its conditions accept (`e.status = 'RUNNING'`, `s.status IN ('PENDING', 'FAILED')`),
// the table's rows known by their aliases (`"WorkflowExecution" e`, a CTE selecting from
// it). A status assigned (`SET status = ...`) or refused (`<>`, `NOT IN`) is not a guard.

import type { Transition } from '../../server/engine/transitions';

export interface GuardedStatuses {
  execution: Set<string>;
  step: Set<string>;
  message: Set<string>;
}

type Kind = 'execution' | 'step' | 'message';
const TABLES: [Kind, string][] = [
  ['execution', 'WorkflowExecution'],
  ['step', 'StepExecution'],
  ['message', 'Message'],
];

/** Aliases of each table in these statements: `"T" a`, `"T" AS a`, an unaliased `"T"`, and CTEs whose first FROM is the table. */
function aliases(sql: string): Map<string, Kind> {
  const out = new Map<string, Kind>();
  for (const [kind, table] of TABLES) {
    const re = new RegExp(`"${table}"(?:\\s+(?:AS\\s+)?(?!WHERE|SET|ON|JOIN|LEFT|USING|FOR|WHERE|GROUP|ORDER|LIMIT|RETURNING|VALUES|SELECT)([a-z_][a-z0-9_]*))?`, 'gi');
    for (const m of sql.matchAll(re)) out.set(m[1] ?? `"${table}"`, kind);
    // `name AS (SELECT ... FROM "T" ...`: the CTE's rows are the table's rows.
    const cte = new RegExp(`([a-z_][a-z0-9_]*)\\s+AS\\s+(?:MATERIALIZED\\s+)?\\(\\s*SELECT[^()]*?\\bFROM\\s+"${table}"`, 'gi');
    for (const m of sql.matchAll(cte)) out.set(m[1]!, kind);
  }
  return out;
}

/** The table an UPDATE statement's unqualified `status` refers to. */
function updatedTables(sql: string): (Kind)[] {
  const found: (Kind)[] = [];
  for (const [kind, table] of TABLES) if (new RegExp(`UPDATE\\s+"${table}"(?!\\s+[a-z]+\\s+SET)`, 'i').test(sql) || new RegExp(`(FROM|UPDATE)\\s+"${table}"\\s+(WHERE|SET)`, 'i').test(sql)) found.push(kind);
  return found;
}

export function guardedStatuses(statements: string[]): GuardedStatuses {
  const out: GuardedStatuses = { execution: new Set(), step: new Set(), message: new Set() };
  for (const sql of statements) {
    const known = aliases(sql);
    const bare = updatedTables(sql);
    // A condition: after WHERE, AND, OR, ON, WHEN, NOT-less; `alias.status` or a bare `status`.
    const re = /(?:\b(?:WHERE|AND|OR|ON|WHEN)\s+|\(\s*)(?:([a-z_][a-z0-9_]*)\.)?status\s*(=\s*'([A-Z_]+)'|IN\s*\(((?:\s*'[A-Z_]+'\s*,?)+|\s*\$x\s*)\))/gi;
    for (const m of sql.matchAll(re)) {
      const kinds = (m[1] ? [known.get(m[1])] : bare).filter((k): k is Kind => !!k);
      // A list passed in as a value is no literal guard (the operators' lists from the
      // transitions table are written out as literals by claims-source.ts).
      if (m[4]?.trim() === '$x') continue;
      const statuses = m[3] ? [m[3]] : [...m[4]!.matchAll(/'([A-Z_]+)'/g)].map((s) => s[1]!);
      for (const kind of kinds) for (const s of statuses) out[kind].add(s);
    }
  }
  return out;
}

/**
 * Claims whose statement also claims the next step (advance and claim in one statement):
 * their step guards may include claimStep's from-statuses, for the next step's row.
 */
export const CLAIMS_NEXT_STEP = new Set(['advanceExecutions', 'advanceFromWaits']);

const sorted = (list: Iterable<string>) => [...new Set(list)].sort();

/**
 * Where a claim's SQL and the transitions table disagree on the statuses it moves from:
 * the execution's and the message's exactly; the step row's: every status the table lists
 * is guarded on, and nothing else (but claimStep's, for a claim that claims the next step).
 */
export function fromStatusMismatches(table: Record<string, Transition>, sqlOf: Map<string, string[]>): string[] {
  const out: string[] = [];
  for (const [name, t] of Object.entries(table)) {
    const statements = sqlOf.get(name);
    if (!statements) continue;
    const guards = guardedStatuses(statements);
    for (const kind of ['execution', 'message'] as const) {
      const from = sorted((t[kind]?.from ?? []).filter((s) => s !== 'NONE'));
      if (from.length === 0) continue;
      const sql = sorted(guards[kind]);
      if (from.join() !== sql.join()) out.push(`${name}: the table moves ${kind}s from [${from}], its SQL guards on [${sql}]`);
    }
    const stepFrom = sorted((t.step?.from ?? []).filter((s) => s !== 'NONE'));
    if (stepFrom.length > 0) {
      const sql = sorted(guards.step);
      const missing = stepFrom.filter((s) => !sql.includes(s));
      const next = CLAIMS_NEXT_STEP.has(name) ? (table.claimStep?.step?.from ?? []) : [];
      const extra = sql.filter((s) => !stepFrom.includes(s) && !(next as readonly string[]).includes(s));
      if (missing.length || extra.length) {
        out.push(`${name}: the table moves step rows from [${stepFrom}], its SQL guards on [${sql}]`);
      }
    }
  }
  return out;
}
