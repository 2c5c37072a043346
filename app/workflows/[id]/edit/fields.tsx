'use client';

import { useId, useState, type ReactNode } from 'react';
import { formatDuration } from '../../../_components/time';

// The side form's building blocks: a labelled field with its problems under it (the
// schema's messages, said plainly), and a duration typed in friendly units.

/** zod's wording for what a marketer reads as "required" or "too long". */
export function friendly(message: string): string {
  if (/expected (number|string), received undefined/.test(message)) return 'required';
  if (/expected number, received (NaN|string|null)/.test(message)) return 'a whole number, please';
  if (/expected int/.test(message)) return 'a whole number, please';
  const branch = /^CONDITION "[^"]+" has no "(yes|no)" transition$/.exec(message);
  if (branch) return `choose where “${branch[1]}” goes`;
  if (/^step "[^"]+" cannot be reached from the trigger$/.test(message)) return 'nothing leads here: it cannot be reached from the trigger';
  if (message === 'Invalid key in record') return 'field names: letters, digits, _ and - only (1 to 100)';
  const min = /Too small: expected string to have >=(\d+) character/.exec(message);
  if (min) return min[1] === '1' ? 'required' : `at least ${min[1]} characters`;
  const max = /Too big: expected string to have <=(\d+) character/.exec(message);
  if (max) return `at most ${Number(max[1]).toLocaleString()} characters`;
  const nmin = /Too small: expected number to be >=(\d+)/.exec(message);
  if (nmin) return `at least ${nmin[1]}`;
  const nmax = /Too big: expected number to be <=(\d+)/.exec(message);
  if (nmax) return `at most ${formatDuration(Number(nmax[1]) * 1000)} (${Number(nmax[1]).toLocaleString()} s)`;
  return message;
}

export const inputBase =
  'rounded border border-zinc-300 bg-white px-2 py-1 text-[13px] text-zinc-900 focus:border-sky-500 focus:ring-2 focus:ring-sky-200 focus:outline-none aria-[invalid=true]:border-red-400 aria-[invalid=true]:bg-red-50/40 disabled:bg-zinc-50 disabled:text-zinc-500';
export const inputClass = `${inputBase} w-full`;

export function Field({
  label,
  hint,
  problems,
  children,
}: {
  label: string;
  hint?: ReactNode;
  problems: string[];
  children: (props: { id: string; 'aria-invalid': boolean; 'aria-describedby': string }) => ReactNode;
}) {
  const id = useId();
  const describedBy = `${id}-problems`;
  return (
    <div className="space-y-0.5">
      <label htmlFor={id} className="block text-xs font-medium text-zinc-700">
        {label}
        {hint && <span className="ml-1 font-normal text-zinc-500">{hint}</span>}
      </label>
      {children({ id, 'aria-invalid': problems.length > 0, 'aria-describedby': describedBy })}
      <div id={describedBy} data-testid="field-problems">
        {problems.map((p) => (
          <p key={p} className="text-xs text-red-700">
            {friendly(p)}
          </p>
        ))}
      </div>
    </div>
  );
}

const UNITS = [
  { label: 'days', seconds: 86400 },
  { label: 'hours', seconds: 3600 },
  { label: 'minutes', seconds: 60 },
  { label: 'seconds', seconds: 1 },
] as const;

/** The largest unit the seconds are a whole number of. */
function unitFor(seconds: number): number {
  return (UNITS.find((u) => seconds > 0 && seconds % u.seconds === 0) ?? UNITS[1]).seconds;
}

/**
 * Seconds typed as a number and a unit ("3 days"). What is typed stays as typed (an
 * empty box while retyping is not turned into 0); the config holds whole seconds, or
 * nothing while the box is not a whole number, which the schema then reports.
 */
export function DurationField({
  label,
  hint,
  seconds,
  problems,
  onChange,
  disabled,
  testId,
}: {
  label: string;
  hint?: string;
  seconds: unknown;
  problems: string[];
  onChange: (seconds: number | undefined) => void;
  disabled: boolean;
  testId: string;
}) {
  const initial = typeof seconds === 'number' && Number.isFinite(seconds) ? seconds : null;
  const [unit, setUnit] = useState(() => (initial === null ? 3600 : unitFor(initial)));
  const [text, setText] = useState(() => (initial === null ? '' : String(initial / unitFor(initial))));
  const apply = (t: string, u: number) => {
    const n = Number(t);
    onChange(t.trim() !== '' && Number.isFinite(n) ? Math.round(n * u) : undefined);
  };
  const local = text.trim() !== '' && !Number.isFinite(Number(text)) ? ['a number, please'] : [];
  const shown = typeof seconds === 'number' && Number.isFinite(seconds) ? seconds : null;
  return (
    <Field label={label} hint={hint} problems={[...local, ...problems]}>
      {(props) => (
        <div className="flex items-center gap-1.5">
          <input
            {...props}
            type="number"
            min={0}
            step="any"
            inputMode="decimal"
            value={text}
            disabled={disabled}
            data-testid={testId}
            onChange={(e) => {
              setText(e.target.value);
              apply(e.target.value, unit);
            }}
            className={`${inputBase} w-24 tabular-nums`}
          />
          <select
            aria-label={`${label}: unit`}
            value={unit}
            disabled={disabled}
            onChange={(e) => {
              const u = Number(e.target.value);
              setUnit(u);
              apply(text, u);
            }}
            className="rounded border border-zinc-300 bg-white px-1.5 py-1 text-[13px]"
          >
            {UNITS.map((u) => (
              <option key={u.seconds} value={u.seconds}>
                {u.label}
              </option>
            ))}
          </select>
          <span className="text-xs whitespace-nowrap text-zinc-500 tabular-nums">{shown !== null && shown > 0 ? `= ${formatDuration(shown * 1000)}` : shown === 0 ? '= no wait' : ''}</span>
        </div>
      )}
    </Field>
  );
}
