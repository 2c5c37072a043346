'use client';

import { useEffect, useState } from 'react';

// Times as operators read them: relative ("3 min ago", "in 2 h 14 min"), with the
// absolute time on hover. The absolute form is UTC and fixed-format, so the server's
// render and the browser's agree; the relative form ticks in the browser.

/** The current time, re-read every `everyMs` (one timer per component). */
export function useNow(everyMs = 1_000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(timer);
  }, [everyMs]);
  return now;
}

/** "2026-12-01 12:04:05 UTC" */
export function absoluteTime(at: Date | string | number): string {
  const iso = new Date(at).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;
}

/** A date and time in the reader's own locale and zone (Settings' tables); "—" for none. */
export function localDateTime(value: Date | string | null): string {
  return value ? new Date(value).toLocaleString() : '—';
}

/** "2 h 14 min", "45 s", "3 d 4 h": the two largest units. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(Math.abs(ms) / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 && m < 10 ? `${m} min ${s % 60} s` : `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 24) return m % 60 ? `${h} h ${m % 60} min` : `${h} h`;
  const d = Math.floor(h / 24);
  return h % 24 ? `${d} d ${h % 24} h` : `${d} d`;
}

export function relativeTime(at: Date | string | number, now: number): string {
  const diff = new Date(at).getTime() - now;
  if (Math.abs(diff) < 1_000) return 'now';
  return diff > 0 ? `in ${formatDuration(diff)}` : `${formatDuration(diff)} ago`;
}

/** A time shown relative to now, absolute on hover; ticks every `everyMs`. */
export function RelativeTime({ at, everyMs = 5_000, className }: { at: Date | string | null | undefined; everyMs?: number; className?: string }) {
  const now = useNow(everyMs);
  if (!at) return <span className="text-zinc-400">—</span>;
  return (
    <time dateTime={new Date(at).toISOString()} title={absoluteTime(at)} className={className} suppressHydrationWarning>
      {relativeTime(at, now)}
    </time>
  );
}

/** How long ago something began, e.g. a stuck reason's age ("14 min"). */
export function Age({ since, className }: { since: Date | string; className?: string }) {
  const now = useNow(5_000);
  return (
    <time dateTime={new Date(since).toISOString()} title={`since ${absoluteTime(since)}`} className={className} suppressHydrationWarning>
      {formatDuration(now - new Date(since).getTime())}
    </time>
  );
}

/** A live countdown to a moment ("2 h 14 min 05 s"), or how long it is overdue. */
export function Countdown({ to, className }: { to: Date | string; className?: string }) {
  const now = useNow(1_000);
  const ms = new Date(to).getTime() - now;
  const s = Math.floor(Math.abs(ms) / 1000);
  const parts = [Math.floor(s / 86400), Math.floor((s % 86400) / 3600), Math.floor((s % 3600) / 60), s % 60];
  const [d, h, m, sec] = parts as [number, number, number, number];
  const text = `${d ? `${d} d ` : ''}${d || h ? `${h} h ` : ''}${m} min ${String(sec).padStart(2, '0')} s`;
  return (
    <time dateTime={new Date(to).toISOString()} title={absoluteTime(to)} className={`tabular-nums ${className ?? ''}`} suppressHydrationWarning>
      {ms >= 0 ? `in ${text}` : `${text} overdue`}
    </time>
  );
}
