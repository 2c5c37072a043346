'use client';

import { useQuery } from '@tanstack/react-query';
import { useMemo } from 'react';
import { CartesianGrid, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis, type TooltipContentProps, type TooltipValueType } from 'recharts';
import type { RouterOutputs } from '@/app/_trpc/types';
import { useTRPC } from '../_trpc/client';
import { THROUGHPUT_INPUT } from './overview-inputs';
import { Freshness, LoadError, Panel } from './panel';

type Throughput = RouterOutputs['overview']['throughput'];
type Series = 'enrollments' | 'stepsRun' | 'eventsTracked';

/** Counts per minute move slowly: every 10 s is live enough and cheap. */
const THROUGHPUT_REFRESH_MS = 10_000;

// One colour per series, the console's: sky = moving (steps), emerald = new work
// (enrollments), violet = what came in from outside (events).
const SERIES: { key: Series; label: string; color: string }[] = [
  { key: 'enrollments', label: 'Enrollments', color: '#059669' },
  { key: 'stepsRun', label: 'Steps run', color: '#0284c7' },
  { key: 'eventsTracked', label: 'Events tracked', color: '#7c3aed' },
];

/** "10:42" in UTC, as every absolute time of the console. */
function minuteLabel(at: number): string {
  return new Date(at).toISOString().slice(11, 16);
}

/** "2026-12-01 10:42 UTC": the minute a bucket starts. */
function absoluteMinute(at: number): string {
  const iso = new Date(at).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}

/** Four even steps from 0 covering `max`, each a round number (1, 2, 2.5, 3, 4, 5, 6 or 8 × 10^k): the y axis's ticks. */
function yTicksFor(max: number): number[] {
  const raw = Math.max(1, max / 4);
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 3, 4, 5, 6, 8, 10].map((m) => m * magnitude).find((s) => s >= raw && Number.isInteger(s)) ?? 10 * magnitude;
  return [0, step, 2 * step, 3 * step, 4 * step];
}

function ThroughputTooltip({ active, payload, label }: TooltipContentProps<TooltipValueType, string | number>) {
  if (!active || !payload?.length) return null;
  const at = Number(label);
  return (
    <div className="rounded border border-zinc-200 bg-white px-2.5 py-1.5 text-xs shadow-sm">
      <p className="mb-1 font-medium text-zinc-700">
        {absoluteMinute(at)} <span className="font-normal text-zinc-400">– {minuteLabel(at + 60_000)}</span>
      </p>
      <ul className="space-y-0.5">
        {SERIES.map((s) => {
          const value = payload.find((p) => p.dataKey === s.key)?.value ?? 0;
          return (
            <li key={s.key} className="flex items-center gap-2">
              <span className="size-2 rounded-full" style={{ backgroundColor: s.color }} aria-hidden />
              <span className="text-zinc-600">{s.label}</span>
              <span className="ml-auto pl-3 font-medium tabular-nums">{Number(value).toLocaleString()}</span>
            </li>
          );
        })}
      </ul>
    </div>
  );
}

/** A sentence for screen readers and the panel header: the hour in numbers. */
function totalsSentence(data: Throughput): string {
  const t = data.totals;
  return `In the last ${data.minutes} minutes: ${t.enrollments.toLocaleString()} enrollments, ${t.stepsRun.toLocaleString()} steps run, ${t.eventsTracked.toLocaleString()} events tracked.`;
}

/**
 * What the engine did, minute by minute, over the last hour: executions started, step
 * executions finished and events tracked (overview.throughput), refreshed every 10 s
 * without re-animating. The totals are text too, and every busy minute is in a table.
 */
