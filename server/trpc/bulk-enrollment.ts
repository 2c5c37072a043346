import Papa from 'papaparse';
import { z } from 'zod';
import type { Db, DbTx } from '../db';
import { enrollBatch, type EnrollResult } from '../engine/enrollment';
import { notifyWorkers } from '../engine/wakeup';
import { email, jsonObject, jsonObjectIssue, type JsonObject } from './inputs';
import type { Actor } from './trpc';
import { audit } from './audit';

// Enrolling many contacts in one call (enrollments.enrollMany, enrollments.importCsv):
// up to 10,000 rows, each validated and reported on its own, so one bad row never fails
// the others. Rows are consumed as a stream and enrolled 500 per transaction: memory
// holds one chunk of work plus the small per-row results, whatever the call's size, and
// no transaction grows long enough to hold locks or a connection for the whole import.
//
// The call has exactly one audit entry. It is created by the first chunk's transaction and
// its counts are advanced by every later chunk's, so at any moment it describes exactly
// what has committed, including after a crash half-way (`complete: false`).

export const BULK_ROWS_MAX = 10_000;
/** About what 10,000 rows of email plus a few data fields take; bounds the request. */
export const BULK_BYTES_MAX = 10 * 1024 * 1024;
export const CHUNK_ROWS = 500;

export interface RowError {
  /** INVALID (the row itself), ACTIVE_EXECUTION, REENTRY_BLOCKED, WORKFLOW_DISABLED, WORKFLOW_NOT_FOUND, FAILED. */
  reason: string;
  message: string;
  /** For ACTIVE_EXECUTION / REENTRY_BLOCKED: the execution that keeps the contact out. */
  executionId?: string;
}

export interface RowResult {
  /** 1-based position of the row in the input (CSV: the data row, not counting the header). */
  row: number;
  email: string | null;
  executionId?: string;
  error?: RowError;
}

export interface BulkSummary {
  rows: number;
  enrolled: number;
  failed: number;
  /** Failed rows by reason. */
  reasons: Record<string, number>;
}

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

const REJECTION_MESSAGES: Record<string, string> = {
  ACTIVE_EXECUTION: 'already has an active execution of this workflow',
  REENTRY_BLOCKED: 'has been through this workflow before, and it does not allow re-entry',
  WORKFLOW_DISABLED: 'the workflow was disabled during the import',
  WORKFLOW_NOT_FOUND: 'the workflow no longer exists',
  CONTACT_NOT_FOUND: 'no such contact',
};

function resultOf(row: number, emailAddress: string, r: EnrollResult): RowResult {
  if (r.ok) return { row, email: emailAddress, executionId: r.executionId };
  return {
    row,
    email: emailAddress,
    error: {
      reason: r.reason,
      message: REJECTION_MESSAGES[r.reason] ?? r.reason,
      ...('executionId' in r ? { executionId: r.executionId } : {}),
    },
  };
}

interface Job {
  db: Db;
  actor: Actor;
  workflowId: string;
  action: string;
  /** Recorded in the audit entry: how the rows arrived ("rows" or "csv"). */
  source: string;
}

function tally(summary: BulkSummary, results: RowResult[]): BulkSummary {
  const next: BulkSummary = { ...summary, reasons: { ...summary.reasons } };
  for (const r of results) {
    next.rows++;
    if (r.executionId) next.enrolled++;
    if (r.error) {
      next.failed++;
      next.reasons[r.error.reason] = (next.reasons[r.error.reason] ?? 0) + 1;
    }
  }
  return next;
}

/** The call's one audit entry, and the counts it holds as of the last commit. */
class CallAudit {
  entryId: string | null = null;
  summary: BulkSummary = { rows: 0, enrolled: 0, failed: 0, reasons: {} };

  constructor(private readonly job: Job) {}

  /** Write the entry with these counts in the transaction of the rows they count. */
  async write(tx: DbTx, summary: BulkSummary, complete: boolean): Promise<string> {
    const after = { ...summary, source: this.job.source, complete };
    const outcome = summary.enrolled > 0 ? 'APPLIED' : 'REJECTED';
    if (this.entryId) {
      await tx.auditEntry.update({ where: { id: this.entryId }, data: { after, outcome } });
      return this.entryId;
    }
    return audit(tx, this.job.actor, { action: this.job.action, targetType: 'workflow', targetId: this.job.workflowId, after, outcome });
  }

