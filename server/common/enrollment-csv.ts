import { z } from 'zod';
import { email, jsonObject, jsonObjectIssue, type JsonObject } from './inputs';

// Bulk enrollment's rules, the one definition the browser and the server share, with no
// database behind it: what one row is and how it is checked, and how a CSV becomes rows
// (how it is parsed, what a header cell names, which columns can be data keys, which cells
// become data). The console's CSV page (app/enroll/csv-file.ts) reads a file in the browser
// with these rules, and the server's import (server/engine/enrollment-import/csv.ts, for
// enrollments.importCsv and the CLI) streams one with them, so the page's preview says
// exactly what enrollments.enrollMany and importCsv will do, before anything is sent.

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

/** How both readers parse a CSV with papaparse: blank lines (and lines of blank cells) are not rows. */
export const CSV_PARSE = { skipEmptyLines: 'greedy' } as const;

/** A header cell as a column name: trimmed, without the byte-order mark spreadsheets write. */
export function csvColumnName(cell: string): string {
  return cell.replace(/^\uFEFF/, '').trim();
}

/** Why a column's name cannot be a key of the contact's data, if it cannot. */
export function dataKeyIssue(name: string): string | null {
  return jsonObjectIssue({ [name]: '' });
}

/** A row's data: each data column's non-empty cell, under the column's name (an empty cell is no value, not ""). */
export function csvRowData(cells: Iterable<readonly [column: string, value: string | undefined]>): JsonObject {
  const data: JsonObject = {};
  for (const [column, value] of cells) if (value !== undefined && value !== '') data[column] = value;
  return data;
}
