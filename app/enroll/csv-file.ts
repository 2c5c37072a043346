import Papa from 'papaparse';
import { CSV_PARSE, csvColumnName, csvRowData, dataKeyIssue, parseRow } from '@/server/common/enrollment-csv';
import type { JsonObject } from '@/server/common/inputs';

// A CSV enrollment file as the browser reads it, before anything is sent: decoded as
// strict UTF-8, parsed and checked with the rules the server's importCsv uses
// (server/common/enrollment-csv.ts: the parse, column names, data keys, a row's data and
// the row rule), so the preview's "valid" is exactly what enrollments.enrollMany will
// accept. What is the browser's alone: decoding a File, the person's column mapping, and
// the messages for a file that cannot be read at all.

export interface Limits {
  rows: number;
  bytes: number;
}

export interface CsvFile {
  name: string;
  bytes: number;
  /** Column names as written, trimmed. */
  header: string[];
  /** Data rows (no header), cells in header order; rows may be shorter or longer than it. */
  rows: string[][];
}

/** Why a file cannot be imported at all: nothing of it is sent. */
export interface CsvProblem {
  problem: 'empty' | 'no-rows' | 'too-large' | 'too-many-rows' | 'encoding' | 'binary' | 'unparseable' | 'header';
  message: string;
}

export function isProblem(value: CsvFile | CsvProblem): value is CsvProblem {
  return 'problem' in value;
}

const count = (n: number) => n.toLocaleString('en-US');

/** Refused from its size alone, before its bytes are read. */
export function sizeProblem(bytes: number, limits: Limits): CsvProblem | null {
  if (bytes === 0) return { problem: 'empty', message: 'The file is empty: there is nothing to import.' };
  if (bytes > limits.bytes) {
    return {
      problem: 'too-large',
      message: `The file is ${(bytes / 1024 / 1024).toFixed(1)} MB (${count(bytes)} bytes); at most ${limits.bytes / 1024 / 1024} MB can be imported at once. Split it into smaller files.`,
    };
  }
  return null;
}

/** The text of a file, or why it is not UTF-8 text. */
function decode(bytes: Uint8Array): string | CsvProblem {
  if ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff)) {
    return { problem: 'encoding', message: 'The file is UTF-16 text. Save it as "CSV UTF-8" and upload it again.' };
  }
  if (bytes[0] === 0x50 && bytes[1] === 0x4b && bytes[2] === 0x03 && bytes[3] === 0x04) {
    return { problem: 'binary', message: 'This is a spreadsheet workbook (such as .xlsx), not a CSV. Export it as "CSV UTF-8" and upload that.' };
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return {
      problem: 'encoding',
      message: 'The file is not UTF-8 text (it may be Latin-1 or Windows-1252). Save it as "CSV UTF-8" and upload it again; nothing was imported.',
    };
  }
  if (text.includes('\u0000')) return { problem: 'binary', message: 'The file contains binary data, not CSV text.' };
  return text;
}

const EMAILISH = /^[^\s@,;]+@[^\s@,;]+\.[^\s@,;]+$/;

/** Read, decode and parse a file; a problem names what is wrong with the file as a whole. */
export function readCsv(name: string, bytes: Uint8Array, limits: Limits): CsvFile | CsvProblem {
  const tooBig = sizeProblem(bytes.byteLength, limits);
  if (tooBig) return tooBig;
  const text = decode(bytes);
  if (typeof text !== 'string') return text;
  if (text.trim() === '') return { problem: 'empty', message: 'The file has no text in it: there is nothing to import.' };

  const parsed = Papa.parse<string[]>(text, CSV_PARSE);
  // A quote left open swallows the rest of the file into one cell: nothing after it can be trusted.
  const quote = parsed.errors.find((e) => e.type === 'Quotes');
  if (quote) {
    return {
      problem: 'unparseable',
      message: `The file is not valid CSV: ${quote.message.toLowerCase()} near line ${count((quote.row ?? 0) + 1)}. Check the quotes on that line.`,
    };
  }
  const [first, ...rows] = parsed.data;
  if (!first) return { problem: 'empty', message: 'The file has no rows.' };
  const header = first.map(csvColumnName);
  if (header.some((cell) => EMAILISH.test(cell))) {
    return {
      problem: 'header',
      message: `The first row holds an email address ("${header.find((cell) => EMAILISH.test(cell))!.slice(0, 60)}"), so the file has no header row. Add a first row naming the columns, such as email,firstName.`,
    };
  }
  if (rows.length === 0) return { problem: 'no-rows', message: 'The file has a header row but no data rows.' };
  if (rows.length > limits.rows) {
    return {
      problem: 'too-many-rows',
      message: `The file has ${count(rows.length)} rows; at most ${count(limits.rows)} can be imported at once. Split it into smaller files.`,
    };
  }
  return { name, bytes: bytes.byteLength, header, rows };
}

/** The column that most likely holds the emails, by its name. */
export function guessEmailColumn(header: string[]): number | null {
  const names = header.map((h) => h.toLowerCase().replace(/[\s_-]+/g, ''));
  for (const candidate of ['email', 'emailaddress', 'mail', 'contactemail']) {
    const i = names.indexOf(candidate);
    if (i >= 0) return i;
  }
  return null;
}

