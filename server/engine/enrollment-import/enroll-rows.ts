import { transaction, type Db, type DbTx, type RawDb } from '../../db';
import { log } from '../../log';
import { writeAudit, type Acting } from '../audit';
import { enrollBatch, type EnrollRejection, type EnrollResult } from '../enrollment';
import { notifyWorkers } from '../wakeup';
import { csvImportRows } from './csv';
import { BULK_ROWS_MAX, type BulkRow } from '../../common/enrollment-csv';

// Enrolling many contacts in one call (enrollments.enrollMany, enrollments.importCsv,
// `npm run cli -- enroll-csv`):
// up to 10,000 rows, each validated and reported on its own, so one bad row never fails
// the others. Rows are consumed as a stream and enrolled 500 per transaction: memory
// holds one chunk of work plus the small per-row results, whatever the call's size, and
// no transaction grows long enough to hold locks or a connection for the whole import.
//
// The call has exactly one audit entry. It is created by the first chunk's transaction and
// its counts are advanced by every later chunk's, so at any moment it describes exactly
// what has committed, including after a crash half-way (`complete: false`).

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

/** One call's import: its rows go into this workflow, recorded under this action by this caller. */
export interface EnrollmentImport {
  db: Db;
  by: Acting;
  workflowId: string;
  /** The audit entry's action, e.g. "enrollments.importCsv". */
  action: string;
  /** Recorded in the audit entry: how the rows arrived ("rows" or "csv"). */
  source: string;
}

/**
 * An import's workflow must exist in the caller's project and be enabled before any row
 * is read: the refusal (audited like any other), or null when rows may follow.
 */
export function refuseUnlessEnrollable(db: Db, by: Acting, workflowId: string, action: string): Promise<EnrollRejection | null> {
  return transaction(db, 'ENGINE', async (tx) => {
    const workflow = await tx.workflow.findFirst({ where: { id: workflowId, projectId: by.projectId }, select: { enabled: true } });
    const refused: EnrollRejection | null = !workflow
      ? { reason: 'WORKFLOW_NOT_FOUND' }
      : !workflow.enabled
        ? { reason: 'WORKFLOW_DISABLED' }
        : null;
    if (refused) await writeAudit(tx, { ...by, action, targetType: 'workflow', targetId: workflowId, outcome: 'REJECTED', after: refused });
    return refused;
  });
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

  constructor(private readonly run: EnrollmentImport) {}

  /** Write the entry with these counts in the transaction of the rows they count. */
  async write(tx: DbTx, summary: BulkSummary, complete: boolean): Promise<string> {
    const after = { ...summary, source: this.run.source, complete };
    const outcome = summary.enrolled > 0 ? 'APPLIED' : 'REJECTED';
    if (this.entryId) {
      await tx.auditEntry.update({ where: { id: this.entryId }, data: { after, outcome } });
      return this.entryId;
    }
    return writeAudit(tx, { ...this.run.by, action: this.run.action, targetType: 'workflow', targetId: this.run.workflowId, after, outcome });
  }

  /** Run `work` and advance the entry in one transaction; remember the counts once committed. */
  async commit(work: (tx: DbTx) => Promise<RowResult[]>, complete: boolean): Promise<RowResult[]> {
    const { results, summary, entryId } = await transaction(
      this.run.db,
      'IMPORT_CHUNK',
      async (tx) => {
        const results = await work(tx);
        const summary = tally(this.summary, results);
        return { results, summary, entryId: await this.write(tx, summary, complete) };
      },
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
async function processChunk(run: EnrollmentImport, callAudit: CallAudit, chunk: Numbered[], last: boolean): Promise<RowResult[]> {
  const enrollAll = async (tx: RawDb, items: Numbered[]) => {
    const valid = items.filter((item): item is { n: number; row: Exclude<BulkRow, { invalid: string }> } => !('invalid' in item.row));
    const enrolled = await enrollBatch(
      tx,
      run.by.projectId,
      run.workflowId,
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
        results.push(...(await processChunk(run, callAudit, [item], last && i === chunk.length - 1)));
      }
      return results;
    }
    // Even this row's own transaction failed: report it, and record the report.
    log.error('bulk enrollment: a row failed on its own', { err: error });
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
  run: EnrollmentImport,
  rows: AsyncIterable<BulkRow> | Iterable<BulkRow>,
): Promise<{ results: RowResult[]; summary: BulkSummary }> {
  const callAudit = new CallAudit(run);
  const results: RowResult[] = [];
  let chunk: Numbered[] = [];
  let n = 0;
  for await (const row of rows) {
    if (++n > BULK_ROWS_MAX) throw new Error(`enrollRows: more than ${BULK_ROWS_MAX} rows; callers must refuse them first`);
    // A full chunk waits for the next row to arrive, so the last chunk knows it is the last.
    if (chunk.length === CHUNK_ROWS) {
      results.push(...(await processChunk(run, callAudit, chunk, false)));
      chunk = [];
    }
    chunk.push({ n, row });
  }
  if (chunk.length > 0) results.push(...(await processChunk(run, callAudit, chunk, true)));
  if (callAudit.summary.enrolled > 0) await notifyWorkers(run.db).catch(() => {});
  return { results, summary: callAudit.summary };
}

export type CsvImportResult =
  | { ok: true; results: RowResult[]; summary: BulkSummary }
  | { ok: false; reason: 'INVALID_CSV'; message: string }
  | ({ ok: false } & EnrollRejection);

/**
 * enrollments.importCsv (and the CLI's enroll-csv): check the CSV, then the workflow
 * (refusal audited), then enroll its rows. Nothing is stored for a CSV refused whole.
 */
export async function importCsv(run: EnrollmentImport, csv: string): Promise<CsvImportResult> {
  const read = csvImportRows(csv);
  if (!read.ok) return { ok: false, reason: 'INVALID_CSV', message: read.problem };
  const refused = await refuseUnlessEnrollable(run.db, run.by, run.workflowId, run.action);
  if (refused) return { ok: false, ...refused };
  return { ok: true, ...(await enrollRows(run, read.rows)) };
}
