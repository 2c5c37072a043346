'use client';

import { useQuery } from '@tanstack/react-query';
import { useCallback, useMemo, useState } from 'react';
import { useTRPC } from '../_trpc/client';
import { absoluteTime } from './time';

// MIGRATE's choices, as the single repair dialog and the bulk repair both offer them
// (docs/versions.md, "Moving executions"): the version to move to (default the latest),
// a step map for steps whose key the later version lacks, and, only when the move would
// send again an email the execution already sent, the operator's explicit "allow re-send".
// The server plans with exactly these (server/repair/plan-migrate.ts); every change here
// previews again.

export interface MigrateInput {
  toVersion?: number;
  stepMap?: Record<string, string>;
  allowResend?: boolean;
}

/** The refusal codes a choice here can clear (the rest are about the execution's state). */
export const MAPPABLE_REFUSALS: readonly string[] = ['STEP_GONE', 'MAPPED_STEP_GONE'];

export function useMigrateChoices() {
  const [toVersion, setVersion] = useState<number | undefined>(undefined);
  const [stepMap, setStepMap] = useState<Record<string, string>>({});
  const [allowResend, setAllowResend] = useState(false);
  const input = useMemo<MigrateInput>(
    () => ({
      ...(toVersion !== undefined ? { toVersion } : {}),
      ...(Object.keys(stepMap).length ? { stepMap } : {}),
      ...(allowResend ? { allowResend: true } : {}),
    }),
    [toVersion, stepMap, allowResend],
  );
  // Another version has other steps: a map made for one means nothing for the next.
  const chooseVersion = useCallback((v: number | undefined) => {
    setVersion(v);
    setStepMap({});
    setAllowResend(false);
  }, []);
  const mapStep = useCallback((from: string, to: string | null) => {
    setStepMap((m) => {
      const { [from]: _old, ...rest } = m;
      return to ? { ...rest, [from]: to } : rest;
    });
  }, []);
  return { toVersion, chooseVersion, stepMap, mapStep, allowResend, setAllowResend, input };
}
export type MigrateChoicesState = ReturnType<typeof useMigrateChoices>;

const selectClass =
  'h-7 min-w-0 rounded border border-zinc-300 bg-white px-1.5 text-[13px] focus:border-sky-500 focus:ring-2 focus:ring-sky-200 focus:outline-none disabled:bg-zinc-50 disabled:text-zinc-400';

/** The workflow's versions and the one the move goes to (the chosen one, else the latest). */
export function useTargetVersion(workflowId: string | null | undefined, toVersion: number | undefined) {
  const trpc = useTRPC();
  const versions = useQuery(trpc.workflows.versions.queryOptions({ workflowId: workflowId ?? '' }, { enabled: !!workflowId }));
  return { versions, target: toVersion ?? versions.data?.latestVersion ?? null };
}

/** Which version to move to: the later ones only, the latest by default. */
export function VersionPicker({
  workflowId,
  fromVersion,
  state,
  disabled,
}: {
  workflowId: string;
  /** The version the execution is on (single), or the lowest one selected (bulk): only later ones are offered. */
  fromVersion: number;
  state: MigrateChoicesState;
  disabled?: boolean;
}) {
  const { versions } = useTargetVersion(workflowId, state.toVersion);
  const later = versions.data?.items.filter((v) => v.number > fromVersion) ?? [];
  const latest = versions.data?.latestVersion;
  return (
    <label className="flex flex-wrap items-center gap-2" data-testid="migrate-version">
      <span className="font-medium">Move to</span>
      <select
        aria-label="Version to move to"
        value={state.toVersion === undefined ? '' : String(state.toVersion)}
        disabled={disabled || !versions.data || later.length === 0}
        onChange={(e) => state.chooseVersion(e.target.value ? Number(e.target.value) : undefined)}
        className={`${selectClass} w-72`}
      >
        <option value="">{latest ? `version ${latest} (the latest)` : 'the latest version'}</option>
        {later
          .filter((v) => v.number !== latest)
          .map((v) => (
            <option key={v.number} value={v.number}>
              version {v.number} · {v.stepCount} steps · published {absoluteTime(v.publishedAt).slice(0, 16)}
            </option>
          ))}
      </select>
      {versions.data && later.length === 0 && <span className="text-xs text-zinc-500">it is on the latest version already: there is none to move to</span>}
      {versions.error && <span className="text-xs text-red-700">could not list the versions: {versions.error.message}</span>}
    </label>
  );
}

