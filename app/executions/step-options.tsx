'use client';

import { useQueries, useQuery } from '@tanstack/react-query';
import { INPUT_CLASS } from '../_components/filters';
import { useTRPC } from '../_trpc/client';
import { olderVersionsWithActive } from './search';

// The executions list's "Current step" filter across a workflow's versions: a step id is a
// step of one version (docs/versions.md), so the choices are the latest version's steps,
// then those of each older version that still has executions running on it. A link to a
// step of an older version (the publish dialog's "executions at the removed step") shows
// that step selected, with its version.

export interface StepOption {
  id: string;
  key: string;
  name: string;
  type: string;
  live: number;
  version: number;
}

export interface VersionSteps {
  version: number;
  latest: boolean;
  /** Executions RUNNING or WAITING on this version. */
  active: number;
  steps: StepOption[];
}


export function useStepOptions(workflowId: string | undefined) {
  const trpc = useTRPC();
  const latest = useQuery(trpc.workflows.get.queryOptions({ id: workflowId ?? '' }, { enabled: !!workflowId }));
  const versions = useQuery(trpc.workflows.versions.queryOptions({ workflowId: workflowId ?? '' }, { enabled: !!workflowId }));
  const older = olderVersionsWithActive(versions.data);
  const olderDetails = useQueries({
    queries: older.map((version) => trpc.workflows.get.queryOptions({ id: workflowId ?? '', version }, { enabled: !!workflowId })),
  });
  const groups: VersionSteps[] = [];
  if (latest.data) {
    const v = latest.data.version.number;
    groups.push({
      version: v,
      latest: true,
      active: versions.data?.items.find((i) => i.number === v)?.active ?? latest.data.live,
      steps: latest.data.steps.map((s) => ({ id: s.id, key: s.key, name: s.name, type: s.type, live: s.live, version: v })),
    });
  }
  older.forEach((version, i) => {
    const detail = olderDetails[i]?.data;
    if (!detail) return;
    groups.push({
      version,
      latest: false,
      active: versions.data?.items.find((v) => v.number === version)?.active ?? 0,
      steps: detail.steps.map((s) => ({ id: s.id, key: s.key, name: s.name, type: s.type, live: s.live, version })),
    });
  });
  const find = (stepId: unknown): StepOption | null =>
    typeof stepId === 'string' ? (groups.flatMap((g) => g.steps).find((s) => s.id === stepId) ?? null) : null;
  return { groups, find, latestVersion: latest.data?.latestVersion ?? null, workflow: latest.data ?? null };
}

export function StepSelect({
  id,
  value,
  groups,
  disabled,
  title,
  fallbackName,
  onChange,
}: {
  id: string;
  value: string;
  groups: VersionSteps[];
  disabled: boolean;
  title?: string | undefined;
  /** The step in the URL when no listed version has it (a version without active executions): named from the rows. */
  fallbackName: string | null;
  onChange: (stepId: string | undefined) => void;
}) {
  const listed = groups.some((g) => g.steps.some((s) => s.id === value));
  const several = groups.length > 1;
  return (
    <select
      id={id}
      value={value}
      disabled={disabled}
      title={title}
      onChange={(e) => onChange(e.target.value || undefined)}
      className={`${INPUT_CLASS} ${several ? 'w-60' : 'w-48'} disabled:bg-zinc-50 disabled:text-zinc-400`}
    >
      <option value="">Any step</option>
      {value && !listed && <option value={value}>{fallbackName ? `${fallbackName} (an older version)` : 'the step in the link'}</option>}
      {groups.map((g) =>
        several ? (
          <optgroup key={g.version} label={g.latest ? `Version ${g.version} (latest)` : `Version ${g.version} (${g.active} active)`}>
            {g.steps.map((s) => (
              <option key={s.id} value={s.id}>
                {g.latest ? `${s.name} (${s.live} live)` : `${s.name} (v${g.version}, ${s.live} live)`}
              </option>
            ))}
          </optgroup>
        ) : (
          g.steps.map((s) => (
            <option key={s.id} value={s.id}>
              {s.name} ({s.live} live)
            </option>
          ))
        ),
      )}
    </select>
  );
}
