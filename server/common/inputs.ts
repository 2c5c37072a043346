import { z } from 'zod';

// The building blocks every router's input schema is made of. Input reaches PostgreSQL
// as query parameters and jsonb, which refuse a few things JavaScript strings allow (a NUL
// character, a lone UTF-16 surrogate): refusing them here turns what would be a database
// error (a 500) into a BAD_REQUEST with the field's path. Every bound is explicit so no
// single request can make the server hold or store an unreasonable amount.

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Text PostgreSQL can store and compare: no NUL, no lone surrogate. */
export function isStorableText(value: string): boolean {
  return !value.includes('\u0000') && !LONE_SURROGATE.test(value);
}

const STORABLE = 'must be valid Unicode text without NUL characters';

/** A bounded string PostgreSQL accepts as text. */
export function text(max: number, min = 0) {
  return z.string().min(min).max(max).refine(isStorableText, STORABLE);
}

/** A trimmed, non-empty single-line label (names, event names, reasons). */
export function label(max: number, min = 1) {
  return z.string().trim().min(min).max(max).refine(isStorableText, STORABLE);
}

/** Emails as the product stores them: trimmed, RFC-ish (zod's), at most 320 characters. */
export const email = z.string().trim().max(320).pipe(z.email());

/**
 * A row id. Any 8-4-4-4-12 hex string, which PostgreSQL's uuid type accepts whatever its
 * version bits, so an id never reaches a `::uuid` cast that would fail.
 */
export const id = z.guid();

/**
 * A search text as a LIKE pattern matching what starts with it, its own `%`, `_` and `\`
 * taken literally (queries say ESCAPE '\').
 */
export function likePrefix(prefix: string): string {
  return `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** Why a person made a change, for its audit entry: 3 to 500 characters. */
export const reason = label(500, 3);

export const limit = z.number().int().min(1).max(200).default(50);

/** The int4 columns' range: a larger number would fail the `::int` cast. */
export const version = z.number().int().min(0).max(2_147_483_647);

// ---------------------------------------------------------------------------
// JSON objects (contact data, execution context, event data)

export type JsonObject = Record<string, unknown>;

export const JSON_MAX_BYTES = 16 * 1024;
export const JSON_MAX_DEPTH = 5;
/**
 * Keys that mean something to JavaScript's object model. They are refused (not silently
 * dropped) so nothing downstream that merges objects can have its prototype replaced.
 */
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

function isPlainObject(value: unknown): value is JsonObject {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

type JsonIssue = { message: string; path: (string | number)[] };

/**
 * The first reason a value is not a small, plain JSON document. Depth is checked while
 * walking, so an absurdly deep (or cyclic) input stops at level 6 instead of overflowing
 * the stack.
 */
function jsonIssue(value: unknown, depth: number, path: (string | number)[]): JsonIssue | null {
  if (value === null || typeof value === 'boolean') return null;
  if (typeof value === 'string') return isStorableText(value) ? null : { message: STORABLE, path };
  if (typeof value === 'number') return Number.isFinite(value) ? null : { message: 'numbers must be finite', path };
  if (Array.isArray(value) || isPlainObject(value)) {
    if (depth > JSON_MAX_DEPTH) return { message: `at most ${JSON_MAX_DEPTH} levels of nesting`, path };
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const issue = jsonIssue(value[i], depth + 1, [...path, i]);
        if (issue) return issue;
      }
      return null;
    }
    for (const key of Object.keys(value)) {
      if (FORBIDDEN_KEYS.has(key)) return { message: `the key "${key}" is not allowed`, path: [...path, key] };
      if (!isStorableText(key) || key.length > 200) return { message: `keys must be storable text of at most 200 characters`, path };
      const issue = jsonIssue(value[key], depth + 1, [...path, key]);
      if (issue) return issue;
    }
    return null;
  }
  return { message: `not a JSON value (${value === undefined ? 'undefined' : typeof value})`, path };
}

/** A JSON object of at most 16 KB serialized and 5 levels deep, with storable strings. */
export const jsonObject = z
  .custom<JsonObject>((value) => isPlainObject(value), 'expected a JSON object')
  // Rendered in the OpenAPI document as an object with any properties.
  .meta({ type: 'object', additionalProperties: true, description: `A JSON object (at most ${JSON_MAX_BYTES / 1024} KB, ${JSON_MAX_DEPTH} levels deep)` })
  .superRefine((value, ctx) => {
    // Own keys only: JSON.parse makes "__proto__" an own key, which Object.keys reports.
    const issue = jsonIssue(value, 1, []);
    if (issue) {
      ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path });
      return;
    }
    const bytes = Buffer.byteLength(JSON.stringify(value), 'utf8');
    if (bytes > JSON_MAX_BYTES) {
      ctx.addIssue({ code: 'custom', message: `at most ${JSON_MAX_BYTES} bytes as JSON (got ${bytes})` });
    }
  });

/** Check a value against jsonObject without zod (per-row validation of bulk input). */
export function jsonObjectIssue(value: unknown): string | null {
  const parsed = jsonObject.safeParse(value);
  return parsed.success ? null : parsed.error.issues.map((i) => [i.path.join('.'), i.message].filter(Boolean).join(': ')).join('; ');
}

/** A point in time: a Date (superjson clients) or an ISO 8601 string (JSON clients). */
export const instant = z
  .union([z.date(), z.iso.datetime({ offset: true }).transform((s) => new Date(s))])
  // JavaScript dates reach further back than PostgreSQL's timestamps do.
  .refine((d) => d.getTime() >= Date.UTC(1900, 0, 1) && d.getTime() < Date.UTC(10000, 0, 1), 'must be between 1900 and 9999');
