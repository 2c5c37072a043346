'use client';

import Link from 'next/link';
import type { RouterOutputs } from '@/app/_trpc/types';
import { Badge } from './badges';
import { AllowResend, MAPPABLE_REFUSALS, StepMapEditor, useTargetVersion, VersionPicker, type MigrateChoicesState } from './repair-migrate';

// MIGRATE's dry run in the bulk repair (server/repair/migration-groups.ts): the selected
// executions planned one by one as apply would plan them, shown per group (from which
// version and step to which, whether a pending wait keeps its deadline, which emails would
// go out again, movable or why not with the first one's sentence, a few to open), with the
// choices that clear the refusals a choice can clear. Apply moves only the movable ones:
// the server refuses the others row by row.

export type MigrationDryRun = NonNullable<RouterOutputs['repair']['applyMany']['migration']>;
type Group = MigrationDryRun['groups'][number];

/** What the dry run adds up to: how many move, how many are refused, the choices it still asks for. */
export function summaryOf(dry: MigrationDryRun) {
  const movable = dry.groups.filter((g) => g.allowed).reduce((n, g) => n + g.count, 0);
  const refused = dry.groups.filter((g) => !g.allowed).reduce((n, g) => n + g.count, 0);
  const toMap = new Map<string, string>();
  for (const g of dry.groups) if (g.refusal && MAPPABLE_REFUSALS.includes(g.refusal.code)) toMap.set(g.fromStep.key, g.fromStep.name);
  const resends = [...new Set(dry.groups.flatMap((g) => (g.refusal?.code === 'RESEND' || g.allowed ? g.resends : [])))];
  const fromVersion = dry.groups.length ? Math.min(...dry.groups.map((g) => g.fromVersion)) : 1;
  return { movable, refused, toMap, resends, fromVersion };
}

const th = 'px-2 py-1.5 font-medium whitespace-nowrap';

function Step({ version, step }: { version: number | null; step: { key: string; name: string } | null }) {
  if (!step) return <span className="text-zinc-400">—</span>;
  return (
    <span className="inline-flex min-w-0 items-baseline gap-1.5">
      <span className="shrink-0 text-[11px] text-zinc-500 tabular-nums">v{version ?? '?'}</span>
      <span className="truncate font-medium" title={`${step.name} (key ${step.key})`}>
        {step.name}
      </span>
    </span>
  );
}

function WaitCell({ g }: { g: Group }) {
  if (!g.allowed && !g.toStep) return <span className="text-zinc-400">—</span>;
  if (!g.keepsWait) return <span title="A pending wait ends unresolved and the new step runs now; a running step moves on to it">ends: the new step runs</span>;
  return (
    <span>
      keeps its wait
      {g.deadlineChanged > 0 ? (
        <span className="block text-[11px] text-amber-800">{g.deadlineChanged === g.count ? 'deadline changes' : `${g.deadlineChanged} deadlines change`}</span>
      ) : (
        <span className="block text-[11px] text-zinc-500">deadline unchanged</span>
      )}
    </span>
  );
}

