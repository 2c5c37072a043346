import Papa from 'papaparse';
import { describe, expect, it } from 'vitest';
import {
  dataColumnIssue,
  defaultMapping,
  guessEmailColumn,
  isProblem,
  prepareRows,
  readCsv,
  resultCsv,
  type CsvFile,
  type CsvProblem,
  type Outcome,
} from '../../app/enroll/csv-file';
import { BULK_BYTES_MAX, BULK_ROWS_MAX } from '../../server/common/enrollment-csv';

// The CSV page's reading of a file, before anything is sent (app/enroll/csv-file.ts): every
// file-level problem is named and stops the import; rows are checked with the server's own
// row rule, so the preview's verdict is the one enrollments.enrollMany would give.

const LIMITS = { rows: BULK_ROWS_MAX, bytes: BULK_BYTES_MAX };
const utf8 = (text: string) => new TextEncoder().encode(text);

function read(text: string | Uint8Array, limits = LIMITS): CsvFile | CsvProblem {
  return readCsv('contacts.csv', typeof text === 'string' ? utf8(text) : text, limits);
}

function problemOf(text: string | Uint8Array, limits = LIMITS): CsvProblem['problem'] | 'none' {
  const r = read(text, limits);
  return isProblem(r) ? r.problem : 'none';
}

function file(text: string): CsvFile {
  const r = read(text);
  if (isProblem(r)) throw new Error(r.message);
  return r;
}

describe('reading a CSV file in the browser', () => {
  it('refuses an empty file, a blank one, and a header without rows', () => {
    expect(problemOf('')).toBe('empty');
    expect(problemOf('\n\n  \n')).toBe('empty');
    expect(problemOf('email,firstName\n')).toBe('no-rows');
    expect(problemOf('email,firstName\n\n,\n')).toBe('no-rows');
  });

  it('refuses text that is not UTF-8: Latin-1, UTF-16, a workbook, binary', () => {
    // "café" in Latin-1: 0xE9 alone is not UTF-8.
    expect(problemOf(new Uint8Array([...utf8('email,name\na@example.com,caf'), 0xe9, 0x0a]))).toBe('encoding');
    expect(problemOf(new Uint8Array([0xff, 0xfe, 0x65, 0x00, 0x6d, 0x00]))).toBe('encoding');
    expect(problemOf(new Uint8Array([0x50, 0x4b, 0x03, 0x04, 0x14, 0x00]))).toBe('binary');
    expect(problemOf('email\na@example.com\u0000\n')).toBe('binary');
    // A UTF-8 byte-order mark is not a problem, and not part of the first column's name.
    const withBom = file('\uFEFFemail,name\na@example.com,Ada\n');
    expect(withBom.header).toEqual(['email', 'name']);
  });

  it('refuses a file over the byte limit or the row limit', () => {
    expect(problemOf('email\na@example.com\n', { rows: 10, bytes: 5 })).toBe('too-large');
    const eleven = ['email', ...Array.from({ length: 11 }, (_, i) => `p${i}@example.com`)].join('\n');
    expect(problemOf(eleven, { rows: 10, bytes: 1_000 })).toBe('too-many-rows');
    const ten = ['email', ...Array.from({ length: 10 }, (_, i) => `p${i}@example.com`)].join('\n');
    expect(problemOf(ten, { rows: 10, bytes: 1_000 })).toBe('none');
  });

  it('refuses CSV that does not parse (an unclosed quote), and a file whose first row is data', () => {
    const unclosed = read('email,name\na@example.com,"Ada\nb@example.com,Bob\n');
    expect(isProblem(unclosed) && unclosed.problem).toBe('unparseable');
    expect(isProblem(unclosed) && unclosed.message).toMatch(/near line \d+/);
    const headless = read('ada@example.com,Ada\nbob@example.com,Bob\n');
    expect(isProblem(headless) && headless.problem).toBe('header');
    expect(isProblem(headless) && headless.message).toMatch(/no header row/);
  });

  it('reads semicolon- and tab-separated files, and a single email column', () => {
    expect(file('email;plan\na@example.com;pro\n').header).toEqual(['email', 'plan']);
    expect(file('email\tplan\na@example.com\tpro\n').header).toEqual(['email', 'plan']);
    expect(file('email\na@example.com\nb@example.com\n').rows).toEqual([['a@example.com'], ['b@example.com']]);
  });
});

