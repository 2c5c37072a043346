'use client';

import { keepPreviousData, useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { usePathname, useSearchParams } from 'next/navigation';
import { useCallback, useMemo } from 'react';
import { StuckBadge } from '../../_components/badges';
import { Freshness, LIVE_REFRESH_MS, LoadError, Panel } from '../../_components/panel';
import { RelativeTime } from '../../_components/time';
import { useTRPC } from '../../_trpc/client';
import type { StepCounts, WorkflowDetail } from '../_components/definition';
import { EnabledSwitch } from '../_components/enabled-switch';
import { WorkflowGraph } from '../_components/workflow-graph';
import { PublishedNotice } from './published-notice';
import { versionOfSearch } from './version-param';
import { VersionHistory } from './version-history';

const STEP_TYPE_LABEL: Record<string, string> = {
  TRIGGER: 'Trigger',
  SEND_EMAIL: 'Send email',
  DELAY: 'Delay',
  WAIT_FOR_EVENT: 'Wait for event',
  CONDITION: 'Condition',
  UPDATE_CONTACT: 'Update contact',
  EXIT: 'Exit',
};

const actionClass =
  'rounded px-2.5 py-1 text-xs font-medium text-zinc-700 ring-1 ring-zinc-300 hover:bg-zinc-100 focus-visible:outline-2 focus-visible:outline-sky-600';

export function WorkflowDetailView({ id, mayWrite, mayRepair }: { id: string; mayWrite: boolean; mayRepair: boolean }) {
  const trpc = useTRPC();
  // The version shown lives in the URL (?version=N; none: the latest), as the open step does.
  const search = useSearchParams();
  const pathname = usePathname();
  const asked = versionOfSearch(search).value;
  const { data, error, dataUpdatedAt, isFetching, isPlaceholderData } = useQuery(
    // Switching versions keeps the graph drawn until the other version is in: nothing jumps.
    trpc.workflows.get.queryOptions(asked !== undefined ? { id, version: asked } : { id }, { refetchInterval: LIVE_REFRESH_MS, placeholderData: keepPreviousData }),
  );
  const hrefFor = useCallback(
    (version: number, latest: boolean) => {
      const params = new URLSearchParams(search.toString());
      if (latest) params.delete('version');
      else params.set('version', String(version));
      const query = params.toString();
      return query ? `${pathname}?${query}` : pathname;
    },
    [search, pathname],
  );
  const selected = search.get('step');
  const select = useCallback(
    (key: string | null) => {
      const params = new URLSearchParams(search.toString());
      // Opening is idempotent (a click reaches both the step's button and its node); ✕ closes.
      if (key === null) params.delete('step');
      else params.set('step', key);
      const query = params.toString();
      window.history.replaceState(null, '', query ? `${pathname}?${query}` : pathname);
    },
    [search, pathname],
  );
  const counts = useMemo(() => new Map<string, StepCounts>((data?.steps ?? []).map((s) => [s.key, s])), [data]);

  if (error && !data) {
    return (
      <div role="alert" className="rounded-md border border-zinc-200 bg-white px-4 py-6 text-zinc-600">
        {error.data?.code === 'NOT_FOUND' ? (asked !== undefined ? `${error.message} ` : 'No such workflow in this project.') : `Could not load the workflow: ${error.message}`}{' '}
        {asked !== undefined && error.data?.code === 'NOT_FOUND' && (
          <Link href={pathname} className="mr-2 font-medium text-zinc-900 underline">
            The latest version
          </Link>
        )}
        <Link href="/workflows" className="font-medium text-zinc-900 underline">
          All workflows
        </Link>
      </div>
    );
  }
  if (!data) {
    return (
      <p role="status" className="py-8 text-center text-zinc-500">
        Loading the workflow…
      </p>
    );
  }
  const step = data.steps.find((s) => s.key === selected) ?? null;
  const shown = data.version.number;
  const isLatest = shown === data.latestVersion;
  return (
    <div className="space-y-3">
      {!isPlaceholderData && <PublishedNotice id={id} version={shown} mayRepair={mayRepair} />}
      <header className="flex flex-wrap items-start gap-x-6 gap-y-2">
        <div className="min-w-0">
          <h1 className="text-lg font-semibold tracking-tight">{data.name}</h1>
          <p className="text-zinc-500">
            {data.trigger === 'EVENT' ? (
              <>
                Starts on event <code className="rounded bg-zinc-100 px-1 py-0.5 font-mono text-xs text-zinc-800">{data.triggerEvent}</code>
              </>
            ) : (
              'Contacts are enrolled manually (console, CSV or API)'
            )}
            {' · '}
            {data.allowReentry ? 're-entry allowed' : 'once per contact'} · {data.steps.length} steps · created <RelativeTime at={data.createdAt} />
          </p>
          {data.description && <p className="mt-0.5 max-w-3xl text-zinc-600">{data.description}</p>}
          <p className="mt-1 flex flex-wrap items-center gap-x-2 gap-y-1 text-xs" data-testid="version-shown">
            <span className={`rounded px-1.5 py-0.5 font-semibold ring-1 ${isLatest ? 'bg-emerald-50 text-emerald-900 ring-emerald-200' : 'bg-amber-50 text-amber-900 ring-amber-200'}`}>
              Version {shown}
              {isLatest ? ' · latest' : ` of ${data.latestVersion} · read-only, not the latest`}
            </span>
            <span className="text-zinc-500">
              published by {data.version.publishedBy} <RelativeTime at={data.version.publishedAt} />
            </span>
            {!isLatest && (
              <Link href={hrefFor(data.latestVersion, true)} className="font-medium text-sky-700 hover:underline">
                Show the latest (version {data.latestVersion})
              </Link>
            )}
            {isPlaceholderData && (
              <span role="status" className="text-zinc-500">
                loading version {asked ?? 'latest'}…
              </span>
            )}
            {data.draft && (
              <span className="text-zinc-500" data-testid="draft-info">
                Draft in progress, saved <RelativeTime at={data.draft.updatedAt} /> by {data.draft.updatedBy} (from version {data.draft.basedOnVersion})
              </span>
            )}
          </p>
        </div>
        <div className="ml-auto flex flex-wrap items-center gap-3">
          <EnabledSwitch id={data.id} name={data.name} enabled={data.enabled} mayWrite={mayWrite} />
          <Link href={`/executions?workflowId=${data.id}`} className={actionClass}>
            All executions
          </Link>
          {mayWrite && (
            <>
              <Link href={`/workflows/${data.id}/edit`} className="rounded bg-zinc-900 px-2.5 py-1 text-xs font-medium text-white hover:bg-zinc-700 focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-sky-600">
                {data.draft ? 'Edit (continue the draft)' : 'Edit'}
              </Link>
              {/* Not prefetched: the CSV enrollment page is its own slice of the console. */}
              <Link href={`/enroll?workflow=${data.id}`} prefetch={false} className={actionClass}>
                Enroll contacts from CSV
              </Link>
              <Link href={`/workflows/new?from=${data.id}`} className={actionClass}>
                Duplicate
              </Link>
            </>
          )}
        </div>
      </header>
      {error && <LoadError what="fresh counts" message={error.message} />}
      <div className="flex flex-col gap-3 xl:flex-row xl:items-start">
        <div className="min-w-0 flex-1">
          <Panel
            title={isLatest ? 'Steps' : `Steps of version ${shown}`}
            labelledBy="graph-heading"
            summary={
              <span className="text-xs text-zinc-500">
                {data.live.toLocaleString()} active {data.countsAsOf ? 'as of the counts' : 'now'} · click a step for its config and executions
              </span>
            }
            aside={<Freshness updatedAt={dataUpdatedAt} fetching={isFetching} asOf={data.countsAsOf} />}
          >
            <WorkflowGraph
              label={`Step graph of ${data.name}`}
              steps={data.steps}
              transitions={data.transitions}
              counts={counts}
              selected={step?.key ?? null}
              onSelect={select}
            />
          </Panel>
        </div>
        <aside className="w-full shrink-0 space-y-3 xl:sticky xl:top-14 xl:max-h-[calc(100vh-4.5rem)] xl:w-80 xl:overflow-y-auto">
          {step ? (
            <StepPanel workflow={data} step={step} onClose={() => select(null)} />
          ) : (
            <div className="rounded-md border border-dashed border-zinc-300 bg-white px-4 py-6 text-center text-zinc-500">
              Click a step (or Tab to it and press Enter) to see its config and the executions at it.
            </div>
          )}
          <VersionHistory id={id} shown={isPlaceholderData ? (asked ?? null) : shown} hrefFor={hrefFor} />
        </aside>
      </div>
    </div>
  );
}

function StepPanel({ workflow, step, onClose }: { workflow: WorkflowDetail; step: WorkflowDetail['steps'][number]; onClose: () => void }) {
  const at = `/executions?workflowId=${workflow.id}&stepId=${step.id}`;
  const nameOf = new Map(workflow.steps.map((s) => [s.key, s.name]));
  const out = workflow.transitions.filter((t) => t.from === step.key);
  const into = workflow.transitions.filter((t) => t.to === step.key);
  const reasons = Object.entries(step.stuckReasons).filter(([, n]) => (n ?? 0) > 0);
  return (
    <section aria-labelledby="step-heading" data-testid="step-panel" className="overflow-hidden rounded-md border border-zinc-200 bg-white shadow-xs">
      <header className="flex items-start gap-2 border-b border-zinc-200 px-4 py-2.5">
        <div className="min-w-0">
          <h2 id="step-heading" className="truncate text-[13px] font-semibold">
            {step.name}
          </h2>
          <p className="text-xs text-zinc-500">
            {STEP_TYPE_LABEL[step.type] ?? step.type} · <code className="font-mono">{step.key}</code>
          </p>
        </div>
        <button type="button" onClick={onClose} className="ml-auto rounded px-1.5 text-zinc-500 hover:bg-zinc-100 hover:text-zinc-900" aria-label="Close step panel">
          ✕
        </button>
      </header>
      <div className="space-y-3 px-4 py-3">
        <dl className="grid grid-cols-3 gap-2 text-center">
          {(
            [
              ['Running', step.running, 'RUNNING', 'text-sky-700'],
              ['Waiting', step.waiting, 'WAITING', 'text-amber-700'],
            ] as const
          ).map(([label, n, status, tone]) => (
            <div key={label} className="rounded bg-zinc-50 px-2 py-1.5 ring-1 ring-zinc-200">
              <dt className="text-[11px] font-medium tracking-wide text-zinc-500 uppercase">{label}</dt>
              <dd className={`text-lg font-semibold tabular-nums ${n > 0 ? tone : 'text-zinc-400'}`}>
                {n > 0 ? (
                  <Link href={`${at}&status=${status}`} className="hover:underline" aria-label={`${n.toLocaleString()} ${label.toLowerCase()} at this step`}>
                    {n.toLocaleString()}
                  </Link>
                ) : (
                  0
                )}
              </dd>
            </div>
          ))}
          <div className="rounded bg-zinc-50 px-2 py-1.5 ring-1 ring-zinc-200">
            <dt className="text-[11px] font-medium tracking-wide text-zinc-500 uppercase">Stuck</dt>
            <dd className={`text-lg font-semibold tabular-nums ${step.stuck > 0 ? 'text-red-700' : 'text-zinc-400'}`}>
              {step.stuck > 0 ? (
                <Link href={`${at}${reasons.map(([r]) => `&stuck=${r}`).join('')}`} className="hover:underline" aria-label={`${step.stuck.toLocaleString()} stuck at this step`}>
                  {step.stuck.toLocaleString()}
                </Link>
              ) : (
                0
              )}
            </dd>
          </div>
        </dl>
        {reasons.length > 0 && (
          <ul className="flex flex-wrap gap-1.5">
            {reasons.map(([reason, n]) => (
              <li key={reason}>
                <Link href={`${at}&stuck=${reason}`} className="inline-flex items-center gap-1 text-xs text-zinc-700 hover:underline">
                  <StuckBadge reason={reason} /> {n}
                </Link>
              </li>
            ))}
          </ul>
        )}
        <p>
          <Link href={at} className="text-sm font-medium text-sky-700 hover:underline">
            Executions at this step →
          </Link>
        </p>
        <div>
          <h3 className="text-[11px] font-medium tracking-wide text-zinc-500 uppercase">Config</h3>
          <pre data-testid="step-config" className="mt-1 max-h-80 overflow-auto rounded bg-zinc-50 p-2 font-mono text-[11.5px] leading-snug text-zinc-800 ring-1 ring-zinc-200">
            {JSON.stringify(step.config ?? {}, null, 2)}
          </pre>
        </div>
        <div className="grid grid-cols-2 gap-3 text-xs">
          <div>
            <h3 className="text-[11px] font-medium tracking-wide text-zinc-500 uppercase">Comes from</h3>
            <ul className="mt-1 space-y-0.5 text-zinc-700">
              {into.length === 0 && <li className="text-zinc-400">nothing (the start)</li>}
              {into.map((t) => (
                <li key={t.id}>
                  {nameOf.get(t.from)}
                  {t.branch && <span className="ml-1 font-mono text-zinc-500">({t.branch})</span>}
                </li>
              ))}
            </ul>
          </div>
          <div>
            <h3 className="text-[11px] font-medium tracking-wide text-zinc-500 uppercase">Goes to</h3>
            <ul className="mt-1 space-y-0.5 text-zinc-700">
              {out.length === 0 && <li className="text-zinc-400">nothing (the execution ends)</li>}
              {out.map((t) => (
                <li key={t.id}>
                  {t.branch && <span className="mr-1 font-mono text-zinc-500">{t.branch} →</span>}
                  {nameOf.get(t.to)}
                </li>
              ))}
            </ul>
          </div>
        </div>
      </div>
    </section>
  );
}
