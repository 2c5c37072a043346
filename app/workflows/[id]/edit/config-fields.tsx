'use client';

import { useState } from 'react';
import { DurationField, Field, inputBase, inputClass } from './fields';
import { issuesAt, type FieldIssue } from './validation';

// Each step type's config as form fields (SEND_EMAIL has its own file, with its
// preview). Every field writes the config the schema checks, and shows the schema's
// problems for its own path.

export interface ConfigProps {
  config: Record<string, unknown>;
  issues: FieldIssue[] | undefined;
  onChange: (config: Record<string, unknown>) => void;
  disabled: boolean;
}

const set = (config: Record<string, unknown>, key: string, value: unknown) => {
  const next = { ...config };
  if (value === undefined) delete next[key];
  else next[key] = value;
  return next;
};

export function DelayFields({ config, issues, onChange, disabled }: ConfigProps) {
  return (
    <DurationField
      label="Wait for"
      hint="then go on"
      seconds={config.seconds}
      problems={issuesAt(issues, 'config.seconds')}
      onChange={(s) => onChange(set(config, 'seconds', s))}
      disabled={disabled}
      testId="delay-amount"
    />
  );
}

export function WaitFields({ config, issues, onChange, disabled }: ConfigProps) {
  return (
    <>
      <Field label="Event name" hint="(as tracked, e.g. purchase)" problems={issuesAt(issues, 'config.eventName')}>
        {(props) => (
          <input
            {...props}
            value={typeof config.eventName === 'string' ? config.eventName : ''}
            onChange={(e) => onChange(set(config, 'eventName', e.target.value))}
            disabled={disabled}
            spellCheck={false}
            className={`${inputClass} font-mono`}
          />
        )}
      </Field>
      <DurationField
        label="Time out after"
        hint="then take TIMEOUT"
        seconds={config.timeoutSeconds}
        problems={issuesAt(issues, 'config.timeoutSeconds')}
        onChange={(s) => onChange(set(config, 'timeoutSeconds', s))}
        disabled={disabled}
        testId="wait-timeout"
      />
    </>
  );
}

const OPS: [string, string][] = [
  ['eq', 'equals'],
  ['neq', 'does not equal'],
  ['gt', 'is greater than'],
  ['gte', 'is at least'],
  ['lt', 'is less than'],
  ['lte', 'is at most'],
  ['contains', 'contains'],
  ['exists', 'is set'],
  ['not_exists', 'is not set'],
];

type Scalar = string | number | boolean | null;
type ValueKind = 'text' | 'number' | 'true' | 'false' | 'null';
const kindOf = (v: unknown): ValueKind => (typeof v === 'number' ? 'number' : v === true ? 'true' : v === false ? 'false' : v === null ? 'null' : 'text');

/** A JSON scalar typed as text, a number, yes/no or nothing. */
function ScalarInput({ value, onChange, disabled, label, nullLabel, ...props }: { value: unknown; onChange: (v: Scalar | undefined) => void; disabled: boolean; label: string; nullLabel: string; id?: string; 'aria-invalid'?: boolean; 'aria-describedby'?: string }) {
  const [kind, setKind] = useState<ValueKind>(kindOf(value));
  const [text, setText] = useState(typeof value === 'string' || typeof value === 'number' ? String(value) : '');
  const emit = (k: ValueKind, t: string) => {
    if (k === 'text') onChange(t);
    else if (k === 'number') onChange(t.trim() !== '' && Number.isFinite(Number(t)) ? Number(t) : undefined);
    else onChange(k === 'true' ? true : k === 'false' ? false : null);
  };
  return (
    <div className="flex min-w-0 flex-1 gap-1">
      <select
        aria-label={`${label}: type`}
        value={kind}
        disabled={disabled}
        onChange={(e) => {
          const k = e.target.value as ValueKind;
          setKind(k);
          emit(k, text);
        }}
        className="shrink-0 rounded border border-zinc-300 bg-white px-1 py-1 text-xs"
      >
        <option value="text">text</option>
        <option value="number">number</option>
        <option value="true">true</option>
        <option value="false">false</option>
        <option value="null">{nullLabel}</option>
      </select>
      {(kind === 'text' || kind === 'number') && (
        <input
          {...props}
          aria-label={props.id ? undefined : label}
          type={kind === 'number' ? 'number' : 'text'}
          step="any"
          value={text}
          disabled={disabled}
          onChange={(e) => {
            setText(e.target.value);
            emit(kind, e.target.value);
          }}
          className={`${inputBase} min-w-0 flex-1`}
        />
      )}
    </div>
  );
}

const FIELD_SUGGESTIONS = ['contact.email', 'contact.subscribed', 'contact.data.plan', 'contact.data.firstName', 'contact.data.customer'];

