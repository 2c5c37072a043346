'use client';

import { useState } from 'react';
import type { StepType } from '@/server/common/workflow-definition';
import { BRANCH_STYLE } from '../../_components/graph-parts';
import type { VersionDefinition, VersionStep } from '../../_components/versions';
import { ConditionFields, DelayFields, ExitFields, UpdateContactFields, WaitFields, type ConfigProps } from './config-fields';
import { branchesOf, connectRefusal, TYPE_LABEL } from './definition-model';
import { EmailFields } from './email-fields';
import { Field, friendly, inputBase, inputClass } from './fields';
import { issuesAt, type FieldIssue } from './validation';

// The selected step's side form: its name, its key (editable only while the step is new:
// the key is the step's identity across versions), its config by type, where each of its
// branches goes, and Remove. Every field shows the schema's problems for its own path.

const KEY_RULE = /^[a-z0-9_-]{1,64}$/;

function KeyField({ step, isNew, taken, onRename, disabled }: { step: VersionStep; isNew: boolean; taken: Set<string>; onRename: (key: string) => void; disabled: boolean }) {
  const [text, setText] = useState(step.key);
  const problem = text === step.key ? null : !KEY_RULE.test(text) ? 'lower-case letters, digits, _ and - only (1 to 64)' : taken.has(text) ? 'another step has this key' : null;
  if (!isNew) {
    return (
      <p className="text-xs text-zinc-500">
        Key <code className="rounded bg-zinc-100 px-1 font-mono text-zinc-800">{step.key}</code>{' '}
        <span title="Executions and the version diff know the step by its key: changing it would be removing this step and adding another.">(fixed: it identifies the step across versions)</span>
      </p>
    );
  }
  return (
    <Field label="Key" hint="(identifies the step across versions)" problems={problem ? [problem] : []}>
      {(props) => (
        <input
          {...props}
          value={text}
          disabled={disabled}
          spellCheck={false}
          onChange={(e) => setText(e.target.value)}
          onBlur={() => (problem || text === step.key ? setText(step.key) : onRename(text))}
          onKeyDown={(e) => e.key === 'Enter' && !problem && text !== step.key && onRename(text)}
          className={`${inputClass} font-mono`}
        />
      )}
    </Field>
  );
}

function Connections({ def, step, issues, onConnect, disabled }: { def: VersionDefinition; step: VersionStep; issues: FieldIssue[] | undefined; onConnect: (branch: string | null, to: string | null) => void; disabled: boolean }) {
  const branches = branchesOf(step.type);
  if (branches.length === 0) return <p className="text-xs text-zinc-500">An exit ends the execution: nothing follows it.</p>;
  const others = def.steps.filter((s) => s.key !== step.key && s.type !== 'TRIGGER');
  return (
    <div className="space-y-1.5">
      <h3 className="text-[11px] font-medium tracking-wide text-zinc-500 uppercase">Goes to</h3>
      {branches.map((branch) => {
        const current = def.transitions.find((t) => t.from === step.key && t.branch === branch)?.to ?? '';
        const problems = issuesAt(issues, `goes.${branch ?? 'next'}`, true);
        return (
          <div key={branch ?? 'next'}>
            <div className="flex items-center gap-2">
              <label htmlFor={`goes-${branch ?? 'next'}`} className={`w-20 shrink-0 text-xs ${branch ? '' : 'text-zinc-700'}`}>
                {branch ? <span className={`rounded px-1.5 py-px font-mono text-[11px] font-semibold ring-1 ${BRANCH_STYLE[branch] ?? ''}`}>{branch}</span> : 'next step'}
              </label>
              <select
                id={`goes-${branch ?? 'next'}`}
                value={current}
                disabled={disabled}
                aria-invalid={problems.length > 0}
                onChange={(e) => onConnect(branch, e.target.value || null)}
                className={`${inputBase} min-w-0 flex-1`}
              >
                <option value="">{step.type === 'CONDITION' ? '— choose a step —' : '— nothing: the execution ends —'}</option>
                {others.map((s) => {
                  const refused = s.key === current ? null : connectRefusal(def, step.key, s.key);
                  return (
                    <option key={s.key} value={s.key} disabled={refused !== null}>
                      {s.name || s.key} ({s.key}){refused ? ` — ${refused}` : ''}
                    </option>
                  );
                })}
              </select>
            </div>
            {problems.map((p) => (
              <p key={p} className="pl-22 text-xs text-red-700">
                {friendly(p)}
              </p>
            ))}
          </div>
        );
      })}
    </div>
  );
}

