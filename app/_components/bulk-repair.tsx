'use client';

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import type { StuckReason } from '@/server/common/stuck-reasons';
import { useTRPC, useTRPCClient } from '../_trpc/client';
import type { RouterInputs } from '@/app/_trpc/types';
import { INPUT_CLASS } from './filters';
import { BulkOutcomes, downloadCsv, type BulkItem } from './repair-bulk-outcomes';
import { useMigrateChoices, VersionPicker } from './repair-migrate';
import { MigrateDryRunView, summaryOf, type MigrationDryRun } from './repair-migrate-groups';
import { ACTION_MEANS, actionsFor, subjectOf, type BulkActionName } from './stuck-actions';

// Bulk repair of one stuck group, or of what the Executions page's filters select
// (docs/stuck-and-repair.md, "Bulk repair"): choose an action the group's reason allows, count first (a dry run: "this will touch N"), confirm with a reason, then
// watch it run row by row over repair.applyManyLive (server-sent events) with a Stop
// button; every row's outcome is listed and can be downloaded as CSV. Rows already done
// when the run stops stay done. MIGRATE's dry run is a table of groups with the choices
// that clear what a choice can clear (repair-migrate-groups.tsx); changing one plans again.

export type BulkFilterInput = RouterInputs['repair']['applyMany']['filter'];

type Stage =
  | { kind: 'choose' }
  | { kind: 'confirm'; action: BulkActionName; matched: number; inWindowEvents: number; migration: MigrationDryRun | null }
  | { kind: 'running'; action: BulkActionName; total: number | null }
  | { kind: 'done'; action: BulkActionName; total: number; interrupted: boolean; why: string | null };


const button =
  'inline-flex h-8 items-center rounded border px-3 text-[13px] font-medium shadow-xs disabled:cursor-not-allowed disabled:opacity-50';
const primary = `${button} border-sky-700 bg-sky-600 text-white hover:bg-sky-700`;
const secondary = `${button} border-zinc-300 bg-white text-zinc-700 hover:border-zinc-400`;
const danger = `${button} border-red-700 bg-red-600 text-white hover:bg-red-700`;

