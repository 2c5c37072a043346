import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultMapping, isProblem, prepareRows, readCsv } from '../../app/enroll/csv-file';
import { BULK_BYTES_MAX, BULK_ROWS_MAX } from '../../server/common/enrollment-csv';
import type { Actor } from '../../server/auth/actor';
import { actorFor, callerFor } from '../support/callers';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createProject, delayWorkflow, workflowFrom } from '../support/fixtures';

// The CSV page reads a file in the browser and sends only its valid rows, a chunk at a
// time, to enrollments.enrollMany. The server's own CSV path (enrollments.importCsv) reads
// the same file with papaparse too. Both must come to the same verdict on every row, or
// the preview would promise what the import does not do.

let t: TestDatabase;
let marketer: Actor;
let projectId: string;

beforeAll(async () => {
  t = await freshDatabase();
  projectId = (await createProject(t.db)).id;
  marketer = actorFor(projectId, 'MARKETER');
});
afterAll(async () => t?.drop());

const CSV = [
  'email,firstName,plan',
  'ada@example.com,Ada,pro',
  'not-an-email,Bob,free',
  ',Nobody,free',
  'extra@example.com,Extra,free,surplus',
  'trailing@example.com,Trailing,free,',
  'short@example.com,Short',
  'ADA@example.com,Ada again,pro',
  '  spaced@example.com  ,Spaced,free',
  `huge@example.com,${'x'.repeat(17 * 1024)},free`,
  'last@example.com,Last,pro',
].join('\n');

type Verdict = 'enrolled' | 'invalid' | string;

describe('the CSV page and importCsv', () => {
  it('give every row of a file the same verdict, in chunks or in one call', async () => {
    const browserWorkflow = await workflowFrom(t.db, projectId, delayWorkflow(3600, { name: 'from the page' }));
    const serverWorkflow = await workflowFrom(t.db, projectId, delayWorkflow(3600, { name: 'from importCsv' }));
    const caller = callerFor(t.db, marketer);

    // The page's path: read, check, send the valid rows two per call.
    const file = readCsv('agreement.csv', new TextEncoder().encode(CSV), { rows: BULK_ROWS_MAX, bytes: BULK_BYTES_MAX });
    if (isProblem(file)) throw new Error(file.message);
    const rows = prepareRows(file, defaultMapping(file.header));
    const browser = new Map<number, Verdict>(rows.filter((r) => r.invalid).map((r) => [r.row, 'invalid']));
    const valid = rows.filter((r) => !r.invalid);
    for (let i = 0; i < valid.length; i += 2) {
      const chunk = valid.slice(i, i + 2);
      const answer = await caller.enrollments.enrollMany({ workflowId: browserWorkflow.id, contacts: chunk.map((r) => ({ email: r.email!, data: r.data })) });
      for (const result of answer.results) browser.set(chunk[result.row - 1]!.row, result.executionId ? 'enrolled' : result.error!.reason);
    }

    // The server's path: the whole file in one call.
    const imported = await caller.enrollments.importCsv({ workflowId: serverWorkflow.id, csv: CSV });
    const server = new Map<number, Verdict>(
      imported.results.map((r) => [r.row, r.executionId ? 'enrolled' : r.error!.reason === 'INVALID' ? 'invalid' : r.error!.reason]),
    );

    expect(Object.fromEntries(browser)).toEqual(Object.fromEntries(server));
    expect(Object.fromEntries(browser)).toEqual({
      1: 'enrolled',
      2: 'invalid',
      3: 'invalid',
      4: 'invalid',
      5: 'invalid',
      6: 'enrolled',
      7: 'ACTIVE_EXECUTION',
      8: 'enrolled',
      9: 'invalid',
      10: 'enrolled',
    });
    // The data reaches the contact either way, a repeated row's merged over the first's
    // (even though the repeat itself is not enrolled).
    const ada = await t.db.contact.findFirstOrThrow({ where: { projectId, email: 'ada@example.com' } });
    expect(ada.data).toEqual({ firstName: 'Ada again', plan: 'pro' });
    const short = await t.db.contact.findFirstOrThrow({ where: { projectId, email: 'short@example.com' } });
    expect(short.data).toEqual({ firstName: 'Short' });
  });
});
