import v8 from 'node:v8';
import vm from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHUNK_ROWS } from '../../server/engine/enrollment-import/enroll-rows';
import { BULK_ROWS_MAX } from '../../server/common/enrollment-csv';
import type { Actor } from '../../server/auth/actor';
import { actorFor, callerFor } from '../support/callers';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createProject, delayWorkflow, workflowFrom } from '../support/fixtures';

// 10,000 rows in one call: every row answered, memory bounded. Rows are
// enrolled CHUNK_ROWS per transaction from a stream, so the heap holds one chunk's work
// and the per-row results, not the whole import's worth of intermediate objects.

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

let t: TestDatabase;
let projectId: string;
let marketer: Actor;

beforeAll(async () => {
  t = await freshDatabase();
  projectId = (await createProject(t.db)).id;
  marketer = actorFor(projectId, 'MARKETER');
});
afterAll(async () => t?.drop());

interface HeapGrowth {
  baselineMb: number;
  /** Highest heapUsed seen, garbage included (what the process actually had to hold). */
  peakDeltaMb: number;
  /** Highest heap still reachable, sampled after a forced collection: what the call retains. */
  liveDeltaMb: number;
}

/** Run `work`, sampling the heap meanwhile, both as found and after collecting garbage. */
async function heapGrowth<T>(work: () => Promise<T>): Promise<{ result: T } & HeapGrowth> {
  gc();
  const baseline = process.memoryUsage().heapUsed;
  let peak = baseline;
  let live = baseline;
  const sampleRaw = setInterval(() => (peak = Math.max(peak, process.memoryUsage().heapUsed)), 10);
  const sampleLive = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().heapUsed);
    gc();
    live = Math.max(live, process.memoryUsage().heapUsed);
  }, 500);
  try {
    const result = await work();
    peak = Math.max(peak, process.memoryUsage().heapUsed);
    return { result, baselineMb: baseline / 2 ** 20, peakDeltaMb: (peak - baseline) / 2 ** 20, liveDeltaMb: (live - baseline) / 2 ** 20 };
  } finally {
    clearInterval(sampleRaw);
    clearInterval(sampleLive);
  }
}

function csvOf(rows: number, emailOf: (i: number) => string): string {
  const lines = ['email,first_name,plan,score'];
  for (let i = 0; i < rows; i++) lines.push(`${emailOf(i)},Person ${i},${i % 3 === 0 ? 'pro' : 'free'},${i}`);
  return lines.join('\n');
}

describe('bulk enrollment at 10,000 rows', () => {
  it('importCsv enrolls a 10,000-row CSV in one call with bounded heap growth, one audit entry, one bad row failing alone', { timeout: 300_000 }, async () => {
    const wf = await workflowFrom(t.db, projectId, delayWorkflow(3600, { name: 'csv 10k' }));
    const bad = 4_321;
    const csv = csvOf(BULK_ROWS_MAX, (i) => (i === bad ? 'not-an-email' : `csv${i}@example.com`));
    const started = Date.now();
    const { result, baselineMb, peakDeltaMb, liveDeltaMb } = await heapGrowth(() =>
      callerFor(t.db, marketer).enrollments.importCsv({ workflowId: wf.id, csv }),
    );
    const seconds = (Date.now() - started) / 1000;
    console.log(
      `importCsv ${BULK_ROWS_MAX} rows (${(csv.length / 2 ** 20).toFixed(2)} MB CSV): ${seconds.toFixed(1)} s, ` +
        `heap baseline ${baselineMb.toFixed(1)} MB, peak growth ${peakDeltaMb.toFixed(1)} MB, live growth ${liveDeltaMb.toFixed(1)} MB`,
    );

    expect(result.results).toHaveLength(BULK_ROWS_MAX);
    expect(result.summary).toEqual({ rows: BULK_ROWS_MAX, enrolled: BULK_ROWS_MAX - 1, failed: 1, reasons: { INVALID: 1 } });
    expect(result.results[bad]).toMatchObject({ row: bad + 1, email: 'not-an-email', error: { reason: 'INVALID' } });
    expect(await t.db.workflowExecution.count({ where: { workflowId: wf.id } })).toBe(BULK_ROWS_MAX - 1);
    const sample = await t.db.contact.findFirstOrThrow({ where: { projectId, email: 'csv9999@example.com' } });
    expect(sample.data).toEqual({ first_name: 'Person 9999', plan: 'pro', score: '9999' });
    const entries = await t.db.auditEntry.findMany({ where: { targetId: wf.id, action: 'enrollments.importCsv' } });
    expect(entries).toHaveLength(1);
    expect(entries[0]!.after).toMatchObject({ rows: BULK_ROWS_MAX, enrolled: BULK_ROWS_MAX - 1, complete: true });
    // What the call retains is the input (~0.4 MB), one chunk in flight and 10,000 small
    // results: a few MB. The peak adds garbage not yet collected, which V8 bounds itself.
    expect(liveDeltaMb).toBeLessThan(32);
    expect(peakDeltaMb).toBeLessThan(160);
  });

  it(`enrollMany takes 10,000 rows in one call, ${CHUNK_ROWS} per transaction, and repeats answer per row`, async () => {
    const wf = await workflowFrom(t.db, projectId, delayWorkflow(3600, { name: 'rows 10k' }));
    const contacts = Array.from({ length: BULK_ROWS_MAX }, (_, i) => ({ email: `row${i}@example.com`, data: { n: i } }));
    const started = Date.now();
    const { result, peakDeltaMb, liveDeltaMb } = await heapGrowth(() =>
      callerFor(t.db, marketer).enrollments.enrollMany({ workflowId: wf.id, contacts }),
    );
    console.log(
      `enrollMany ${BULK_ROWS_MAX} rows: ${((Date.now() - started) / 1000).toFixed(1)} s, ` +
        `peak heap growth ${peakDeltaMb.toFixed(1)} MB, live growth ${liveDeltaMb.toFixed(1)} MB`,
    );
    expect(result.summary).toMatchObject({ rows: BULK_ROWS_MAX, enrolled: BULK_ROWS_MAX, failed: 0 });
    expect(new Set(result.results.map((r) => r.executionId)).size).toBe(BULK_ROWS_MAX);
    expect(liveDeltaMb).toBeLessThan(32);
    expect(peakDeltaMb).toBeLessThan(160);

    // The same rows again: every contact already has an active execution of this workflow.
    const again = await callerFor(t.db, marketer).enrollments.enrollMany({ workflowId: wf.id, contacts: contacts.slice(0, 600) });
    expect(again.summary).toEqual({ rows: 600, enrolled: 0, failed: 600, reasons: { ACTIVE_EXECUTION: 600 } });
    expect(again.results[599]!.error!.executionId).toBe(result.results[599]!.executionId);
    const entries = await t.db.auditEntry.findMany({ where: { targetId: wf.id, action: 'enrollments.enrollMany' }, orderBy: { at: 'asc' } });
    expect(entries.map((e) => e.outcome)).toEqual(['APPLIED', 'REJECTED']);
  }, 300_000);
});
