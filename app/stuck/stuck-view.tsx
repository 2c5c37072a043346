'use client';

import { keepPreviousData, useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { useState } from 'react';
import { SELF_HEALING, STUCK_DESCRIPTIONS, STUCK_REASONS, type StuckReason } from '@/server/common/stuck-reasons';
import { StuckBadge } from '../_components/badges';
import { BulkRepair, type BulkFilterInput } from '../_components/bulk-repair';
import { Field, FilterBar, INPUT_CLASS, useUrlInput } from '../_components/filters';
import { useHydrated } from '../_components/hydrated';
import { Freshness, LIVE_REFRESH_MS, LoadState } from '../_components/panel';
import { actionsFor, subjectOf, withMigrate } from '../_components/stuck-actions';
import { Age, RelativeTime } from '../_components/time';
import { useTRPC } from '../_trpc/client';
import type { RouterOutputs } from '@/app/_trpc/types';
import { STUCK_SEARCH, type StuckGroupsInput } from './search';
import { atLeast, type Role } from '@/server/common/roles';

type Group = RouterOutputs['repair']['stuckGroups']['groups'][number];

const keyOf = (g: Group) => JSON.stringify([g.reason, g.workflowId, g.stepId, g.errorPattern]);

function clearedBy(g: Group, poisonAttempts: number): { who: 'workers' | 'operator'; note: string } {
  if (g.reason === 'LEASE_EXPIRED' && (g.maxAttempt ?? 0) >= poisonAttempts) {
    return { who: 'operator', note: `an operator: a poison step, its lease ran out on ${g.maxAttempt} attempts, so the workers leave it alone` };
  }
  return SELF_HEALING.includes(g.reason)
    ? { who: 'workers', note: 'the workers, once running: seen here past the grace period, no worker is picking it up' }
    : { who: 'operator', note: 'an operator: the workers never retry this blindly' };
}

function sampleLink(g: Group): { href: string; label: string } | null {
  const s = g.sample;
  if (s.executionId) return { href: `/executions/${s.executionId}`, label: s.contactEmail ?? s.executionId.slice(0, 8) };
  if (s.eventId) {
    const query = new URLSearchParams({ state: g.reason === 'EVENT_DEAD' ? 'dead' : 'pending' });
    if (s.name) query.set('name', s.name);
    if (s.contactEmail) query.set('contact', s.contactEmail);
    return { href: `/events?${query}#event-${s.eventId}`, label: `${s.name ?? 'event'}${s.contactEmail ? ` · ${s.contactEmail}` : ''}` };
  }
  return null;
}

/** The group as the bulk repair selects it: exactly its rows (reason, workflow, step, error pattern). */
function filterOf(g: Group): BulkFilterInput {
  return {
    reason: g.reason,
    ...(g.workflowId ? { workflowId: g.workflowId } : {}),
    stepId: g.stepId,
    errorPattern: g.errorPattern,
  };
}

export function StuckView({ role }: { role: Role }) {
  const trpc = useTRPC();
  const { input, setFilter, clear } = useUrlInput(STUCK_SEARCH);
  const groups = useQuery(
    trpc.repair.stuckGroups.queryOptions(input as StuckGroupsInput, { refetchInterval: LIVE_REFRESH_MS, placeholderData: keepPreviousData }),
  );
  const workflows = useQuery(trpc.workflows.list.queryOptions());
  // A group of a workflow with a later version than its first may also be moved to it (MIGRATE).
  const latestOf = (workflowId: string | null) => workflows.data?.find((w) => w.id === workflowId)?.latestVersion ?? null;
  const actionsOf = (g: Group) => withMigrate(actionsFor(g.reason, g.stepType), latestOf(g.workflowId), g.reason as StuckReason);
  const [selected, setSelected] = useState<Group | null>(null);
  const mayRepair = atLeast(role, 'OPERATOR');
  // The selects write the URL: live only once the page is (see useUrlInput).
  const hydrated = useHydrated();
  const filtered = Object.keys(input).length > 0;
  const total = groups.data?.groups.reduce((n, g) => n + g.count, 0) ?? 0;

  return (
    <div className="space-y-3">
      <section aria-label="Stuck groups" className="overflow-hidden rounded-md border border-zinc-200 bg-white shadow-xs">
        <FilterBar onClear={clear} active={filtered}>
          <Field label="Workflow" htmlFor="filter-workflow">
            <select
              id="filter-workflow"
              value={typeof input.workflowId === 'string' ? input.workflowId : ''}
              disabled={!hydrated}
              onChange={(e) => setFilter('workflowId', e.target.value || undefined)}
              className={`${INPUT_CLASS} w-48`}
            >
              <option value="">All workflows</option>
              {workflows.data?.map((w) => (
                <option key={w.id} value={w.id}>
                  {w.name}
                </option>
              ))}
            </select>
          </Field>
          <Field label="Reason" htmlFor="filter-reason">
            <select
              id="filter-reason"
              value={typeof input.reason === 'string' ? input.reason : ''}
              disabled={!hydrated}
              onChange={(e) => setFilter('reason', e.target.value || undefined)}
              className={`${INPUT_CLASS} w-52`}
            >
              <option value="">Every reason</option>
              {STUCK_REASONS.map((r) => (
                <option key={r} value={r}>
                  {r}
                </option>
              ))}
            </select>
          </Field>
        </FilterBar>
        <div className="flex h-8 items-center gap-3 px-4 text-xs text-zinc-500" aria-live="polite">
          {groups.data && (
            <span data-testid="stuck-total" className="tabular-nums">
              {groups.data.groups.length === 0
                ? 'Nothing stuck'
                : `${total.toLocaleString()} stuck in ${groups.data.groups.length.toLocaleString()} group${groups.data.groups.length === 1 ? '' : 's'}`}
            </span>
          )}
          {groups.data && (
            <span className="text-zinc-400">· a state counts as stuck after {groups.data.graceSeconds} s</span>
          )}
          <span className="ml-auto">{groups.data && <Freshness updatedAt={groups.dataUpdatedAt} fetching={groups.isFetching} asOf={groups.data.asOf} />}</span>
        </div>
        <LoadState what="the stuck groups" loading="Loading what is stuck…" error={groups.error} pending={groups.isPending} />
        {groups.data && groups.data.groups.length === 0 && (
          <div data-testid="stuck-empty" className="px-4 py-10 text-center">
            <p className="text-[15px] font-medium text-emerald-700">Nothing is stuck{filtered ? ' here' : ''}.</p>
            <p className="mt-1 text-zinc-500">
              {filtered ? (
                <>
                  No stuck items match these filters.{' '}
                  <button type="button" onClick={clear} className="text-sky-700 hover:underline">
                    Show every reason and workflow
                  </button>
                </>
              ) : (
                'Every execution, event and email is moving, or finished.'
              )}
            </p>
          </div>
        )}
        {groups.data && groups.data.groups.length > 0 && (
          <div className="overflow-x-auto">
            <table aria-label="Stuck groups" className="w-full text-left">
              <thead className="bg-zinc-50 text-[11px] font-medium tracking-wide whitespace-nowrap text-zinc-500 uppercase">
                <tr>
                  <th scope="col" className="w-64 py-1.5 pr-2 pl-4 font-medium">
                    Reason
                  </th>
                  <th scope="col" className="px-2 py-1.5 font-medium">
                    Where · error
                  </th>
                  <th scope="col" className="w-16 px-2 py-1.5 text-right font-medium">
                    Count
                  </th>
                  <th scope="col" className="w-28 px-2 py-1.5 font-medium">
                    Oldest · newest
                  </th>
                  <th scope="col" className="w-44 px-2 py-1.5 font-medium">
                    Sample
                  </th>
                  <th scope="col" className="w-24 py-1.5 pr-4 pl-2 font-medium">
                    <span className="sr-only">Repair</span>
                  </th>
                </tr>
              </thead>
              <tbody className="divide-y divide-zinc-100">
                {groups.data.groups.map((g) => {
                  const by = clearedBy(g, groups.data.poisonAttempts);
                  const sample = sampleLink(g);
                  const isSelected = selected !== null && keyOf(selected) === keyOf(g);
                  const actions = actionsOf(g);
                  return (
                    <tr key={keyOf(g)} data-testid="stuck-group" data-reason={g.reason} className={`align-top ${isSelected ? 'bg-sky-50' : 'hover:bg-zinc-50'}`}>
                      <td className="py-2 pr-2 pl-4">
                        <StuckBadge reason={g.reason} />
                        <p className="mt-1 text-xs text-zinc-600">{STUCK_DESCRIPTIONS[g.reason]}.</p>
                        <p className={`mt-0.5 text-xs ${by.who === 'operator' ? 'font-medium text-amber-800' : 'text-zinc-500'}`} data-testid="cleared-by">
                          Cleared by {by.note}
                        </p>
                      </td>
                      <td className="min-w-0 px-2 py-2">
                        <p className="text-[13px]">
                          {g.workflowName ? (
                            <Link href={`/executions?workflowId=${g.workflowId}&stuck=${g.reason}${g.stepId ? `&stepId=${g.stepId}` : ''}`} className="font-medium text-sky-700 hover:underline">
                              {g.workflowName}
                            </Link>
                          ) : (
                            <span className="text-zinc-500">{g.reason.startsWith('EVENT_') ? 'tracked events (no workflow yet)' : '—'}</span>
                          )}
                          {g.stepName && (
                            <>
                              <span className="text-zinc-400"> · </span>
                              <span>{g.stepName}</span> <span className="text-[11px] text-zinc-400">{g.stepType}</span>
                            </>
                          )}
                        </p>
                        {g.errorPattern ? (
                          <p className="mt-0.5 line-clamp-3 max-w-2xl font-mono text-[11.5px] break-words text-red-800" title={g.sample.error ?? undefined} data-testid="error-pattern">
                            {g.errorPattern}
                          </p>
                        ) : (
                          <p className="mt-0.5 text-xs text-zinc-400">no error recorded</p>
                        )}
                      </td>
                      <td className="px-2 py-2 text-right">
                        <span className="rounded bg-amber-500 px-1.5 py-0.5 text-xs font-semibold text-white tabular-nums" data-testid="group-count">
                          {g.count.toLocaleString()}
                        </span>
                      </td>
                      <td className="px-2 py-2 text-xs whitespace-nowrap text-zinc-600">
                        <Age since={g.oldest} /> <span className="text-zinc-400">oldest</span>
                        {g.count > 1 && (
                          <>
                            <br />
                            <RelativeTime at={g.newest} className="text-zinc-500" /> <span className="text-zinc-400">newest</span>
                          </>
                        )}
                      </td>
                      <td className="min-w-0 px-2 py-2 text-xs">
                        {sample ? (
                          <Link href={sample.href} className="block max-w-44 truncate text-sky-700 hover:underline" title={sample.label} data-testid="group-sample">
                            {sample.label}
                          </Link>
                        ) : (
                          '—'
                        )}
                      </td>
                      <td className="py-2 pr-4 pl-2 text-right">
                        {mayRepair && actions.length > 0 && (
                          <button
                            type="button"
                            onClick={() => setSelected(isSelected ? null : g)}
                            aria-pressed={isSelected}
                            aria-label={`Repair ${subjectOf(g.reason, g.count)}: ${g.reason}${g.workflowName ? ` in ${g.workflowName}` : ''}${g.stepName ? ` at ${g.stepName}` : ''}`}
                            className={`inline-flex h-7 items-center rounded border px-2.5 text-xs font-medium whitespace-nowrap shadow-xs ${
                              isSelected ? 'border-sky-600 bg-sky-600 text-white' : 'border-zinc-300 bg-white text-zinc-700 hover:border-zinc-400'
                            }`}
                          >
                            {isSelected ? 'Selected' : 'Repair…'}
                          </button>
                        )}
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        )}
        {!mayRepair && groups.data && groups.data.groups.length > 0 && (
          <p className="border-t border-zinc-200 px-4 py-2 text-xs text-zinc-500">Repairs are for operators: you are {role.toLowerCase()}, so this page is read-only for you.</p>
        )}
      </section>

      {selected && mayRepair && (
        <BulkRepair
          key={keyOf(selected)}
          filter={filterOf(selected)}
          reason={selected.reason as StuckReason}
          stepType={selected.stepType}
          actions={actionsOf(selected)}
          workflowId={selected.workflowId ?? null}
          title={[selected.reason, selected.workflowName, selected.stepName, selected.errorPattern].filter(Boolean).join(' · ')}
          onClose={() => setSelected(null)}
        />
      )}
    </div>
  );
}