/** Why a column cannot become a key of the contact's data, if it cannot. */
export function dataColumnIssue(header: string[], column: number): string | null {
  const name = header[column]!;
  if (name === '') return 'has no name';
  if (header.indexOf(name) !== column) return `same name as column ${header.indexOf(name) + 1}`;
  const issue = dataKeyIssue(name);
  return issue ? `cannot be a data key (${issue})` : null;
}

export interface Mapping {
  emailColumn: number | null;
  /** Columns whose non-empty cells become the contact's data, under the column's name. */
  dataColumns: number[];
}

export function defaultMapping(header: string[]): Mapping {
  const emailColumn = guessEmailColumn(header);
  return { emailColumn, dataColumns: header.map((_, i) => i).filter((i) => i !== emailColumn && !dataColumnIssue(header, i)) };
}

/** One data row, ready to send or already known to be invalid. */
export interface PreparedRow {
  /** 1-based data row (the header is not counted), as the result file numbers it. */
  row: number;
  /** The email cell as written (trimmed when valid). */
  email: string | null;
  data: JsonObject;
  /** Why the row cannot be sent; the server would refuse it for the same reason. */
  invalid: string | null;
  /** The earlier row with the same email: this one will be told the contact is already in. */
  repeats: number | null;
}

export function prepareRows(file: CsvFile, mapping: Mapping): PreparedRow[] {
  const width = file.header.length;
  const firstRowOf = new Map<string, number>();
  return file.rows.map((cells, i) => {
    const row = i + 1;
    const rawEmail = mapping.emailColumn === null ? null : (cells[mapping.emailColumn] ?? '');
    // As the server's importCsv: a row longer than the header is unreadable (which cell is which?).
    if (cells.length > width) {
      return { row, email: rawEmail, data: {}, invalid: `has ${cells.length} cells; the header has ${width}`, repeats: null };
    }
    const data = csvRowData(mapping.dataColumns.map((column) => [file.header[column]!, cells[column]]));
    if (rawEmail === null) return { row, email: null, data, invalid: 'no email column chosen', repeats: null };
    if (rawEmail.trim() === '') return { row, email: rawEmail, data, invalid: 'the email cell is empty', repeats: null };
    const checked = parseRow({ email: rawEmail, data });
    if ('invalid' in checked) return { row, email: rawEmail, data, invalid: readable(checked.invalid), repeats: null };
    const key = checked.email.toLowerCase();
    const repeats = firstRowOf.get(key) ?? null;
    if (repeats === null) firstRowOf.set(key, row);
    return { row, email: checked.email, data: checked.data, invalid: null, repeats };
  });
}

/** zod's "email: Invalid email address" as a person would say it. */
function readable(invalid: string): string {
  return invalid.replace(/^email: Invalid email address$/, 'not a valid email address').replace(/^data: /, 'data: ');
}

// ---------------------------------------------------------------------------
// Outcomes

/** Every way a row can end; the server's refusal reasons plus the two the browser knows of. */
export type OutcomeKind =
  | 'ENROLLED'
  | 'ACTIVE_EXECUTION'
  | 'REENTRY_BLOCKED'
  | 'INVALID'
  | 'WORKFLOW_DISABLED'
  | 'WORKFLOW_NOT_FOUND'
  | 'CONTACT_NOT_FOUND'
  | 'FAILED'
  | 'NOT_SENT';

export interface Outcome {
  row: number;
  email: string | null;
  kind: OutcomeKind;
  /** The reason in words (empty when enrolled). */
  message: string;
  /** ENROLLED: the new execution; ACTIVE_EXECUTION / REENTRY_BLOCKED: the one keeping the contact out. */
  executionId: string | null;
}

export const OUTCOME_LABELS: Record<OutcomeKind, string> = {
  ENROLLED: 'enrolled',
  ACTIVE_EXECUTION: 'already active',
  REENTRY_BLOCKED: 're-entry blocked',
  INVALID: 'invalid',
  WORKFLOW_DISABLED: 'workflow disabled',
  WORKFLOW_NOT_FOUND: 'workflow gone',
  CONTACT_NOT_FOUND: 'contact not found',
  FAILED: 'failed',
  NOT_SENT: 'not sent',
};

export const OUTCOME_ORDER = Object.keys(OUTCOME_LABELS) as OutcomeKind[];

export function outcomeKind(reason: string): OutcomeKind {
  return (OUTCOME_ORDER as string[]).includes(reason) ? (reason as OutcomeKind) : 'FAILED';
}

/** The result file: one line per input row, in input order, whatever became of it. */
export function resultCsv(outcomes: Outcome[]): string {
  return Papa.unparse({
    fields: ['row', 'email', 'outcome', 'reason', 'execution_id'],
    data: outcomes.map((o) => [o.row, o.email ?? '', OUTCOME_LABELS[o.kind], o.message, o.executionId ?? '']),
  });
}

export function resultFileName(fileName: string): string {
  return `${fileName.replace(/\.csv$/i, '')}-result.csv`;
}