export function BulkRepair({
  filter,
  reason,
  stepType,
  actions: offered,
  initialAction,
  workflowId = null,
  title,
  onClose,
}: {
  filter: BulkFilterInput;
  /** The stuck group's reason; null for an executions filter (then `actions` lists what is offered). */
  reason: StuckReason | null;
  stepType: string | null;
  actions?: BulkActionName[];
  /** The action chosen when the panel opens (a link's ?repair=MIGRATE); else the first offered. */
  initialAction?: BulkActionName | undefined;
  /** The one workflow the selection is of, if any: MIGRATE lists its versions and steps. */
  workflowId?: string | null;
  /** The group in words, e.g. "WAIT_OVERDUE · Welcome series · Wait for a purchase". */
  title: string;
  onClose: () => void;
}) {
  const trpc = useTRPC();
  const client = useTRPCClient();
  const queryClient = useQueryClient();
  const actions = offered ?? (reason ? actionsFor(reason, stepType) : []);
  const [action, setAction] = useState<BulkActionName>(initialAction ?? actions[0]!);
  const [why, setWhy] = useState('');
  // FORCE_TIMEOUT past events accepted inside the waits' windows: off unless the operator says so.
  const [ignoreEvents, setIgnoreEvents] = useState(false);
  // MIGRATE: the version, step map and re-send consent the dry run plans with and the run applies.
  const migrate = useMigrateChoices();
  const choicesFor = (a: BulkActionName) => (a === 'FORCE_TIMEOUT' && ignoreEvents ? { ignoreInWindowEvents: true } : a === 'MIGRATE' ? migrate.input : {});
  const [stage, setStage] = useState<Stage>({ kind: 'choose' });
  const [items, setItems] = useState<BulkItem[]>([]);
  const subscription = useRef<{ unsubscribe: () => void } | null>(null);
  const count = useMutation(trpc.repair.applyMany.mutationOptions());

  // Leaving the page stops a run (the server stops between rows; done rows stay done).
  useEffect(() => () => subscription.current?.unsubscribe(), []);
  const panel = useRef<HTMLElement>(null);
  // A block body: Chromium's scrollIntoView now returns a promise, which React would take for a cleanup.
  useEffect(() => {
    void panel.current?.scrollIntoView({ block: 'nearest', behavior: 'smooth' });
  }, []);

  const refresh = () => {
    void queryClient.invalidateQueries({ queryKey: trpc.repair.stuckGroups.queryKey() });
    void queryClient.invalidateQueries({ queryKey: trpc.executions.stats.queryKey() });
  };

  // The choices the last dry run planned with: MIGRATE plans again when they change.
  const counted = useRef<string | null>(null);
  const migrateKey = JSON.stringify(migrate.input);
  const countFirst = () => {
    counted.current = action === 'MIGRATE' ? migrateKey : null;
    count.mutate(
      { filter, action, reason: 'dry run: count first', dryRun: true, ...choicesFor(action) },
      {
        onSuccess: (result) =>
          setStage({ kind: 'confirm', action, matched: result.matched, inWindowEvents: result.inWindowEvents ?? 0, migration: result.migration ?? null }),
      },
    );
  };
  const planAgain = stage.kind === 'confirm' && stage.action === 'MIGRATE' && counted.current !== migrateKey;
  useEffect(() => {
    if (planAgain) countFirst();
    // countFirst reads the choices of this render; planAgain turns false once it ran.
  }, [planAgain, migrateKey]);
  const dry = stage.kind === 'confirm' && stage.migration ? summaryOf(stage.migration) : null;
  /** What the run would touch: MIGRATE's movable ones (the rest are refused row by row), else every match. */
  const willTouch = stage.kind === 'confirm' ? (dry ? dry.movable : stage.matched) : 0;

  const start = (chosen: BulkActionName) => {
    setItems([]);
    setStage({ kind: 'running', action: chosen, total: null });
    const finish = (interrupted: boolean, message: string | null) => {
      subscription.current?.unsubscribe();
      subscription.current = null;
      setStage((s) => (s.kind === 'running' ? { kind: 'done', action: s.action, total: s.total ?? 0, interrupted, why: message } : s));
      refresh();
    };
    subscription.current = client.repair.applyManyLive.subscribe(
      { filter, action: chosen, reason: why.trim(), ...choicesFor(chosen) },
      {
        onData: ({ data }) => {
          if (data.type === 'selected') setStage((s) => (s.kind === 'running' ? { ...s, total: data.total } : s));
          else if (data.type === 'item') setItems((list) => [...list, data.item]);
          else finish(data.interrupted, data.interrupted ? 'the server stopped the run before its end' : null);
        },
        onError: (error) => finish(true, error.message),
        // A dropped (or refused) connection: the server stops the run with it. Unsubscribe at
        // once, before the event source reconnects: a reconnect must never start a run anew.
        onConnectionStateChange: (state) => {
          if (state.state === 'connecting' && state.error) finish(true, `the connection to the server was lost (${state.error.message}), which stopped the run`);
        },
      },
    );
  };

  const stop = () => {
    subscription.current?.unsubscribe();
    subscription.current = null;
    setStage((s) => (s.kind === 'running' ? { kind: 'done', action: s.action, total: s.total ?? 0, interrupted: true, why: 'stopped by you' } : s));
    refresh();
  };

  const applied = items.filter((i) => i.outcome === 'APPLIED').length;
  const changed = items.filter((i) => i.outcome === 'SKIPPED_CHANGED').length;
  const refused = items.filter((i) => i.outcome === 'SKIPPED').length;
  const total = stage.kind === 'running' || stage.kind === 'done' ? stage.total : null;

  return (
    <section ref={panel} aria-labelledby="bulk-heading" data-testid="bulk-repair" className="overflow-hidden rounded-md border border-sky-200 bg-white shadow-xs">
      <header className="flex items-center gap-3 border-b border-sky-100 bg-sky-50/60 px-4 py-2.5">
        <h2 id="bulk-heading" className="text-[13px] font-semibold">
          Bulk repair
        </h2>
        <span className="truncate font-mono text-xs text-zinc-600" title={title}>
          {title}
        </span>
        <button type="button" onClick={onClose} disabled={stage.kind === 'running'} className="ml-auto rounded px-2 py-0.5 text-xs text-zinc-600 hover:bg-zinc-100 disabled:text-zinc-300">
          Close
        </button>
      </header>

      <div className="space-y-3 px-4 py-3">
        {stage.kind === 'choose' && (
          <>
            <fieldset>
              <legend className="text-[10.5px] font-medium tracking-wide text-zinc-500 uppercase">Action</legend>
              <div className="mt-1 space-y-1">
                {actions.map((a) => (
                  <label key={a} className="flex items-baseline gap-2">
                    <input type="radio" name="bulk-action" value={a} checked={action === a} onChange={() => setAction(a)} />
                    <code className="font-mono text-xs font-semibold">{a}</code>
                    {a === 'MIGRATE' && <span className="font-medium whitespace-nowrap">Move to version</span>}
                    <span className="text-zinc-600">{ACTION_MEANS[a]}</span>
                  </label>
                ))}
              </div>
            </fieldset>
            {action === 'MIGRATE' && workflowId && <VersionPicker workflowId={workflowId} fromVersion={1} state={migrate} />}
            <div className="flex items-center gap-3">
              <button type="button" className={primary} onClick={countFirst} disabled={count.isPending}>
                {count.isPending ? 'Counting…' : action === 'MIGRATE' ? 'Plan the move: a dry run' : 'Count what it would touch'}
              </button>
              <span className="text-xs text-zinc-500">A dry run: nothing changes yet.</span>
            </div>
            {count.error && (
              <p role="alert" className="text-red-700">
                Could not count: {count.error.message}
              </p>
            )}
          </>
        )}

        {stage.kind === 'confirm' && (
          <form
            className="space-y-3"
            onSubmit={(e) => {
              e.preventDefault();
              if (why.trim().length >= 3 && willTouch > 0 && !count.isPending) start(stage.action);
            }}
          >
            {stage.migration && workflowId ? (
              <MigrateDryRunView dry={stage.migration} matched={stage.matched} workflowId={workflowId} state={migrate} busy={count.isPending || planAgain} />
            ) : (
              <p data-testid="bulk-count" className="text-[13px]">
                <code className="font-mono text-xs font-semibold">{stage.action}</code> will touch{' '}
                <strong className="tabular-nums">{subjectOf(reason, stage.matched)}</strong> as they are now: {ACTION_MEANS[stage.action]}. Each row is
                repaired only if it has not changed since it was selected.
              </p>
            )}
            {count.error && stage.migration && (
              <p role="alert" className="text-red-700">
                Could not plan again: {count.error.message}
              </p>
            )}
            {stage.action === 'FORCE_TIMEOUT' && stage.inWindowEvents > 0 && (
              <div data-testid="bulk-in-window-events" className="space-y-1.5 rounded bg-violet-50 px-3 py-2 ring-1 ring-violet-200">
                <p>
                  <strong className="tabular-nums">{stage.inWindowEvents.toLocaleString()}</strong> of them {stage.inWindowEvents === 1 ? 'has' : 'have'} an event accepted inside
                  the wait’s window that was never delivered.{' '}
                  {ignoreEvents ? (
                    <>The timer would take their EVENT branch; you chose to time them out anyway.</>
                  ) : (
                    <>
                      {stage.inWindowEvents === 1 ? 'It takes' : 'They take'} the <strong>EVENT</strong> branch, as the timer would.
                    </>
                  )}
                </p>
                <label className="flex items-start gap-2 text-amber-900">
                  <input type="checkbox" className="mt-0.5" checked={ignoreEvents} onChange={(e) => setIgnoreEvents(e.target.checked)} />
                  <span>
                    <span className="font-medium">Time out anyway</span>: ignore those events and take every TIMEOUT branch. The audit log records that you chose to.
                  </span>
                </label>
              </div>
            )}
            {stage.matched === 0 ? (
              <p className="text-zinc-600">Nothing to repair: the group is empty now.</p>
            ) : dry && dry.movable === 0 ? (
              <p className="text-zinc-600">None of them can be moved with these choices: see why in the table.</p>
            ) : (
              <label className="block">
                <span className="text-[10.5px] font-medium tracking-wide text-zinc-500 uppercase">Reason (for the audit log, required)</span>
                <textarea
                  value={why}
                  onChange={(e) => setWhy(e.target.value)}
                  required
                  minLength={3}
                  maxLength={500}
                  rows={2}
                  placeholder="e.g. timer outage 2026-12-01: force the overdue waits on"
                  className={`${INPUT_CLASS} mt-0.5 block h-auto w-full max-w-2xl py-1`}
                />
              </label>
            )}
            <div className="flex gap-2">
              {willTouch > 0 && (
                <button type="submit" className={danger} disabled={why.trim().length < 3 || count.isPending || planAgain}>
                  {dry ? `Move ${subjectOf(null, dry.movable)}` : `Repair ${subjectOf(reason, stage.matched)}`}
                </button>
              )}
              {dry && dry.movable > 0 && dry.refused > 0 && (
                <span className="self-center text-xs text-zinc-600">the other {dry.refused.toLocaleString()} are left as they are, each refused with why</span>
              )}
              <button type="button" className={secondary} onClick={() => setStage({ kind: 'choose' })}>
                Back
              </button>
            </div>
          </form>
        )}

        {(stage.kind === 'running' || stage.kind === 'done') && (
          <div className="space-y-2">
            <div className="flex items-center gap-3">
              <div
                role="progressbar"
                aria-label="Bulk repair progress"
                aria-valuemin={0}
                aria-valuemax={total ?? 0}
                aria-valuenow={items.length}
                className="h-2.5 w-full max-w-xl overflow-hidden rounded-full bg-zinc-100 ring-1 ring-zinc-200 ring-inset"
              >
                <div
                  className={`h-full rounded-full transition-[width] duration-200 ${stage.kind === 'done' && stage.interrupted ? 'bg-amber-500' : 'bg-sky-600'}`}
                  style={{ width: total ? `${(100 * items.length) / total}%` : '0%' }}
                />
              </div>
              <span data-testid="bulk-progress" className="text-xs whitespace-nowrap text-zinc-600 tabular-nums">
                {total === null ? 'selecting…' : `${items.length.toLocaleString()} of ${total.toLocaleString()} done`}
              </span>
              {stage.kind === 'running' && (
                <button type="button" className={secondary} onClick={stop}>
                  Stop
                </button>
              )}
            </div>
            <p data-testid="bulk-summary" aria-live="polite" className="text-[13px]">
              {stage.kind === 'running' ? (
                <>
                  Running <code className="font-mono text-xs font-semibold">{stage.action}</code>…{' '}
                </>
              ) : stage.interrupted ? (
                <strong className="text-amber-800">
                  Interrupted ({stage.why}): {items.length} of {stage.total} done; rows done stay done.{' '}
                  {stage.why === 'stopped by you' && (
                    <span className="font-normal">A few rows already on their way when you stopped may have been repaired as well: count again to see what is left. </span>
                  )}
                </strong>
              ) : (
                <strong className="text-emerald-800">Finished: all {stage.total} rows done. </strong>
              )}
              <span className="text-zinc-600">
                {applied} applied · {changed} skipped because they changed · {refused} refused
              </span>
            </p>
            {stage.kind === 'done' && (
              <div className="flex gap-2">
                <button type="button" className={secondary} onClick={() => downloadCsv(items, `bulk-${stage.action.toLowerCase()}-${new Date().toISOString().slice(0, 19).replace(/[:T]/g, '-')}.csv`)} disabled={items.length === 0}>
                  Download CSV
                </button>
                <button type="button" className={secondary} onClick={() => setStage({ kind: 'choose' })}>
                  New run on this group
                </button>
              </div>
            )}
            <BulkOutcomes items={items} />
          </div>
        )}
      </div>
    </section>
  );
}