/**
 * Where each step the later version lacks should go: one row per step, a choice among the
 * target version's steps (the TRIGGER aside). Refused rows are marked until mapped.
 */
export function StepMapEditor({
  workflowId,
  toVersion,
  from,
  state,
  refused,
  disabled,
}: {
  workflowId: string;
  toVersion: number | null;
  /** The steps to map, by key (a step of the version they are on). */
  from: { key: string; name: string }[];
  state: MigrateChoicesState;
  /** Keys whose executions are refused now (unmapped, or mapped to a step the version lacks). */
  refused: ReadonlySet<string>;
  disabled?: boolean;
}) {
  const trpc = useTRPC();
  const target = useQuery(trpc.workflows.get.queryOptions({ id: workflowId, version: toVersion ?? 1 }, { enabled: toVersion !== null }));
  const steps = target.data?.steps.filter((s) => s.type !== 'TRIGGER') ?? [];
  if (from.length === 0) return null;
  return (
    <fieldset className="rounded bg-sky-50/60 px-3 py-2 ring-1 ring-sky-200" data-testid="migrate-step-map">
      <legend className="sr-only">Step map</legend>
      <p className="mb-1.5 text-xs text-zinc-700">
        Version {toVersion ?? '…'} has no step of {from.length === 1 ? 'this key' : 'these keys'}: choose where {from.length === 1 ? 'its executions go' : 'each one’s executions go'}.
      </p>
      <ul className="space-y-1">
        {from.map((f) => {
          const mapped = state.stepMap[f.key] ?? '';
          return (
            <li key={f.key} className="grid grid-cols-[minmax(0,13rem)_auto_minmax(0,1fr)] items-center gap-2">
              <span className="min-w-0 truncate" title={`${f.name} (key ${f.key})`}>
                “{f.name}” <code className="font-mono text-[11px] text-zinc-500">{f.key}</code>
              </span>
              <span className="text-zinc-400">→</span>
              <span className="flex min-w-0 items-center gap-2">
                <select
                  aria-label={`Step of version ${toVersion ?? ''} for “${f.name}”`}
                  value={mapped}
                  disabled={disabled || !target.data}
                  onChange={(e) => state.mapStep(f.key, e.target.value || null)}
                  className={`${selectClass} w-full max-w-[24rem] ${refused.has(f.key) ? 'border-amber-400' : ''}`}
                >
                  <option value="">— choose a step —</option>
                  {steps.map((s) => (
                    <option key={s.key} value={s.key}>
                      {s.name} ({s.type.toLowerCase().replace('_', ' ')} · {s.key})
                    </option>
                  ))}
                </select>
                {refused.has(f.key) && <span className="text-xs text-amber-800">{mapped ? 'not a step of this version' : 'not mapped yet'}</span>}
              </span>
            </li>
          );
        })}
      </ul>
      {target.error && <p className="text-xs text-red-700">Could not read version {toVersion}: {target.error.message}</p>}
    </fieldset>
  );
}

/** The explicit consent to send again an email the execution(s) already sent, with which ones, in red. */
export function AllowResend({ resends, state, disabled }: { resends: string[]; state: MigrateChoicesState; disabled?: boolean }) {
  if (resends.length === 0 && !state.allowResend) return null;
  return (
    <label className="flex items-start gap-2 rounded bg-red-50 px-3 py-2 ring-1 ring-red-200" data-testid="migrate-allow-resend">
      <input type="checkbox" className="mt-0.5" checked={state.allowResend} disabled={disabled} onChange={(e) => state.setAllowResend(e.target.checked)} />
      <span>
        <span className="font-medium">Allow re-send</span>: the move leads through{' '}
        {resends.map((k, i) => (
          <span key={k}>
            {i > 0 && ', '}
            <code className="font-mono text-xs font-semibold text-red-700">{k}</code>
          </span>
        ))}{' '}
        again, already sent to {resends.length === 1 ? 'the contact' : 'the contacts'}: {resends.length === 1 ? 'it goes' : 'they go'} out a second time. Map the step further on to avoid
        it; the audit log records that you chose to.
      </span>
    </label>
  );
}