export function ConditionFields({ config, issues, onChange, disabled }: ConfigProps) {
  const op = typeof config.op === 'string' ? config.op : 'eq';
  const needsValue = op !== 'exists' && op !== 'not_exists';
  return (
    <>
      <Field label="Field" hint="e.g. contact.data.plan, contact.email" problems={issuesAt(issues, 'config.field')}>
        {(props) => (
          <>
            <input
              {...props}
              list="condition-fields"
              value={typeof config.field === 'string' ? config.field : ''}
              onChange={(e) => onChange(set(config, 'field', e.target.value))}
              disabled={disabled}
              spellCheck={false}
              className={`${inputClass} font-mono`}
            />
            <datalist id="condition-fields">
              {FIELD_SUGGESTIONS.map((f) => (
                <option key={f} value={f} />
              ))}
            </datalist>
          </>
        )}
      </Field>
      <Field label="Test" problems={issuesAt(issues, 'config.op')}>
        {(props) => (
          <select
            {...props}
            value={op}
            disabled={disabled}
            onChange={(e) => {
              const next = set(config, 'op', e.target.value);
              onChange(e.target.value === 'exists' || e.target.value === 'not_exists' ? set(next, 'value', undefined) : { value: '', ...next });
            }}
            className={inputClass}
          >
            {OPS.map(([v, l]) => (
              <option key={v} value={v}>
                {l}
              </option>
            ))}
          </select>
        )}
      </Field>
      {needsValue && (
        <Field label="Value" hint="yes when the test holds, else no" problems={issuesAt(issues, 'config.value')}>
          {(props) => <ScalarInput {...props} label="Value" nullLabel="null" value={config.value} disabled={disabled} onChange={(v) => onChange(set(config, 'value', v))} />}
        </Field>
      )}
    </>
  );
}

/** contact.data keys to set: one row each (null removes the key). Rows live here, so two rows may briefly share a key while typed. */
export function UpdateContactFields({ config, issues, onChange, disabled }: ConfigProps) {
  const initial = config.set && typeof config.set === 'object' ? Object.entries(config.set as Record<string, unknown>) : [];
  const [rows, setRows] = useState(() => initial.map(([key, value], i) => ({ id: i, key, value })));
  const [nextId, setNextId] = useState(initial.length);
  const emit = (next: typeof rows) => {
    setRows(next);
    onChange(set(config, 'set', Object.fromEntries(next.map((r) => [r.key, r.value]))));
  };
  const dupes = new Set(rows.map((r) => r.key).filter((k, i, all) => all.indexOf(k) !== i));
  const problems = [...issuesAt(issues, 'config.set', true), ...(dupes.size ? [`the field ${[...dupes].map((d) => `“${d}”`).join(', ')} is set twice: only the last row counts`] : [])];
  return (
    <div className="space-y-1">
      <p className="text-xs font-medium text-zinc-700">
        Set on the contact&apos;s data <span className="font-normal text-zinc-500">(null removes the field)</span>
      </p>
      {rows.map((row, i) => (
        <div key={row.id} className="flex items-center gap-1" data-testid="update-row">
          <input
            aria-label={`Field ${i + 1} name`}
            value={row.key}
            placeholder="field"
            disabled={disabled}
            spellCheck={false}
            onChange={(e) => emit(rows.map((r) => (r.id === row.id ? { ...r, key: e.target.value } : r)))}
            className={`${inputBase} w-28 shrink-0 font-mono`}
          />
          <ScalarInput label={`Field ${i + 1} value`} nullLabel="remove" value={row.value} disabled={disabled} onChange={(v) => emit(rows.map((r) => (r.id === row.id ? { ...r, value: v ?? '' } : r)))} />
          <button
            type="button"
            aria-label={`Remove field ${i + 1}`}
            disabled={disabled}
            onClick={() => emit(rows.filter((r) => r.id !== row.id))}
            className="shrink-0 rounded px-1.5 text-zinc-500 hover:bg-zinc-100 hover:text-red-700"
          >
            ✕
          </button>
        </div>
      ))}
      <button
        type="button"
        disabled={disabled || rows.length >= 50}
        onClick={() => {
          setNextId(nextId + 1);
          emit([...rows, { id: nextId, key: '', value: '' }]);
        }}
        className="text-xs font-medium text-sky-700 hover:underline disabled:text-zinc-400"
      >
        + Add a field
      </button>
      {problems.map((p) => (
        <p key={p} className="text-xs text-red-700">
          {p === 'Invalid key in record' ? 'field names: letters, digits, _ and - only (1 to 100)' : p}
        </p>
      ))}
    </div>
  );
}

export function ExitFields({ config, issues, onChange, disabled }: ConfigProps) {
  return (
    <Field label="Reason" hint="(optional, shown on the execution)" problems={issuesAt(issues, 'config.reason')}>
      {(props) => (
        <input
          {...props}
          value={typeof config.reason === 'string' ? config.reason : ''}
          onChange={(e) => onChange(set(config, 'reason', e.target.value === '' ? undefined : e.target.value))}
          disabled={disabled}
          className={inputClass}
        />
      )}
    </Field>
  );
}