const CONFIG_FORMS: Partial<Record<StepType, (props: ConfigProps) => React.ReactNode>> = {
  SEND_EMAIL: EmailFields,
  DELAY: DelayFields,
  WAIT_FOR_EVENT: WaitFields,
  CONDITION: ConditionFields,
  UPDATE_CONTACT: UpdateContactFields,
  EXIT: ExitFields,
};

export function StepForm({
  def,
  step,
  isNew,
  issues,
  trigger,
  onChange,
  onRename,
  onConnect,
  onRemove,
  onClose,
  disabled,
}: {
  def: VersionDefinition;
  step: VersionStep;
  /** Not in the version the editor started from. */
  isNew: boolean;
  issues: FieldIssue[] | undefined;
  trigger: string;
  onChange: (patch: Partial<Pick<VersionStep, 'name' | 'config'>>) => void;
  onRename: (key: string) => void;
  onConnect: (branch: string | null, to: string | null) => void;
  onRemove: () => void;
  onClose: () => void;
  disabled: boolean;
}) {
  const Config = CONFIG_FORMS[step.type as StepType];
  const whole = issuesAt(issues, '');
  const unknown = (issues ?? []).filter((i) => i.field !== '' && i.field !== 'name' && !i.field.startsWith('config') && !i.field.startsWith('goes.'));
  return (
    <section aria-labelledby="step-form-heading" data-testid="step-form" className="overflow-hidden rounded-md border border-zinc-200 bg-white shadow-xs">
      <header className="flex items-start gap-2 border-b border-zinc-200 px-4 py-2.5">
        <div className="min-w-0">
          <h2 id="step-form-heading" className="truncate text-[13px] font-semibold">
            {step.name || 'Unnamed step'}
          </h2>
          <p className="text-xs text-zinc-500">
            {TYPE_LABEL[step.type as StepType] ?? step.type}
            {isNew && <span className="ml-1.5 rounded bg-emerald-50 px-1 text-[10.5px] font-semibold text-emerald-800 ring-1 ring-emerald-200">new</span>}
          </p>
        </div>
        <button type="button" onClick={onClose} className="ml-auto rounded px-1.5 text-zinc-500 hover:bg-zinc-100 hover:text-zinc-900" aria-label="Close step form">
          ✕
        </button>
      </header>
      <div className="space-y-3 px-4 py-3">
        {[...whole, ...unknown.map((i) => `${i.field}: ${i.message}`)].map((p) => (
          <p key={p} role="alert" className="rounded bg-red-50 px-2 py-1 text-xs text-red-800 ring-1 ring-red-200">
            {friendly(p)}
          </p>
        ))}
        <Field label="Name" problems={issuesAt(issues, 'name')}>
          {(props) => <input {...props} value={step.name} disabled={disabled} onChange={(e) => onChange({ name: e.target.value })} className={inputClass} data-testid="step-name" />}
        </Field>
        <KeyField key={step.key} step={step} isNew={isNew} taken={new Set(def.steps.map((s) => s.key))} onRename={onRename} disabled={disabled} />
        {step.type === 'TRIGGER' ? (
          <p className="text-xs text-zinc-600">Contacts enter the workflow here: {trigger}. The trigger is the workflow&apos;s, not the version&apos;s.</p>
        ) : Config ? (
          <Config config={step.config} issues={issues} onChange={(config) => onChange({ config })} disabled={disabled} />
        ) : (
          <p className="text-xs text-red-700">Unknown step type {step.type}.</p>
        )}
        <Connections def={def} step={step} issues={issues} onConnect={onConnect} disabled={disabled} />
        {step.type !== 'TRIGGER' && (
          <div className="border-t border-zinc-100 pt-2.5">
            <button
              type="button"
              onClick={onRemove}
              disabled={disabled}
              className="rounded px-2 py-1 text-xs font-medium text-red-700 ring-1 ring-red-200 hover:bg-red-50 disabled:text-zinc-400"
            >
              Remove step
            </button>
            <span className="ml-2 text-xs text-zinc-500">and its connections</span>
          </div>
        )}
      </div>
    </section>
  );
}
