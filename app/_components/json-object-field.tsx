'use client';

import { useId, type ReactNode } from 'react';

// A JSON object typed by a person (contact data, an enrollment's context): parsed as they
// type, with the error where it is — the line and column of a syntax error, or the field
// path the server named — so nothing is sent that the server would refuse for its shape.

export type JsonParse = { ok: true; value: Record<string, unknown> } | { ok: false; message: string; line?: number; column?: number };

/** Line and column (1-based) of a character offset in a text. */
function lineColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, Math.max(0, Math.min(offset, text.length)));
  const lines = before.split('\n');
  return { line: lines.length, column: lines[lines.length - 1]!.length + 1 };
}

/** Keys the server refuses (they mean something to JavaScript's object model). */
const RESERVED_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** The path of the first reserved key in a parsed value, if any. */
function reservedKeyPath(value: unknown, path: string[] = []): string[] | null {
  if (value === null || typeof value !== 'object') return null;
  for (const key of Object.keys(value)) {
    if (RESERVED_KEYS.has(key)) return [...path, key];
    const inner = reservedKeyPath((value as Record<string, unknown>)[key], [...path, key]);
    if (inner) return inner;
  }
  return null;
}

/**
 * Parse a text that must hold one JSON object. A syntax error names its line and column
 * (V8 reports "at position N" or "line L column C"); a valid value that is not an object
 * says what it is instead.
 */
export function parseJsonObject(text: string, { emptyIsObject = false, field = 'data' } = {}): JsonParse {
  if (text.trim() === '') return emptyIsObject ? { ok: true, value: {} } : { ok: false, message: 'empty: write a JSON object, e.g. {}' };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const lineCol = /line (\d+) column (\d+)/.exec(message);
    if (lineCol) return { ok: false, message: `not valid JSON: ${message}`, line: Number(lineCol[1]), column: Number(lineCol[2]) };
    const position = /position (\d+)/.exec(message);
    if (position) return { ok: false, message: `not valid JSON: ${message}`, ...lineColumn(text, Number(position[1])) };
    // "Unexpected end of JSON input": the error is at the end.
    return { ok: false, message: `not valid JSON: ${message}`, ...lineColumn(text, text.length) };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    const kind = value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`;
    return { ok: false, message: `must be a JSON object ({ … }), not ${kind}`, line: 1, column: 1 };
  }
  // Refused here, at its path, before sending: the wire format would refuse it less clearly.
  const reserved = reservedKeyPath(value);
  if (reserved) return { ok: false, message: `${[field, ...reserved].join('.')}: the key "${reserved[reserved.length - 1]}" is not allowed` };
  return { ok: true, value: value as Record<string, unknown> };
}

/** The server's zod issues under one field (`data.address.city: …`), as lines to show at it. */
export function issuesUnder(field: string, issues: { path: string; message: string }[] | undefined): string[] {
  return (issues ?? [])
    .filter((i) => i.path === field || i.path.startsWith(`${field}.`))
    .map((i) => `${i.path === field ? field : i.path}: ${i.message}`);
}

/** A textarea for a JSON object with its parse error (or the server's) right under it. */
export function JsonObjectField({
  label,
  value,
  onChange,
  parse,
  serverIssues = [],
  rows = 8,
  hint,
  disabled,
}: {
  label: string;
  value: string;
  onChange: (text: string) => void;
  parse: JsonParse;
  /** What the server said about this field (zod paths), shown when the text itself parses. */
  serverIssues?: string[];
  rows?: number;
  hint?: ReactNode;
  disabled?: boolean;
}) {
  const id = useId();
  const errorId = `${id}-error`;
  const problems = parse.ok ? serverIssues : [parse.line ? `Line ${parse.line}, column ${parse.column}: ${parse.message}` : parse.message];
  return (
    <div className="flex flex-col gap-0.5">
      <label htmlFor={id} className="text-[10.5px] font-medium tracking-wide text-zinc-500 uppercase">
        {label}
      </label>
      <textarea
        id={id}
        value={value}
        rows={rows}
        spellCheck={false}
        disabled={disabled}
        aria-invalid={problems.length > 0}
        aria-describedby={problems.length ? errorId : undefined}
        onChange={(e) => onChange(e.target.value)}
        className={`w-full rounded border bg-white px-2 py-1.5 font-mono text-[12px] leading-snug text-zinc-900 shadow-xs focus:ring-1 focus:outline-none disabled:bg-zinc-50 ${
          problems.length ? 'border-red-400 focus:border-red-500 focus:ring-red-500' : 'border-zinc-300 focus:border-sky-500 focus:ring-sky-500'
        }`}
      />
      {problems.length > 0 ? (
        <ul id={errorId} role="alert" className="space-y-0.5 font-mono text-[11.5px] text-red-700">
          {problems.map((p) => (
            <li key={p}>{p}</li>
          ))}
        </ul>
      ) : (
        hint && <p className="text-[11px] text-zinc-500">{hint}</p>
      )}
    </div>
  );
}
