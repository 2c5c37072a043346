import Papa from 'papaparse';
import { BULK_ROWS_MAX, CSV_PARSE, csvColumnName, csvRowData, dataKeyIssue, parseRow, type BulkRow } from '../../common/enrollment-csv';

// A CSV as enrollment rows (enrollments.importCsv, `npm run cli -- enroll-csv`): a header
// row with one `email` column, every other column a key of the contact's data. Parsed
// one row at a time, so an import holds one chunk of rows, not the whole file as objects.
// The rules are the browser's too (server/common/enrollment-csv.ts).

export interface CsvHeader {
  /** The column holding emails (matched case-insensitively). */
  emailColumn: string;
  /** Every other column: each becomes a key of the contact's data. */
  dataColumns: string[];
}

/** Parsed CSV rows, one at a time: the parser pauses after each row until it is asked for the next. */
export async function* csvRecords(csv: string): AsyncGenerator<{ fields: string[]; record: Record<string, string>; errors: string[] }> {
  let current: Papa.ParseStepResult<Record<string, string>> | null = null;
  let parser: Papa.Parser | null = null;
  let done = false;
  let wake: (() => void) | null = null;
  Papa.parse<Record<string, string>>(csv, {
    ...CSV_PARSE,
    header: true,
    transformHeader: csvColumnName,
    step(result, p) {
      current = result;
      parser = p;
      p.pause();
      wake?.();
    },
    complete() {
      done = true;
      wake?.();
    },
  });
  for (;;) {
    if (current) {
      const result: Papa.ParseStepResult<Record<string, string>> = current;
      current = null;
      yield {
        fields: result.meta.fields ?? [],
        record: result.data,
        // Missing trailing cells are only missing data; anything else makes the row unreadable.
        errors: result.errors.filter((e) => e.code !== 'TooFewFields').map((e) => e.message),
      };
      (parser as Papa.Parser | null)?.resume();
      continue;
    }
    if (done) return;
    await new Promise<void>((resolve) => (wake = resolve));
    wake = null;
  }
}

/** A CSV record as an enrollment row: `email` plus every other non-empty cell as data. */
export function csvRow(header: CsvHeader, record: Record<string, string>, errors: string[]): BulkRow {
  const rawEmail = record[header.emailColumn];
  if (errors.length > 0) return { email: rawEmail ?? null, invalid: errors.join('; ') };
  return parseRow({ email: rawEmail, data: csvRowData(header.dataColumns.map((column) => [column, record[column]])) });
}

/**
 * A first, storing-nothing pass over a CSV: its header and how many data rows it has
 * (counting stops past BULK_ROWS_MAX). It lets the call refuse a CSV that is too long or
 * has no email column before enrolling anyone.
 */
export function inspectCsv(csv: string): { fields: string[]; rows: number } {
  let fields: string[] = [];
  let rows = 0;
  Papa.parse<Record<string, string>>(csv, {
    ...CSV_PARSE,
    header: true,
    transformHeader: csvColumnName,
    step(result, parser) {
      fields = result.meta.fields ?? fields;
      if (++rows > BULK_ROWS_MAX) parser.abort();
    },
  });
  return { fields, rows };
}

/** The header's problem, if any: an email column is required, and every other column becomes a data key. */
export function csvHeader(fields: string[]): CsvHeader | string {
  const emailColumns = fields.filter((f) => f.toLowerCase() === 'email');
  if (emailColumns.length !== 1) return 'the header row needs exactly one "email" column';
  const dataColumns = fields.filter((f) => f !== emailColumns[0]);
  for (const column of dataColumns) {
    const issue = dataKeyIssue(column);
    if (column === '' || issue) return `column "${column.slice(0, 50)}" cannot be a data key${issue ? ` (${issue})` : ''}`;
  }
  return { emailColumn: emailColumns[0]!, dataColumns };
}

/**
 * A CSV checked for an import before anything is stored (rows, size, header): its
 * problem as a sentence, or its rows as a stream for enrollRows.
 */
export function csvImportRows(csv: string): { ok: false; problem: string } | { ok: true; rows: AsyncIterable<BulkRow> } {
  const { fields, rows: count } = inspectCsv(csv);
  if (count === 0) return { ok: false, problem: 'the CSV has a header but no rows' };
  if (count > BULK_ROWS_MAX) return { ok: false, problem: `at most ${BULK_ROWS_MAX} rows per import` };
  const header = csvHeader(fields);
  if (typeof header === 'string') return { ok: false, problem: header };
  async function* rows(): AsyncGenerator<BulkRow> {
    for await (const r of csvRecords(csv)) yield csvRow(header as CsvHeader, r.record, r.errors);
  }
  return { ok: true, rows: rows() };
}
