import type { ConsoleResult } from './console';
import type { DiagnosisResult } from './diagnosis';
import type { EnrollFigure } from './enroll';
import type { EventsResult } from './events';
import type { HttpResult } from './http';
import type { PgBouncerResult } from './pgbouncer';
import type { StepsResult } from './steps';
import type { WaitsResult } from './waits';

// The table printed at the end (kept in bench/HISTORY.md, its ratios in the README): every figure with its ratio
// to its same-run baseline.

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(rows[0]!), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.slice(1).map(line)].join('\n');
}

const x = (r: number | null | undefined) => (r === null || r === undefined ? '–' : `${r}×`);

export function printTable(results: Record<string, unknown>): string {
  const rows: string[][] = [['figure', 'value', 'baseline', 'ratio']];
  const enroll = results.enroll as EnrollFigure[] | undefined;
  for (const e of enroll ?? []) rows.push([`enrollments/s, ${e.callers} caller(s)`, `${e.engine}`, `raw ${e.raw}`, x(e.ratio)]);
  const steps = results.steps as StepsResult | undefined;
  for (const [i, e] of (steps?.engine ?? []).entries()) {
    const raw = steps!.raw[i]!;
    const peer = steps!.peer[i]!;
    rows.push([`steps/s, ${e.processes} proc × ${e.concurrency}`, `${e.perSecond}`, `raw ${raw.perSecond}`, x(steps!.ratios[i]!.engineToRaw)]);
    rows.push([`  … vs graphile-worker jobs/s`, '', `peer ${peer.perSecond}`, x(steps!.ratios[i]!.engineToPeer)]);
    rows.push([`  commits per step (job)`, `${e.commitsPerItem}`, `raw ${raw.commitsPerItem} / peer ${peer.commitsPerItem}`, '']);
    rows.push([`  worker RSS (max)`, `${e.maxRssMb ?? '?'} MB`, '', '']);
  }
  const pooled = results.pgbouncer as PgBouncerResult | undefined;
  if (pooled && !pooled.measured) rows.push(['steps/s through PgBouncer', 'not measured', pooled.reason, '']);
  for (const r of pooled?.measured ? pooled.rounds : []) {
    rows.push([`steps/s through PgBouncer (transaction mode), ${r.processes} proc × ${r.concurrency}`, `${r.pooled}`, `direct ${r.direct}`, x(r.pooledToDirect)]);
    rows.push([`  … unnamed, bounds per transaction, no pooler`, `${r.unnamedDirect}`, `direct ${r.direct}`, x(r.unnamedToDirect)]);
  }
  const diagnosis = results.diagnosis as DiagnosisResult | undefined;
  if (diagnosis) {
    rows.push(['statements per step (engine, in-process)', `${diagnosis.statementsPerStep}`, `raw ${steps?.raw[0]?.statementsPerItem ?? '–'}`, '']);
    rows.push(['transactions per step (engine, in-process)', `${diagnosis.transactionsPerStep}`, '', '']);
  }
  const waits = results.waits as WaitsResult | undefined;
  if (waits) {
    rows.push([`wait resolutions/s (storm, ${waits.workers} workers)`, `${waits.resolutionsPerSecond}`, `${waits.byEvent} event / ${waits.byTimeout} timeout`, '']);
    if (waits.afterDeadlinePerSecond !== undefined) rows.push([`wait resolutions/s after the deadline`, `${waits.afterDeadlinePerSecond}`, `in ${waits.afterDeadlineSeconds} s`, '']);
  }
  const events = results.events as EventsResult | undefined;
  if (events) {
    rows.push(['events tracked + dispatched inline/s (8 callers)', `${events.trackedPerSecond}`, '', '']);
    rows.push([`events dispatched by the sweeper/s (${events.sweepWorkers} workers)`, `${events.sweptPerSecond}`, '', '']);
  }
  const http = results.http as HttpResult | undefined;
  if (http) {
    rows.push([`HTTP enrollments/s (${http.connections} connections)`, `${http.perSecond}`, `engine ${http.engineDirect ?? '–'}`, x(http.ratioToEngine)]);
    rows.push(['HTTP latency p50 / p99', `${http.p50Ms} / ${http.p99Ms} ms`, `${http.non2xx} non-2xx`, '']);
  }
  const consoleResult = results.console as ConsoleResult | undefined;
  if (consoleResult) {
    rows.push([`console at ${consoleResult.executions.toLocaleString('en')} executions (seeded in ${consoleResult.seedSeconds} s)`, 'p50 / p95 ms', 'plan', '']);
    rows.push(['  (SELECT 1 round trip, the floor)', `${consoleResult.roundTripMs.p50} / ${consoleResult.roundTripMs.p95}`, '', '']);
    for (const q of consoleResult.queries) {
      rows.push([`  ${q.name}`, `${q.p50Ms} / ${q.p95Ms}`, q.seqScans.length ? `SEQ SCAN ${q.seqScans.join(', ')}` : 'no seq scan', q.p95Ms > q.targetMs ? `> ${q.targetMs} ms` : '']);
    }
    // The price of the figures the reads above serve stored: paid by each background refresh.
    for (const f of consoleResult.figureRecomputes ?? []) {
      rows.push([`  figure ${f.figure}: full recompute (twice)`, `${f.costMs.join(' / ')}`, f.seqScans.length ? `SEQ SCAN ${f.seqScans.join(', ')}` : 'no seq scan', 'background']);
    }
  }
  return `\n${table(rows)}\n\n`;
}
