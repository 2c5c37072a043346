'use client';

import { usePathname, useSearchParams } from 'next/navigation';
import { useCallback, useEffect, useMemo, useState, type ReactNode } from 'react';
import { useHydrated } from './hydrated';
import { inputFromSearch, searchFromInput, type SearchSpec } from './search-params';

/**
 * A page's filters as URL state: reads them with useSearchParams and writes them with
 * history.replaceState (Next.js keeps useSearchParams in step), so filtering never adds a
 * history entry or re-renders the server page, and the address bar is always a link to
 * exactly this view. Changing a filter leaves the current page (drops the cursors).
 *
 * Next.js hears of history.replaceState only once its router is running (it patches it in
 * an effect after hydration): a change written before that moves the address bar and
 * nothing else, so the view keeps its old rows under a URL naming other filters. The
 * controls below are therefore disabled until the page is hydrated (useHydrated), and so
 * should a view's own control be that writes the URL (the executions view's selects are):
 * a click is then refused visibly, never half taken.
 */
export function useUrlInput(spec: SearchSpec) {
  const searchParams = useSearchParams();
  const pathname = usePathname();
  const input = useMemo(() => inputFromSearch(new URLSearchParams(searchParams.toString()), spec), [searchParams, spec]);
  const replace = useCallback(
    (next: Record<string, string | string[] | undefined>) => {
      window.history.replaceState(null, '', `${pathname}${searchFromInput(next)}`);
    },
    [pathname],
  );
  const setFilter = useCallback(
    (key: string, value: string | string[] | undefined) => {
      const { cursor: _c, before: _b, ...rest } = input;
      const empty = value === undefined || value === '' || (Array.isArray(value) && value.length === 0);
      replace({ ...rest, [key]: empty ? undefined : value });
    },
    [input, replace],
  );
  const setPage = useCallback(
    (page: { cursor?: string; before?: string }) => {
      const { cursor: _c, before: _b, ...rest } = input;
      replace({ ...rest, ...page });
    },
    [input, replace],
  );
  const clear = useCallback(() => replace({}), [replace]);
  return { input, setFilter, setPage, clear, replace };
}

export function FilterBar({ children, onClear, active }: { children: ReactNode; onClear: () => void; active: boolean }) {
  const hydrated = useHydrated();
  return (
    <div role="search" className="flex flex-wrap items-end gap-x-3 gap-y-2 border-b border-zinc-200 px-4 py-2.5">
      {children}
      <button
        type="button"
        onClick={onClear}
        disabled={!hydrated || !active}
        className="h-7 rounded px-2 text-xs text-zinc-600 hover:bg-zinc-100 hover:text-zinc-900 disabled:text-zinc-300 disabled:hover:bg-transparent"
      >
        Clear filters
      </button>
    </div>
  );
}

export function Field({ label, children, htmlFor }: { label: string; children: ReactNode; htmlFor?: string }) {
  return (
    <div className="flex flex-col gap-0.5">
      <label htmlFor={htmlFor} className="text-[10.5px] font-medium tracking-wide text-zinc-500 uppercase">
        {label}
      </label>
      {children}
    </div>
  );
}

export const INPUT_CLASS =
  'h-7 rounded border border-zinc-300 bg-white px-2 text-[13px] text-zinc-900 shadow-xs focus:border-sky-500 focus:ring-1 focus:ring-sky-500 focus:outline-none';

/** A text filter applied on Enter, on leaving the field, or after a pause in typing. */
export function TextFilter({
  id,
  label,
  value,
  onApply,
  placeholder,
  width = 'w-44',
  list,
}: {
  id: string;
  label: string;
  value: string | undefined;
  onApply: (value: string | undefined) => void;
  placeholder?: string;
  width?: string;
  list?: string;
}) {
  const hydrated = useHydrated();
  const [draft, setDraft] = useState(value ?? '');
  useEffect(() => setDraft(value ?? ''), [value]);
  useEffect(() => {
    if (draft === (value ?? '')) return;
    const timer = setTimeout(() => onApply(draft.trim() || undefined), 600);
    return () => clearTimeout(timer);
  }, [draft, value, onApply]);
  return (
    <Field label={label} htmlFor={id}>
      <input
        id={id}
        type="search"
        list={list}
        value={draft}
        placeholder={placeholder}
        disabled={!hydrated}
        onChange={(e) => setDraft(e.target.value)}
        onKeyDown={(e) => e.key === 'Enter' && onApply(draft.trim() || undefined)}
        onBlur={() => draft !== (value ?? '') && onApply(draft.trim() || undefined)}
        className={`${INPUT_CLASS} ${width}`}
      />
    </Field>
  );
}