export function ThroughputPanel() {
  const trpc = useTRPC();
  const { data, error, dataUpdatedAt, isFetching, isPending } = useQuery(
    trpc.overview.throughput.queryOptions(THROUGHPUT_INPUT, { refetchInterval: THROUGHPUT_REFRESH_MS }),
  );
  const points = useMemo(() => data?.buckets.map((b) => ({ ...b, at: b.at.getTime() })) ?? [], [data]);
  // A tick every ten minutes, on the clock's tens.
  const ticks = useMemo(() => points.filter((p) => new Date(p.at).getUTCMinutes() % 10 === 0).map((p) => p.at), [points]);
  const yTicks = useMemo(() => yTicksFor(Math.max(0, ...points.map((p) => Math.max(p.enrollments, p.stepsRun, p.eventsTracked)))), [points]);
  const busy = useMemo(() => points.filter((p) => p.enrollments + p.stepsRun + p.eventsTracked > 0), [points]);
  const idle = data ? data.totals.enrollments + data.totals.stepsRun + data.totals.eventsTracked === 0 : false;

  return (
    <Panel
      title="Throughput"
      labelledBy="throughput-heading"
      summary={<span className="text-xs whitespace-nowrap text-zinc-500">per minute, last hour</span>}
      aside={data && <Freshness updatedAt={dataUpdatedAt} fetching={isFetching} />}
    >
      {error && <LoadError what="the throughput" message={error.message} />}
      {isPending && !error && (
        <p className="px-4 py-6 text-zinc-500" aria-live="polite">
          Loading the last hour…
        </p>
      )}
      {data && (
        <div className="px-2 pt-2 pb-1">
          {/* The chart's legend, and its totals for the hour. */}
          <dl className="flex flex-wrap gap-x-5 gap-y-1 px-2 pb-1" aria-label="Legend: the hour's totals per series" data-testid="throughput-legend">
            {SERIES.map((s) => (
              <div key={s.key} className="flex items-baseline gap-1.5">
                <dt className="flex items-center gap-1.5 text-xs text-zinc-500">
                  <span className="h-0.5 w-3.5 rounded-full" style={{ backgroundColor: s.color }} aria-hidden />
                  {s.label}
                </dt>
                <dd className="text-sm font-semibold tabular-nums" data-testid={`throughput-total-${s.key}`}>
                  {data.totals[s.key].toLocaleString()}
                </dd>
              </div>
            ))}
          </dl>
          <figure role="img" aria-label={`Line chart. ${totalsSentence(data)}`} className="relative h-48" data-testid="throughput-chart">
            <ResponsiveContainer width="100%" height="100%" initialDimension={{ width: 600, height: 192 }}>
              <LineChart data={points} margin={{ top: 6, right: 12, bottom: 14, left: 0 }}>
                <CartesianGrid stroke="#f4f4f5" vertical={false} />
                <XAxis
                  dataKey="at"
                  type="number"
                  scale="time"
                  domain={['dataMin', 'dataMax']}
                  ticks={ticks}
                  tickFormatter={minuteLabel}
                  tick={{ fontSize: 11, fill: '#71717a' }}
                  tickLine={false}
                  axisLine={{ stroke: '#e4e4e7' }}
                  label={{
                    value: `minute (UTC), ${minuteLabel(data.since.getTime())}–${minuteLabel(data.until.getTime())}`,
                    position: 'insideBottom',
                    offset: -10,
                    fontSize: 11,
                    fill: '#a1a1aa',
                  }}
                />
                <YAxis
                  allowDecimals={false}
                  domain={[0, yTicks[yTicks.length - 1]!]}
                  ticks={yTicks}
                  width={44}
                  tick={{ fontSize: 11, fill: '#71717a' }}
                  tickLine={false}
                  axisLine={false}
                  label={{ value: 'per minute', angle: -90, position: 'insideLeft', offset: 12, fontSize: 11, fill: '#a1a1aa', dy: 30 }}
                />
                <Tooltip content={ThroughputTooltip} isAnimationActive={false} cursor={{ stroke: '#d4d4d8' }} />
                {SERIES.map((s) => (
                  <Line
                    key={s.key}
                    dataKey={s.key}
                    name={s.label}
                    type="monotone"
                    stroke={s.color}
                    strokeWidth={1.75}
                    dot={false}
                    activeDot={{ r: 3 }}
                    isAnimationActive={false}
                  />
                ))}
              </LineChart>
            </ResponsiveContainer>
            {idle && (
              <figcaption className="pointer-events-none absolute inset-0 flex items-center justify-center text-zinc-400">
                Nothing enrolled, run or tracked in the last hour.
              </figcaption>
            )}
          </figure>
          <p className="sr-only">{totalsSentence(data)}</p>
          {busy.length > 0 && (
            <details className="px-2 pb-1 text-xs text-zinc-500">
              <summary className="cursor-pointer select-none hover:text-zinc-700">
                As a table ({busy.length} busy {busy.length === 1 ? 'minute' : 'minutes'})
              </summary>
              <div className="mt-1 max-h-48 overflow-y-auto">
                <table className="w-full text-left tabular-nums">
                  <thead className="sticky top-0 bg-white text-[11px] uppercase tracking-wide text-zinc-500">
                    <tr>
                      <th scope="col" className="py-1 font-medium">
                        Minute
                      </th>
                      {SERIES.map((s) => (
                        <th key={s.key} scope="col" className="py-1 text-right font-medium">
                          {s.label}
                        </th>
                      ))}
                    </tr>
                  </thead>
                  <tbody className="divide-y divide-zinc-100 text-zinc-700">
                    {busy
                      .slice()
                      .reverse()
                      .map((p) => (
                        <tr key={p.at}>
                          <td className="py-0.5">{absoluteMinute(p.at)}</td>
                          {SERIES.map((s) => (
                            <td key={s.key} className="py-0.5 text-right">
                              {p[s.key].toLocaleString()}
                            </td>
                          ))}
                        </tr>
                      ))}
                  </tbody>
                </table>
              </div>
            </details>
          )}
        </div>
      )}
    </Panel>
  );
}