export function MigrationGroupsTable({ dry, targetVersion, busy }: { dry: MigrationDryRun; targetVersion: number | null; busy: boolean }) {
  return (
    <div className={`overflow-x-auto rounded border border-zinc-200 ${busy ? 'opacity-60' : ''}`} aria-busy={busy}>
      <table aria-label="Executions to move, by group" className="w-full table-fixed text-left text-[13px]" data-testid="migrate-groups">
        <colgroup>
          <col className="w-16" />
          <col />
          <col />
          <col className="w-36" />
          <col className="w-32" />
          <col className="w-44" />
          <col className="w-44" />
        </colgroup>
        <thead className="bg-zinc-50 text-[11px] tracking-wide text-zinc-500 uppercase">
          <tr>
            <th scope="col" className={`${th} text-right`}>
              Count
            </th>
            <th scope="col" className={th}>
              From
            </th>
            <th scope="col" className={th}>
              To
            </th>
            <th scope="col" className={th}>
              Its wait
            </th>
            <th scope="col" className={th}>
              Re-sends
            </th>
            <th scope="col" className={th}>
              Movable?
            </th>
            <th scope="col" className={th}>
              Sample
            </th>
          </tr>
        </thead>
        {dry.groups.map((g, i) => (
          <tbody key={i} data-testid="migrate-group" data-allowed={g.allowed} className={`border-t border-zinc-100 ${g.allowed ? '' : 'bg-zinc-50/60'}`}>
            <tr className="align-top">
              <td className="px-2 py-1.5 text-right font-semibold tabular-nums">{g.count.toLocaleString()}</td>
              <td className="px-2 py-1.5">
                <Step version={g.fromVersion} step={g.fromStep} />
              </td>
              <td className="px-2 py-1.5">
                {g.toStep ? (
                  <Step version={g.toVersion} step={g.toStep} />
                ) : g.refusal && MAPPABLE_REFUSALS.includes(g.refusal.code) ? (
                  <span className="text-amber-800">v{g.toVersion ?? targetVersion ?? '?'}: no such step</span>
                ) : (
                  <span className="text-zinc-400">—</span>
                )}
              </td>
              <td className="px-2 py-1.5 text-xs">
                <WaitCell g={g} />
              </td>
              <td className="px-2 py-1.5 text-xs">
                {g.resends.length ? (
                  <span className="font-medium text-red-700">{g.resends.join(', ')}</span>
                ) : (
                  <span className="text-zinc-500">none</span>
                )}
              </td>
              <td className="px-2 py-1.5">
                {g.allowed ? (
                  <Badge tone="emerald">movable</Badge>
                ) : (
                  <Badge tone={g.refusal?.code === 'CHANGED' ? 'amber' : 'zinc'}>refused: {g.refusal?.code ?? 'not allowed'}</Badge>
                )}
              </td>
              <td className="px-2 py-1.5">
                <span className="flex flex-wrap gap-x-1.5 font-mono text-[11px]">
                  {g.sample.map((id) => (
                    <Link key={id} href={`/executions/${id}`} className="text-sky-700 hover:underline" title={id}>
                      {id.slice(0, 8)}
                    </Link>
                  ))}
                  {g.count > g.sample.length && <span className="text-zinc-400">+{(g.count - g.sample.length).toLocaleString()}</span>}
                </span>
              </td>
            </tr>
            {!g.allowed && g.refusal?.example && (
              <tr>
                <td />
                <td colSpan={6} className="px-2 pb-1.5 text-xs text-zinc-700">
                  <span className="font-medium">Why, for the first of them:</span> {g.refusal.example}
                </td>
              </tr>
            )}
          </tbody>
        ))}
      </table>
      {dry.groups.length === 0 && <p className="px-3 py-2 text-zinc-500">Nothing selected now.</p>}
    </div>
  );
}

/** The bulk dry run's MIGRATE section: the choices (version, step map, re-send), then the groups. */
export function MigrateDryRunView({
  dry,
  matched,
  workflowId,
  state,
  busy,
}: {
  dry: MigrationDryRun;
  matched: number;
  workflowId: string;
  state: MigrateChoicesState;
  busy: boolean;
}) {
  const { target } = useTargetVersion(workflowId, state.toVersion);
  const s = summaryOf(dry);
  const mapped = dry.groups.filter((g) => state.stepMap[g.fromStep.key] !== undefined).map((g) => [g.fromStep.key, g.fromStep.name] as const);
  const rows = new Map([...mapped, ...s.toMap]);
  return (
    <div className="space-y-2" data-testid="migrate-dry-run">
      <p data-testid="migrate-summary" className="text-[13px]">
        <strong className="tabular-nums text-emerald-800">{s.movable.toLocaleString()} movable</strong>
        {' · '}
        <strong className={`tabular-nums ${s.refused ? 'text-zinc-800' : 'text-zinc-500'}`}>{s.refused.toLocaleString()} refused</strong>
        <span className="text-zinc-600">
          {' '}
          of the {matched.toLocaleString()} selected, in {dry.groups.length} group{dry.groups.length === 1 ? '' : 's'}
          {dry.planned < matched ? ` (the first ${dry.planned.toLocaleString()} planned; the rest are planned as they are applied)` : ''}.
        </span>
        {busy && <span className="text-xs text-zinc-500"> Planning again…</span>}
      </p>
      <VersionPicker workflowId={workflowId} fromVersion={s.fromVersion} state={state} disabled={busy} />
      <StepMapEditor
        workflowId={workflowId}
        toVersion={target}
        from={[...rows].map(([key, name]) => ({ key, name }))}
        state={state}
        refused={new Set(s.toMap.keys())}
        disabled={busy}
      />
      <AllowResend resends={s.resends} state={state} disabled={busy} />
      <MigrationGroupsTable dry={dry} targetVersion={target} busy={busy} />
    </div>
  );
}
