'use client';

import Link from 'next/link';
import { useEffect, useState } from 'react';
import { EXECUTION_STATUSES } from '@/server/common/execution-status';
import { absoluteTime, formatDuration, useNow } from '../../_components/time';
import type { ContactDetail } from '../search';

// A contact's journey on one time axis: a lane per execution, from when it started to when
// it finished (or now, while it runs or waits), coloured by status and labelled with its
// workflow and current step, each a link to the execution; the events tracked for the
// contact and the emails sent to it as marks on lanes of their own, on the same axis, so
// "the purchase came in, then the wait resumed, then the thank-you went out" reads left to
// right. Plain positioned elements: percentages of the axis, nothing to lay out by hand.

type Execution = ContactDetail['executions'][number];

const BAR_TONES: Record<string, string> = {
  RUNNING: 'bg-sky-500',
  WAITING: 'bg-amber-400',
  COMPLETED: 'bg-emerald-500',
  EXITED: 'bg-zinc-400',
  FAILED: 'bg-red-500',
  CANCELLED: 'bg-zinc-300',
};


const STEPS_MS = [1, 5, 15, 30, 60, 300, 900, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86400, 7 * 86400, 30 * 86400].map((s) => s * 1000);

/** Round-numbered ticks across [from, to] (about six of them) and the step between them. */
function ticks(from: number, to: number): { at: number[]; step: number } {
  const span = to - from;
  const step = STEPS_MS.find((s) => span / s <= 7) ?? STEPS_MS[STEPS_MS.length - 1]!;
  const first = Math.ceil(from / step) * step;
  const at: number[] = [];
  for (let t = first; t <= to; t += step) at.push(t);
  return { at, step };
}

/** A tick's label, as precise as the step between ticks needs (UTC, like every absolute time). */
function tickLabel(at: number, step: number): string {
  const iso = new Date(at).toISOString();
  if (step < 60_000) return iso.slice(11, 19);
  if (step < 86_400_000) return new Date(at).getUTCHours() === 0 && new Date(at).getUTCMinutes() === 0 ? iso.slice(5, 10) : iso.slice(11, 16);
  return iso.slice(5, 10);
}

const LABEL_WIDTH = 'w-64';