describe('mapping columns', () => {
  it('finds the email column by its usual names, or none', () => {
    expect(guessEmailColumn(['name', 'Email'])).toBe(1);
    expect(guessEmailColumn(['name', 'Email Address'])).toBe(1);
    expect(guessEmailColumn(['e-mail', 'name'])).toBe(0);
    expect(guessEmailColumn(['name', 'plan'])).toBeNull();
  });

  it('makes every other nameable column contact data by default, and says why the others cannot be', () => {
    const header = ['email', 'firstName', '', 'plan', '__proto__', 'plan'];
    expect(defaultMapping(header)).toEqual({ emailColumn: 0, dataColumns: [1, 3] });
    expect(dataColumnIssue(header, 2)).toBe('has no name');
    expect(dataColumnIssue(header, 4)).toMatch(/cannot be a data key/);
    expect(dataColumnIssue(header, 5)).toBe('same name as column 4');
  });
});

describe('checking rows before sending', () => {
  const csv = [
    'email,firstName,plan',
    'ada@example.com,Ada,pro',
    'not-an-email,Bob,free',
    ',Nobody,free',
    'grace@example.com,Grace',
    'ADA@example.com,Ada again,pro',
    'linus@example.com,Linus,free,extra',
    ' margaret@example.com ,Margaret,',
  ].join('\n');

  it('gives each row the verdict enrollMany would: invalid email, empty email, extra cells; repeats flagged', () => {
    const f = file(csv);
    const rows = prepareRows(f, defaultMapping(f.header));
    expect(rows.map((r) => [r.row, r.invalid])).toEqual([
      [1, null],
      [2, 'not a valid email address'],
      [3, 'the email cell is empty'],
      [4, null],
      [5, null],
      [6, 'has 4 cells; the header has 3'],
      [7, null],
    ]);
    expect(rows[4]!.repeats).toBe(1);
    // Emails are trimmed as the server trims them; empty cells are not data.
    expect(rows[6]).toMatchObject({ email: 'margaret@example.com', data: { firstName: 'Margaret' } });
    expect(rows[0]!.data).toEqual({ firstName: 'Ada', plan: 'pro' });
  });

  it('sends only the checked data columns', () => {
    const f = file(csv);
    const rows = prepareRows(f, { emailColumn: 0, dataColumns: [2] });
    expect(rows[0]!.data).toEqual({ plan: 'pro' });
  });

  it('marks every row invalid when no email column is chosen, so nothing can be sent', () => {
    const f = file('name,plan\nAda,pro\nBob,free\n');
    const rows = prepareRows(f, defaultMapping(f.header));
    expect(rows.every((r) => r.invalid === 'no email column chosen')).toBe(true);
  });
});

describe('the result file', () => {
  it('has one line per input row, in order, with outcome, reason and execution', () => {
    const outcomes: Outcome[] = [
      { row: 1, email: 'ada@example.com', kind: 'ENROLLED', message: '', executionId: '00000000-0000-0000-0000-000000000001' },
      { row: 2, email: 'not-an-email', kind: 'INVALID', message: 'not a valid email address', executionId: null },
      { row: 3, email: 'a,"quoted"@example.com', kind: 'NOT_SENT', message: 'not sent: the import stopped before this row', executionId: null },
    ];
    const parsed = Papa.parse<Record<string, string>>(resultCsv(outcomes), { header: true, skipEmptyLines: true });
    expect(parsed.errors).toEqual([]);
    expect(parsed.meta.fields).toEqual(['row', 'email', 'outcome', 'reason', 'execution_id']);
    expect(parsed.data.map((r) => [r.row, r.email, r.outcome])).toEqual([
      ['1', 'ada@example.com', 'enrolled'],
      ['2', 'not-an-email', 'invalid'],
      ['3', 'a,"quoted"@example.com', 'not sent'],
    ]);
  });
});
