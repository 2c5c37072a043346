'use client';

import { useQuery, useQueryClient } from '@tanstack/react-query';
import Link from 'next/link';
import { useEffect, useRef, useState } from 'react';
import { Badge, StatusBadge } from '../../_components/badges';
import { LIVE_REFRESH_MS, LoadError, Panel } from '../../_components/panel';
import { REPAIR_ACTION_TEXT, RepairDialog } from '../../_components/repair-dialog';
import type { RepairApplied, RepairTarget } from '../../_components/repair-types';
import { absoluteTime } from '../../_components/time';
import { useTRPC } from '../../_trpc/client';
import { atLeast, type Role } from '@/server/common/roles';


const first = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

/** MIGRATE refusals the operator clears in the dialog (server/repair/plan-migrate.ts). */
const CHOOSABLE = ['STEP_GONE', 'MAPPED_STEP_GONE', 'RESEND'];
/** MIGRATE refusals that only say there is no later version to move to. */
const ON_LATEST = ['NOT_LATER', 'NO_VERSION'];

/**
 * The repairs of one execution (operators and owners): the actions its current state
 * allows, each with what it would do now, and its emails whose fate waits for a person.
 * Each opens a preview first; nothing is applied from here directly. Marketers and
 * viewers see that the page is read-only for them, and no control.
 */
export function RepairPanel({
  executionId,
  version,
  role,
  actorLabel,
}: {
  executionId: string;
  /** The version the page shows: the options are re-read when it changes. */
  version: number;
  role: Role;
  actorLabel: (actor: string) => string | undefined;
}) {
  const mayRepair = atLeast(role, 'OPERATOR');
  if (!mayRepair) {
    return (
      <Panel title="Repair" labelledBy="repair-heading">
        <div className="px-4 py-3 text-zinc-500" data-testid="repair-panel">
          <p>Repairs are for operators. You are {role.toLowerCase()}: this page is read-only for you.</p>
        </div>
      </Panel>
    );
  }
  return <OperatorRepairPanel executionId={executionId} version={version} actorLabel={actorLabel} />;
}

