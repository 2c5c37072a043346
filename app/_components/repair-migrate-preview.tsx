'use client';

import { Badge } from './badges';
import { AllowResend, MAPPABLE_REFUSALS, StepMapEditor, useTargetVersion, VersionPicker, type MigrateChoicesState } from './repair-migrate';
import { Row } from './repair-preview';
import { absoluteTime } from './time';
import type { Preview } from './repair-types';

// What MIGRATE would do to one execution, as its preview plans it (server/repair/planner.ts
// MigrationPlan): from which version and step to which, whether its pending wait keeps its
// deadline and look-back, and which emails it would send again. Rows of the preview's list.

type ExecutionPlan = Extract<Preview['plan'], { migration?: unknown }>;
type Migration = NonNullable<ExecutionPlan['migration']>;

/** The preview's MIGRATE plan and refusal code, when it has them (an email's plan never does). */
export function migrationOf(p: Preview): { migration: Migration | null; code: string | null } {
  const plan = p.plan as Partial<ExecutionPlan>;
  return { migration: 'migration' in plan ? (plan.migration ?? null) : null, code: plan.migrationRefusal ?? null };
}

function StepAt({ version, step }: { version: number; step: { key: string; name: string; type: string } }) {
  return (
    <span className="inline-flex min-w-0 items-baseline gap-1.5">
      <Badge tone="zinc">v{version}</Badge>
      <span className="font-medium">“{step.name}”</span>
      <span className="text-[11px] text-zinc-400">{step.type}</span>
      <code className="font-mono text-[11px] text-zinc-500">{step.key}</code>
    </span>
  );
}

export function MigrationRows({ migration: m, waiting, emailNote }: { migration: Migration; waiting: boolean; emailNote: string | null }) {
  const before = m.deadline?.before ?? null;
  const after = m.deadline?.after ?? null;
  const changed = (before?.getTime() ?? null) !== (after?.getTime() ?? null);
  return (
    <>
      <Row label="Moves" testId="preview-migration">
        <span className="inline-flex flex-wrap items-baseline gap-x-2 gap-y-1">
          <StepAt version={m.fromVersion} step={m.fromStep} />
          <span className="text-zinc-400">→</span>
          <StepAt version={m.toVersion} step={m.toStep} />
        </span>
      </Row>
      <Row label="Its wait" testId="preview-migration-wait">
        {m.keepsWait ? (
          <span className="space-y-0.5">
            <span className="block">
              <span className="font-medium">Keeps waiting</span>
              {' · deadline '}
              {changed ? (
                <>
                  <span className="text-zinc-500 line-through">{before ? absoluteTime(before) : 'none'}</span> → <span className="font-medium text-amber-800">{after ? absoluteTime(after) : 'none'}</span>
                </>
              ) : (
                <span>{after ? absoluteTime(after) : '—'} (unchanged)</span>
              )}
            </span>
            {m.lookBackFrom && (
              <span className="block text-xs text-zinc-600">Events accepted since {absoluteTime(m.lookBackFrom)} (the wait’s start) still resume it.</span>
            )}
          </span>
        ) : waiting ? (
          <span>
            <span className="font-medium">Ends unresolved</span>: “{m.toStep.name}” runs now.
          </span>
        ) : (
          <span className="text-zinc-600">No wait pending: “{m.toStep.name}” runs next.</span>
        )}
      </Row>
      <Row label="Re-sends" testId="preview-migration-resends">
        {m.resends.length ? (
          <span className="font-medium text-red-700">
            {m.resends.map((k) => (
              <code key={k} className="mr-1.5 font-mono text-xs">
                {k}
              </code>
            ))}
            already sent by this execution, sent again on version {m.toVersion}
          </span>
        ) : (
          <span>
            <span className="font-medium">None</span>: no email it already sent lies ahead of “{m.toStep.name}”.
            {emailNote && <span className="block text-xs text-zinc-600">{emailNote.charAt(0).toUpperCase() + emailNote.slice(1)}.</span>}
          </span>
        )}
      </Row>
    </>
  );
}

/**
 * The single dialog's MIGRATE choices over its preview: the version (always), the step map
 * (when the version lacks the execution's step, or once mapped) and the consent to re-send
 * (when the move would send again what it sent), each change previewing again.
 */
export function MigrateDialogChoices({ preview: p, state, disabled }: { preview: Preview; state: MigrateChoicesState; disabled: boolean }) {
  const { target } = useTargetVersion(p.target.kind === 'execution' ? p.target.workflowId : null, state.toVersion);
  if (p.target.kind !== 'execution') return null;
  const t = p.target;
  const { migration, code } = migrationOf(p);
  const mapping = !!t.step && (MAPPABLE_REFUSALS.includes(code ?? '') || state.stepMap[t.step.key] !== undefined);
  const resends = code === 'RESEND' || state.allowResend ? (migration?.resends ?? []) : [];
  return (
    <div className="space-y-2" data-testid="migrate-choices">
      <VersionPicker workflowId={t.workflowId} fromVersion={t.workflowVersionNumber} state={state} disabled={disabled} />
      {mapping && t.step && (
        <StepMapEditor
          workflowId={t.workflowId}
          toVersion={target}
          from={[{ key: t.step.key, name: t.step.name }]}
          state={state}
          refused={new Set(MAPPABLE_REFUSALS.includes(code ?? '') ? [t.step.key] : [])}
          disabled={disabled}
        />
      )}
      <AllowResend resends={resends} state={state} disabled={disabled} />
    </div>
  );
}