export function JourneyTimeline({ executions, events, messages }: Pick<ContactDetail, 'executions' | 'events' | 'messages'>) {
  const now = useNow(5_000);
  // Drawn in the browser only: positions depend on "now", which the server's render and
  // the browser's would disagree on.
  const [mounted, setMounted] = useState(false);
  useEffect(() => setMounted(true), []);
  if (executions.length === 0 && events.length === 0) {
    return <p className="px-4 py-6 text-center text-zinc-500">No journey yet: this contact has not been enrolled into a workflow and no event was tracked for it.</p>;
  }
  if (!mounted) {
    return (
      <p role="status" className="px-4 py-6 text-center text-zinc-500">
        Drawing the journey…
      </p>
    );
  }
  const ends = (e: Execution) => (e.finishedAt ? new Date(e.finishedAt).getTime() : now);
  const times = [
    ...executions.flatMap((e) => [new Date(e.startedAt).getTime(), ends(e)]),
    ...events.map((ev) => new Date(ev.createdAt).getTime()),
    ...messages.map((m) => new Date(m.sentAt ?? m.createdAt).getTime()),
  ];
  const rawFrom = Math.min(...times);
  const rawTo = Math.max(...times, now);
  // A little room either side, and at least a minute in all, so an instant is not a zero-width axis.
  const pad = Math.max((rawTo - rawFrom) * 0.03, 2_000);
  const to = rawTo + pad;
  const from = Math.min(rawFrom - pad, to - 60_000);
  const span = to - from;
  const x = (at: number) => `${((at - from) / span) * 100}%`;
  const { at: axisTicks, step } = ticks(from, to);
  // Oldest first, top to bottom: the story reads downwards as well as rightwards.
  const lanes = [...executions].reverse();

  return (
    <figure aria-label="Journey timeline" className="px-4 py-3">
      <div className="flex items-center gap-3 pb-2 text-[11px] text-zinc-500">
        {EXECUTION_STATUSES.map((status) => (
          <span key={status} className="inline-flex items-center gap-1">
            <span className={`inline-block size-2.5 rounded-sm ${BAR_TONES[status]}`} aria-hidden />
            {status.toLowerCase()}
          </span>
        ))}
        <span className="inline-flex items-center gap-1">
          <span className="inline-block size-2.5 rotate-45 bg-violet-500" aria-hidden />
          event
        </span>
        <span className="inline-flex items-center gap-1">
          <span className="inline-block size-2.5 rounded-full bg-sky-700" aria-hidden />
          email
        </span>
        <span className="ml-auto">times in UTC · now at the right edge</span>
      </div>
      <div className="relative">
        {/* Gridlines behind every lane. */}
        <div className="pointer-events-none absolute inset-y-0 right-0 left-64" aria-hidden>
          {axisTicks.map((at) => (
            <span key={at} className="absolute inset-y-0 border-l border-dashed border-zinc-200" style={{ left: x(at) }} />
          ))}
          <span className="absolute inset-y-0 border-l border-sky-400" style={{ left: x(now) }} title={`now: ${absoluteTime(now)}`} />
        </div>
        <ol className="relative max-h-96 space-y-1 overflow-y-auto" aria-label="Executions on the timeline">
          {lanes.map((e) => {
            const start = new Date(e.startedAt).getTime();
            const end = ends(e);
            const title = `${e.workflowName}: ${e.status}${e.stepName ? ` at ${e.stepName}` : ''} · started ${absoluteTime(start)}${
              e.finishedAt ? ` · finished ${absoluteTime(end)}` : ''
            } · ${formatDuration(end - start)}`;
            return (
              <li key={e.id} className="flex h-6 items-center" data-testid="journey-lane">
                <Link href={`/executions/${e.id}`} className={`${LABEL_WIDTH} shrink-0 truncate pr-3 text-xs text-zinc-700 hover:text-sky-700 hover:underline`} title={title}>
                  <span className="font-medium">{e.workflowName}</span>
                  <span className="text-zinc-400"> · </span>
                  <span className={e.stepName ? 'text-zinc-600' : 'text-zinc-400'}>{e.stepName ?? (e.finishedAt ? e.status.toLowerCase() : 'no step')}</span>
                </Link>
                <div className="relative h-full min-w-0 flex-1">
                  <Link
                    href={`/executions/${e.id}`}
                    aria-label={title}
                    title={title}
                    className={`absolute top-1 bottom-1 min-w-1.5 rounded-sm ${BAR_TONES[e.status] ?? 'bg-zinc-400'} ${
                      e.finishedAt ? '' : 'rounded-r-none'
                    } hover:ring-2 hover:ring-sky-300 focus-visible:ring-2 focus-visible:ring-sky-500 focus-visible:outline-none`}
                    style={{ left: x(start), width: `max(6px, calc(${x(end)} - ${x(start)}))` }}
                  />
                </div>
              </li>
            );
          })}
          {events.length > 0 && (
            <li className="flex h-6 items-center border-t border-zinc-100 pt-1">
              <span className={`${LABEL_WIDTH} shrink-0 pr-3 text-xs font-medium text-zinc-500`}>Events tracked</span>
              <div className="relative h-full min-w-0 flex-1">
                {events.map((ev) => (
                  <span
                    key={ev.id}
                    title={`${ev.name} · ${absoluteTime(ev.createdAt)} · ${ev.state}`}
                    className={`absolute top-1/2 size-2.5 -translate-x-1/2 -translate-y-1/2 rotate-45 ${ev.state === 'dead' ? 'bg-red-500' : 'bg-violet-500'}`}
                    style={{ left: x(new Date(ev.createdAt).getTime()) }}
                  />
                ))}
              </div>
            </li>
          )}
          {messages.length > 0 && (
            <li className="flex h-6 items-center">
              <span className={`${LABEL_WIDTH} shrink-0 pr-3 text-xs font-medium text-zinc-500`}>Emails</span>
              <div className="relative h-full min-w-0 flex-1">
                {messages.map((m) => (
                  <span
                    key={m.id}
                    title={`${m.subject} · ${m.status} · ${absoluteTime(m.sentAt ?? m.createdAt)}`}
                    className={`absolute top-1/2 size-2.5 -translate-x-1/2 -translate-y-1/2 rounded-full ${m.status === 'FAILED' ? 'bg-red-500' : 'bg-sky-700'}`}
                    style={{ left: x(new Date(m.sentAt ?? m.createdAt).getTime()) }}
                  />
                ))}
              </div>
            </li>
          )}
        </ol>
        <div className="relative mt-1 ml-64 h-4 border-t border-zinc-300 text-[10.5px] text-zinc-500 tabular-nums" aria-hidden>
          {axisTicks.map((at) => (
            <span key={at} className="absolute top-0.5 -translate-x-1/2 whitespace-nowrap" style={{ left: x(at) }}>
              {tickLabel(at, step)}
            </span>
          ))}
        </div>
      </div>
    </figure>
  );
}