/** Several values of one filter, each a toggle button (aria-pressed), with an optional count. */
export function ChipGroup({
  label,
  options,
  selected,
  onChange,
}: {
  label: string;
  options: { value: string; label?: ReactNode; count?: number; title?: string }[];
  selected: string[];
  onChange: (values: string[]) => void;
}) {
  const hydrated = useHydrated();
  return (
    <div role="group" aria-label={label} className="flex flex-col gap-0.5">
      <span className="text-[10.5px] font-medium tracking-wide text-zinc-500 uppercase">{label}</span>
      <div className="flex flex-wrap gap-1">
        {options.map((o) => {
          const on = selected.includes(o.value);
          return (
            <button
              key={o.value}
              type="button"
              aria-pressed={on}
              disabled={!hydrated}
              title={o.title}
              onClick={() => onChange(on ? selected.filter((v) => v !== o.value) : [...selected, o.value])}
              className={`inline-flex h-7 items-center gap-1.5 rounded border px-2 text-xs whitespace-nowrap disabled:cursor-wait ${
                on ? 'border-sky-600 bg-sky-600 text-white' : 'border-zinc-300 bg-white text-zinc-700 hover:border-zinc-400'
              }`}
            >
              {o.label ?? o.value}
              {o.count !== undefined && (
                <span className={`tabular-nums ${on ? 'text-sky-100' : o.count > 0 ? 'text-zinc-500' : 'text-zinc-300'}`}>{o.count.toLocaleString()}</span>
              )}
            </button>
          );
        })}
      </div>
    </div>
  );
}

const PRESETS = [
  { key: '1h', label: 'Last hour', ms: 3_600_000 },
  { key: '24h', label: 'Last 24 hours', ms: 86_400_000 },
  { key: '7d', label: 'Last 7 days', ms: 7 * 86_400_000 },
  { key: '30d', label: 'Last 30 days', ms: 30 * 86_400_000 },
] as const;

function toLocalInput(iso: string | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/**
 * A time range as two absolute instants in the URL (since, until): a preset is turned into
 * an instant when chosen, so a shared link keeps showing the same window.
 */
export function TimeRange({
  since,
  until,
  onChange,
  label = 'Started',
}: {
  since: string | undefined;
  until: string | undefined;
  onChange: (range: { since?: string; until?: string }) => void;
  label?: string;
}) {
  const hydrated = useHydrated();
  return (
    <div role="group" aria-label={`${label} between`} className="flex items-end gap-1.5">
      <Field label={`${label} from`} htmlFor="range-since">
        <input
          id="range-since"
          type="datetime-local"
          value={toLocalInput(since)}
          disabled={!hydrated}
          onChange={(e) => onChange({ since: e.target.value ? new Date(e.target.value).toISOString() : undefined, until })}
          className={`${INPUT_CLASS} w-44`}
        />
      </Field>
      <Field label="to" htmlFor="range-until">
        <input
          id="range-until"
          type="datetime-local"
          value={toLocalInput(until)}
          disabled={!hydrated}
          onChange={(e) => onChange({ since, until: e.target.value ? new Date(e.target.value).toISOString() : undefined })}
          className={`${INPUT_CLASS} w-44`}
        />
      </Field>
      <select
        aria-label="Time range preset"
        value=""
        disabled={!hydrated}
        onChange={(e) => {
          const preset = PRESETS.find((p) => p.key === e.target.value);
          if (preset) onChange({ since: new Date(Date.now() - preset.ms).toISOString(), until: undefined });
          if (e.target.value === 'any') onChange({});
        }}
        className={`${INPUT_CLASS} w-28`}
      >
        <option value="">Preset…</option>
        {PRESETS.map((p) => (
          <option key={p.key} value={p.key}>
            {p.label}
          </option>
        ))}
        <option value="any">Any time</option>
      </select>
    </div>
  );
}

/** Keyset paging: newer and older pages, and back to the newest. */
export function Pager({
  prevCursor,
  nextCursor,
  onPage,
  count,
  what,
  atStart,
}: {
  prevCursor: string | null;
  nextCursor: string | null;
  onPage: (page: { cursor?: string; before?: string }) => void;
  count: number;
  what: string;
  atStart: boolean;
}) {
  const hydrated = useHydrated();
  const button =
    'inline-flex h-7 items-center rounded border border-zinc-300 bg-white px-2.5 text-xs font-medium text-zinc-700 shadow-xs hover:border-zinc-400 disabled:cursor-not-allowed disabled:text-zinc-300 disabled:shadow-none';
  return (
    <nav aria-label="Pages" className="flex items-center gap-2 border-t border-zinc-200 px-4 py-2 text-xs text-zinc-500">
      <span className="tabular-nums">
        {count.toLocaleString()} {what} on this page · newest first
      </span>
      <div className="ml-auto flex gap-1.5">
        <button type="button" className={button} disabled={!hydrated || atStart} onClick={() => onPage({})}>
          Newest
        </button>
        <button type="button" className={button} disabled={!hydrated || !prevCursor} onClick={() => prevCursor && onPage({ before: prevCursor })}>
          ← Previous
        </button>
        <button type="button" className={button} disabled={!hydrated || !nextCursor} onClick={() => nextCursor && onPage({ cursor: nextCursor })}>
          Next →
        </button>
      </div>
    </nav>
  );
}
