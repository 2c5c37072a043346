import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { importCsv, type RowResult } from '../../server/engine/enrollment-import/enroll-rows';
import { BULK_BYTES_MAX } from '../../server/common/enrollment-csv';
import { CLI_ACTOR, say, UsageError, withDb } from './common';

// `enroll-csv <workflow id> <file>`: the console's CSV import, from a shell.

const enrollCsvArgs = z.object({
  workflow: z.guid({ error: 'must be a workflow id' }),
  file: z.string().min(1, 'must not be empty'),
});

/** A CSV field as RFC 4180 writes it: quoted when it holds a comma, a quote or a line break. */
function csvField(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

function outcomeLine(r: RowResult): string {
  return [String(r.row), r.email ?? '', r.executionId ?? '', r.error?.reason ?? ''].map(csvField).join(',');
}

/** Enroll a CSV file into a workflow through the same import as enrollments.importCsv, audited as "system". */
export async function enrollCsvCommand(argv: string[]): Promise<number> {
  let positionals: string[];
  try {
    positionals = parseArgs({ args: argv, options: {}, strict: true, allowPositionals: true }).positionals;
  } catch (error) {
    throw new UsageError(`enroll-csv: ${(error as Error).message.split('\n')[0]}`);
  }
  if (positionals.length !== 2) throw new UsageError('enroll-csv: give a workflow id and a CSV file');
  const parsed = enrollCsvArgs.safeParse({ workflow: positionals[0], file: positionals[1] });
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new UsageError(`enroll-csv: ${String(issue.path[0])} ${issue.message}`);
  }
  const { workflow: workflowId, file } = parsed.data;
  let csv: string;
  try {
    const bytes = await readFile(file);
    if (bytes.byteLength > BULK_BYTES_MAX) throw new Error(`${file} is over ${BULK_BYTES_MAX / 1024 / 1024} MB`);
    csv = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch (error) {
    const reason = error instanceof TypeError ? 'is not UTF-8 text' : (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'does not exist' : null;
    throw new Error(reason ? `${file} ${reason}` : (error as Error).message);
  }
  return withDb(async (db) => {
    const workflow = await db.workflow.findUnique({ where: { id: workflowId }, select: { projectId: true, name: true } });
    if (!workflow) throw new Error(`no workflow with id ${workflowId}`);
    const result = await importCsv(
      { db, by: { projectId: workflow.projectId, actor: CLI_ACTOR }, workflowId, action: 'enrollments.importCsv', source: 'csv' },
      csv,
    );
    if (!result.ok) {
      if (result.reason === 'INVALID_CSV') throw new Error(`${file}: ${result.message}`);
      if (result.reason === 'WORKFLOW_DISABLED') throw new Error(`the workflow "${workflow.name}" is disabled; enable it to enroll contacts`);
      throw new Error(`the workflow "${workflow.name}" cannot take enrollments (${result.reason})`);
    }
    process.stdout.write(`row,email,executionId,reason\n${result.results.map((r) => `${outcomeLine(r)}\n`).join('')}`);
    const { rows, enrolled, failed, reasons } = result.summary;
    const why = Object.entries(reasons).map(([reason, n]) => `${n} ${reason}`).join(', ');
    say(`enrolled ${enrolled} of ${rows} rows into "${workflow.name}"${failed > 0 ? `; ${failed} failed (${why})` : ''}`);
    return failed === 0 ? 0 : 1;
  });
}