function OperatorRepairPanel({ executionId, version, actorLabel }: { executionId: string; version: number; actorLabel: (actor: string) => string | undefined }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const options = useQuery(trpc.repair.options.queryOptions({ executionId }, { refetchInterval: LIVE_REFRESH_MS }));
  const [open, setOpen] = useState<RepairTarget | null>(null);
  const [applied, setApplied] = useState<{ result: RepairApplied; target: RepairTarget } | null>(null);
  const [eventId, setEventId] = useState('');
  const { refetch } = options;

  // The page moved to another version (a worker, an event, someone else): re-plan.
  const planned = useRef(version);
  useEffect(() => {
    if (planned.current === version) return;
    planned.current = version;
    void refetch();
  }, [version, refetch]);

  const refresh = () => {
    void queryClient.invalidateQueries({ queryKey: trpc.executions.get.queryKey({ id: executionId }) });
    void queryClient.invalidateQueries({ queryKey: trpc.repair.options.queryKey({ executionId }) });
  };

  const data = options.data;
  // MIGRATE refused for want of a choice (a step map, a re-send consent) is offered: its
  // dialog asks for the choice. On the latest version already it is not listed at all.
  const offered = (a: { action: string; plan: { allowed: boolean; migrationRefusal?: string } }) =>
    a.plan.allowed || (a.action === 'MIGRATE' && CHOOSABLE.includes(a.plan.migrationRefusal ?? ''));
  const allowed = data?.actions.filter(offered) ?? [];
  const refused = data?.actions.filter((a) => !offered(a) && !(a.action === 'MIGRATE' && ON_LATEST.includes(a.plan.migrationRefusal ?? ''))) ?? [];
  const emails = data?.messages ?? [];
  const count = allowed.length + emails.reduce((n, m) => n + m.actions.filter((a) => a.plan.allowed).length, 0);

  return (
    <Panel
      title="Repair"
      labelledBy="repair-heading"
      summary={data && (count === 0 ? <Badge tone="zinc">nothing to do</Badge> : <Badge tone="violet">{count === 1 ? '1 action' : `${count} actions`}</Badge>)}
      aside={data && <span className="tabular-nums">for v{data.expectedVersion}</span>}
    >
      <div className="space-y-3 px-4 py-3" data-testid="repair-panel">
        {applied && (
          <div role="status" className="rounded bg-emerald-50 px-3 py-2 text-emerald-900 ring-1 ring-emerald-200" data-testid="repair-applied">
            <p>
              <span className="font-semibold">Applied {REPAIR_ACTION_TEXT[applied.target.action].label.toLowerCase()}</span>: {first(applied.result.change)}.
            </p>
            <p className="text-xs text-emerald-800">
              Now version v{applied.result.version}; the audit log has the entry.{' '}
              <button type="button" className="underline" onClick={() => setApplied(null)}>
                Dismiss
              </button>
            </p>
          </div>
        )}
        {options.error && <LoadError what="the repair actions" message={options.error.message} />}
        {options.isPending && <p className="text-zinc-500">Reading what this state allows…</p>}
        {data && allowed.length === 0 && emails.length === 0 && (
          <p className="text-zinc-500">No repair fits its current state ({data.target.status}).</p>
        )}
        {allowed.length > 0 && (
          <ul className="space-y-2" aria-label="Repair actions">
            {allowed.map(({ action, plan }) => (
              <li key={action} className="flex items-start gap-3" data-testid={`repair-action-${action}`}>
                <button
                  type="button"
                  title={`Preview: ${REPAIR_ACTION_TEXT[action].does}`}
                  onClick={() => setOpen({ action, executionId, ...(action === 'DELIVER_EVENT' && eventId ? { eventId } : {}) })}
                  className="w-40 shrink-0 rounded border border-zinc-300 bg-white px-2 py-1 text-left font-medium hover:border-zinc-400 hover:bg-zinc-50 focus:ring-2 focus:ring-sky-300 focus:outline-none"
                >
                  {REPAIR_ACTION_TEXT[action].label}…
                </button>
                <div className="min-w-0 text-xs leading-5 text-zinc-600">
                  {plan.allowed ? (
                    <p>{first(plan.change)}.</p>
                  ) : (
                    <p>
                      <span className="font-medium text-amber-800">Needs a choice:</span> {plan.refusal}.
                    </p>
                  )}
                  {action === 'DELIVER_EVENT' && data && (
                    <label className="mt-1 flex items-center gap-1.5">
                      <span className="shrink-0">with</span>
                      <select
                        value={eventId}
                        onChange={(e) => setEventId(e.target.value)}
                        className="min-w-0 rounded border border-zinc-300 bg-white px-1 py-0.5 text-xs"
                        aria-label="Event to deliver"
                      >
                        <option value="">no particular event</option>
                        {data.events.map((ev) => (
                          <option key={ev.id} value={ev.id}>
                            {ev.name} accepted {absoluteTime(ev.createdAt)}
                            {ev.deadAt ? ' (dead)' : ev.processedAt ? '' : ' (pending)'}
                          </option>
                        ))}
                      </select>
                    </label>
                  )}
                </div>
              </li>
            ))}
          </ul>
        )}

        {emails.map(({ message, actions }) => (
          <div key={message.id} className="rounded border border-amber-200 bg-amber-50/50 px-3 py-2" data-testid="repair-email">
            <p className="flex flex-wrap items-center gap-2 text-xs">
              <span className="font-medium text-zinc-800">Email “{message.subject}”</span>
              <StatusBadge status={message.status} />
              <span className="text-zinc-600">{message.status === 'FAILED' ? `failed: ${message.error ?? 'no error recorded'}` : 'its sender stopped renewing its lease mid-send: the provider may or may not have it'}</span>
            </p>
            <ul className="mt-1.5 flex flex-wrap gap-2" aria-label={`Repairs of the email ${message.subject}`}>
              {actions
                .filter((a) => a.plan.allowed)
                .map(({ action }) => (
                  <li key={action}>
                    <button
                      type="button"
                      title={REPAIR_ACTION_TEXT[action].does}
                      onClick={() => setOpen({ action, messageId: message.id })}
                      className="rounded border border-zinc-300 bg-white px-2 py-1 text-xs font-medium hover:bg-zinc-50 focus:ring-2 focus:ring-sky-300 focus:outline-none"
                    >
                      {REPAIR_ACTION_TEXT[action].label}…
                    </button>
                  </li>
                ))}
            </ul>
          </div>
        ))}

        {refused.length > 0 && (
          <details className="text-xs text-zinc-500" data-testid="repair-refused">
            <summary className="cursor-pointer">Not available in this state ({refused.length})</summary>
            <ul className="mt-1 space-y-1">
              {refused.map(({ action, plan }) => (
                <li key={action}>
                  <span className="font-medium text-zinc-700">{REPAIR_ACTION_TEXT[action].label}</span>: {plan.refusal}
                  {plan.conflict?.reason === 'ACTIVE_EXECUTION' && (
                    <>
                      {' '}
                      <Link href={`/executions/${plan.conflict.executionId}`} className="text-sky-700 underline">
                        open the active execution
                      </Link>
                    </>
                  )}
                </li>
              ))}
            </ul>
          </details>
        )}
      </div>

      {open && (
        <RepairDialog
          key={JSON.stringify(open)}
          target={open}
          onClose={() => setOpen(null)}
          onApplied={(result, target) => {
            setApplied({ result, target });
            setOpen(null);
          }}
          onSettled={refresh}
          actorLabel={actorLabel}
        />
      )}
    </Panel>
  );
}