  /** Run `work` and advance the entry in one transaction; remember the counts once committed. */
  async commit(work: (tx: DbTx) => Promise<RowResult[]>, complete: boolean): Promise<RowResult[]> {
    const { results, summary, entryId } = await this.job.db.$transaction(
      async (tx) => {
        const results = await work(tx);
        const summary = tally(this.summary, results);
        return { results, summary, entryId: await this.write(tx, summary, complete) };
      },
      { maxWait: 10_000, timeout: 120_000 },
    );
    this.summary = summary;
    this.entryId = entryId;
    return results;
  }
}

function invalidResult(n: number, row: Extract<BulkRow, { invalid: string }>): RowResult {
  return { row: n, email: row.email, error: { reason: 'INVALID', message: row.invalid } };
}

type Numbered = { n: number; row: BulkRow };

/**
 * Enroll one chunk in one transaction. Should that transaction fail as a whole (it
 * should not: rows are validated first), its rows are retried one transaction each, so
 * the row at fault fails alone.
 */
async function processChunk(job: Job, callAudit: CallAudit, chunk: Numbered[], last: boolean): Promise<RowResult[]> {
  const enrollAll = async (tx: DbTx, items: Numbered[]) => {
    const valid = items.filter((item): item is { n: number; row: Exclude<BulkRow, { invalid: string }> } => !('invalid' in item.row));
    const enrolled = await enrollBatch(
      tx,
      job.actor.projectId,
      job.workflowId,
      valid.map(({ row }) => ({ email: row.email, contactData: row.data })),
    );
    const byRow = new Map(valid.map(({ n, row }, i) => [n, resultOf(n, row.email, enrolled[i]!)]));
    return items.map(({ n, row }) => ('invalid' in row ? invalidResult(n, row) : byRow.get(n)!));
  };
  try {
    return await callAudit.commit((tx) => enrollAll(tx, chunk), last);
  } catch (error) {
    if (chunk.length > 1) {
      const results: RowResult[] = [];
      for (const [i, item] of chunk.entries()) {
        results.push(...(await processChunk(job, callAudit, [item], last && i === chunk.length - 1)));
      }
      return results;
    }
    // Even this row's own transaction failed: report it, and record the report.
    console.error('bulk enrollment: a row failed on its own', error);
    const { n, row } = chunk[0]!;
    const failed: RowResult = { row: n, email: row.email, error: { reason: 'FAILED', message: 'could not be enrolled; retry this row' } };
    return callAudit.commit(async () => [failed], last);
  }
}

/**
 * Enroll every row of a stream into one workflow, CHUNK_ROWS per transaction, and wake
 * the workers once at the end if anything was enrolled. Callers bound the row count
 * (BULK_ROWS_MAX) before the first write.
 */
export async function enrollRows(
  job: Job,
  rows: AsyncIterable<BulkRow> | Iterable<BulkRow>,
): Promise<{ results: RowResult[]; summary: BulkSummary }> {
  const callAudit = new CallAudit(job);
  const results: RowResult[] = [];
  let chunk: Numbered[] = [];
  let n = 0;
  for await (const row of rows) {
    if (++n > BULK_ROWS_MAX) throw new Error(`enrollRows: more than ${BULK_ROWS_MAX} rows; callers must refuse them first`);
    // A full chunk waits for the next row to arrive, so the last chunk knows it is the last.
    if (chunk.length === CHUNK_ROWS) {
      results.push(...(await processChunk(job, callAudit, chunk, false)));
      chunk = [];
    }
    chunk.push({ n, row });
  }
  if (chunk.length > 0) results.push(...(await processChunk(job, callAudit, chunk, true)));
  if (callAudit.summary.enrolled > 0) await notifyWorkers(job.db).catch(() => {});
  return { results, summary: callAudit.summary };
}

// ---------------------------------------------------------------------------
// CSV

/** A header cell as a column name: trimmed, without the byte-order mark spreadsheets write. */
function csvHeaderName(header: string): string {
  return header.replace(/^\uFEFF/, '').trim();
}

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
    header: true,
    skipEmptyLines: 'greedy',
    transformHeader: csvHeaderName,
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
  const data: JsonObject = {};
  for (const column of header.dataColumns) {
    const value = record[column];
    if (value !== undefined && value !== '') data[column] = value;
  }
  return parseRow({ email: rawEmail, data });
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
    header: true,
    skipEmptyLines: 'greedy',
    transformHeader: csvHeaderName,
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
    const issue = jsonObjectIssue({ [column]: '' });
    if (column === '' || issue) return `column "${column.slice(0, 50)}" cannot be a data key${issue ? ` (${issue})` : ''}`;
  }
  return { emailColumn: emailColumns[0]!, dataColumns };
}
