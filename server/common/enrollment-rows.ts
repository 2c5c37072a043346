import { z } from 'zod';
import { email, jsonObject, type JsonObject } from './inputs';

// What one bulk-enrollment row is and how it is checked, with no database behind it, so
// the console's CSV page checks a row in the browser exactly as enrollments.enrollMany
// will on the server (enroll-rows.ts beside this file), before anything is sent.

export const BULK_ROWS_MAX = 10_000;
/** About what 10,000 rows of email plus a few data fields take; bounds the request. */
export const BULK_BYTES_MAX = 10 * 1024 * 1024;

/** One input row: what to enroll, or why it cannot be. */
export type BulkRow = { email: string; data: JsonObject } | { email: string | null; invalid: string };

const rowSchema = z.object({ email, data: jsonObject.optional() });

/** Validate one enrollMany row on its own; a bad row becomes a per-row error. */
export function parseRow(raw: unknown): BulkRow {
  const parsed = rowSchema.safeParse(raw);
  if (parsed.success) return { email: parsed.data.email, data: parsed.data.data ?? {} };
  const given = raw && typeof raw === 'object' ? (raw as { email?: unknown }).email : undefined;
  return {
    email: typeof given === 'string' ? given.slice(0, 320) : null,
    invalid: parsed.error.issues.map((i) => (i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message)).join('; '),
  };
}
