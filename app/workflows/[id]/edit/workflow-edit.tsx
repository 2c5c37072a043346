'use client';

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Link from 'next/link';
import { useRouter } from 'next/navigation';
import { useCallback, useEffect, useMemo, useState } from 'react';
import type { StepType } from '@/server/common/workflow-definition';
import { useHydrated } from '../../../_components/hydrated';
import { LIVE_REFRESH_MS, Panel } from '../../../_components/panel';
import { RelativeTime } from '../../../_components/time';
import { useTRPC } from '../../../_trpc/client';
import type { StepCounts, WorkflowDetail } from '../../_components/definition';
import { cleanDefinition, definitionFromJson, rememberPublished, type StepDiff, type VersionDefinition } from '../../_components/versions';
import { addStep, connect, removeStep, updateStep } from './definition-model';
import { EditableGraph } from './editable-graph';
import { DraftState, KeptEdits, ProblemsPanel, type Kept } from './edit-panels';
import { PublishDialog } from './publish-dialog';
import { StepForm } from './step-form';
import { useDraft, type Saved } from './use-draft';
import { validateVersion } from './validation';

// The workflow editor: the graph on an editable canvas, the selected step's form beside
// it, the problems under it. It starts from the draft when there is one, else from the
// latest version; the draft saves itself as you go; "Review & publish" publishes with the
// version the editor started from, so a publish over someone else's is refused.

const buttonClass =
  'rounded px-2.5 py-1 text-xs font-medium ring-1 focus-visible:outline-2 focus-visible:outline-sky-600 disabled:cursor-not-allowed disabled:text-zinc-400 disabled:ring-zinc-200';

export function WorkflowEdit({ id, you }: { id: string; you: string }) {
  const trpc = useTRPC();
  const { data, error } = useQuery(trpc.workflows.get.queryOptions({ id }, { refetchInterval: LIVE_REFRESH_MS }));
  if (error && !data) {
    return (
      <div role="alert" className="rounded-md border border-zinc-200 bg-white px-4 py-6 text-zinc-600">
        {error.data?.code === 'NOT_FOUND' ? 'No such workflow in this project.' : `Could not load the workflow: ${error.message}`}{' '}
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
  return <Editor key={id} workflow={data} you={you} />;
}

function startingPoint(workflow: WorkflowDetail): Saved {
  if (workflow.draft) {
    return {
      def: cleanDefinition(definitionFromJson(workflow.draft.definition)),
      basedOn: workflow.draft.basedOnVersion,
      at: new Date(workflow.draft.updatedAt),
      by: workflow.draft.updatedBy,
    };
  }
  return { def: cleanDefinition(workflowDefinition(workflow)), basedOn: workflow.version.number, at: null, by: null };
}

function workflowDefinition(w: Pick<WorkflowDetail, 'steps' | 'transitions'>): VersionDefinition {
  return definitionFromJson({ steps: w.steps, transitions: w.transitions });
}

const keptKey = (id: string) => `waypost.kept-edits.${id}`;

function Editor({ workflow, you }: { workflow: WorkflowDetail; you: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const router = useRouter();
  const hydrated = useHydrated();
  const id = workflow.id;
  const [initial] = useState(() => startingPoint(workflow));
  const [def, setDef] = useState(initial.def);
  const [basedOn, setBasedOn] = useState(initial.basedOn);
  // Bumped when the whole definition is replaced, so every form field starts over.
  const [revision, setRevision] = useState(0);
  const [selected, setSelected] = useState<string | null>(null);
  const [publishing, setPublishing] = useState(false);
  const [confirmDiscard, setConfirmDiscard] = useState(false);
  const [kept, setKeptState] = useState<Kept | null>(null);
  const draft = useDraft({ workflowId: id, def, basedOn, initial, you });

  useEffect(() => {
    try {
      const raw = sessionStorage.getItem(keptKey(id));
      if (raw) setKeptState(JSON.parse(raw) as Kept);
    } catch {
      // Nothing kept.
    }
  }, [id]);
  const setKept = (k: Kept | null) => {
    setKeptState(k);
    try {
      if (k) sessionStorage.setItem(keptKey(id), JSON.stringify(k));
      else sessionStorage.removeItem(keptKey(id));
    } catch {
      // The panel still shows them for this page's life.
    }
  };

  // The version the editor started from: its step ids (the executions list's filter) and live counts.
  const base = useQuery(trpc.workflows.get.queryOptions({ id, version: basedOn }, { refetchInterval: LIVE_REFRESH_MS }));
  const versions = useQuery(trpc.workflows.versions.queryOptions({ workflowId: id }, { refetchInterval: LIVE_REFRESH_MS }));
  const baseKeys = useMemo(() => new Set((base.data?.steps ?? []).map((s) => s.key)), [base.data]);
  const counts = useMemo(() => (base.data ? new Map<string, StepCounts>(base.data.steps.map((s) => [s.key, s])) : null), [base.data]);
  const stepIds = useMemo(() => new Map((base.data?.steps ?? []).map((s) => [s.key, s.id])), [base.data]);
  const frame = { name: workflow.name, trigger: workflow.trigger as 'EVENT' | 'MANUAL', triggerEvent: workflow.triggerEvent, allowReentry: workflow.allowReentry };
  // eslint-disable-next-line react-hooks/exhaustive-deps
  const issues = useMemo(() => validateVersion(def, frame), [def, workflow.trigger, workflow.triggerEvent, workflow.name]);

  const latest = Math.max(workflow.latestVersion, versions.data?.latestVersion ?? 0);
  const latestInfo = versions.data?.items.find((v) => v.number === latest);
  const remoteDraft = workflow.draft && (!draft.saved.at || new Date(workflow.draft.updatedAt).getTime() > draft.saved.at.getTime()) ? workflow.draft : null;

  const change = useCallback((next: (d: VersionDefinition) => VersionDefinition) => setDef((d) => next(d)), []);
  const replaceAll = (next: VersionDefinition, version: number, saved: Saved) => {
    setDef(next);
    setBasedOn(version);
    draft.setSaved(saved);
    setSelected(null);
    setRevision((r) => r + 1);
  };

  const loadVersion = async (n: number) => {
    const v = await queryClient.fetchQuery(trpc.workflows.get.queryOptions({ id, version: n }));
    setKept({ def, basedOn, replacedBy: n });
    const loaded = cleanDefinition(workflowDefinition(v));
    // The draft on the server keeps the earlier edits until the next change is saved.
    replaceAll(loaded, n, { def: loaded, basedOn: n, at: null, by: null });
    setPublishing(false);
  };

  const discard = useMutation(
    trpc.workflows.discardDraft.mutationOptions({
      onSuccess: async () => {
        await queryClient.invalidateQueries({ queryKey: trpc.workflows.get.queryKey({ id }) });
        const latestWf = await queryClient.fetchQuery(trpc.workflows.get.queryOptions({ id }));
        const fresh = cleanDefinition(workflowDefinition(latestWf));
        replaceAll(fresh, latestWf.version.number, { def: fresh, basedOn: latestWf.version.number, at: null, by: null });
        setConfirmDiscard(false);
      },
    }),
  );

  const published = (version: number, diff: StepDiff) => {
    rememberPublished(id, { version, basedOn, diff });
    setKept(null);
    draft.setSaved({ def, basedOn, at: null, by: null });
    void queryClient.invalidateQueries({ queryKey: trpc.workflows.pathKey() });
    router.push(`/workflows/${id}?version=${version}`);
  };

  const step = def.steps.find((s) => s.key === selected) ?? null;
  const disabled = !hydrated;
  const hasDraft = !!draft.saved.at || !!workflow.draft;
  return (
    <div className="space-y-3">
      <header className="flex flex-wrap items-center gap-x-6 gap-y-2">
        <div className="min-w-0 flex-1">
          <h1 className="truncate text-lg font-semibold tracking-tight">Edit “{workflow.name}”</h1>
          <p className="flex flex-wrap gap-x-1.5 text-zinc-500" data-testid="edit-base">
            <span>
              {hasDraft ? 'Draft' : 'Editing'} based on version {basedOn}
              {basedOn === latest ? ' (the latest)' : ''}, to publish as version {basedOn + 1}
            </span>
            <span aria-hidden>·</span>
            <span role="status" aria-live="polite">
              <DraftState status={draft.status} saved={draft.saved} onRetry={() => void draft.saveNow()} />
            </span>
          </p>
        </div>
        <div className="flex shrink-0 flex-wrap items-center gap-2">
          {hasDraft &&
            (confirmDiscard ? (
              <span className="flex items-center gap-1.5 text-xs">
                Discard the draft and start over from version {latest}?
                <button type="button" disabled={discard.isPending} onClick={() => discard.mutate({ workflowId: id })} className={`${buttonClass} text-red-700 ring-red-300 hover:bg-red-50`}>
                  {discard.isPending ? 'Discarding…' : 'Discard'}
                </button>
                <button type="button" onClick={() => setConfirmDiscard(false)} className={`${buttonClass} text-zinc-700 ring-zinc-300 hover:bg-zinc-100`}>
                  Keep
                </button>
              </span>
            ) : (
              <button type="button" disabled={disabled} onClick={() => setConfirmDiscard(true)} className={`${buttonClass} text-zinc-700 ring-zinc-300 hover:bg-zinc-100`}>
                Discard draft
              </button>
            ))}
          <button
            type="button"
            disabled={disabled || !draft.dirty || draft.status.kind === 'saving' || draft.status.kind === 'unsavable'}
            onClick={() => void draft.saveNow()}
            className={`${buttonClass} text-zinc-700 ring-zinc-300 hover:bg-zinc-100`}
          >
            Save draft
          </button>
          <span className={`text-xs ${issues.count ? 'text-red-700' : 'text-emerald-700'}`}>
            {issues.count ? `${issues.count} problem${issues.count === 1 ? '' : 's'}` : 'ready'}
          </span>
          <button
            type="button"
            disabled={disabled || !issues.ok}
            onClick={() => setPublishing(true)}
            className="rounded bg-zinc-900 px-3 py-1 text-xs font-medium text-white hover:bg-zinc-700 focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-sky-600 disabled:cursor-not-allowed disabled:bg-zinc-300"
          >
            Review &amp; publish
          </button>
        </div>
      </header>
      {discard.error && <p role="alert" className="text-red-700">Could not discard the draft: {discard.error.message}</p>}

      {latest > basedOn && (
        <div role="alert" className="flex flex-wrap items-center gap-3 rounded-md border border-amber-200 bg-amber-50 px-4 py-2 text-amber-900" data-testid="behind-banner">
          <span>
            Version {latest} was published{latestInfo ? ` by ${latestInfo.publishedBy}` : ''}
            {latestInfo && (
              <>
                {' '}
                (<RelativeTime at={latestInfo.publishedAt} />)
              </>
            )}{' '}
            after this edit started from version {basedOn}: publishing it will be refused.
          </span>
          <button type="button" onClick={() => void loadVersion(latest)} className={`${buttonClass} ml-auto bg-white text-amber-900 ring-amber-300 hover:bg-amber-100`}>
            Load version {latest} (your edits are kept)
          </button>
        </div>
      )}
      {remoteDraft && draft.saved.at !== null && (
        <p role="status" className="rounded-md border border-zinc-200 bg-white px-4 py-2 text-zinc-700" data-testid="remote-draft">
          The draft was saved again by {remoteDraft.updatedBy} at {new Date(remoteDraft.updatedAt).toLocaleTimeString()} (another tab or person). Your next save
          replaces theirs; publishing is checked against the version either way.
        </p>
      )}
      {kept && (
        <KeptEdits
          kept={kept}
          onRestore={() => {
            setDef(kept.def);
            setSelected(null);
            setRevision((r) => r + 1);
          }}
          onDismiss={() => setKept(null)}
        />
      )}

      <div className="flex flex-col gap-3 xl:flex-row xl:items-start">
        <div className="min-w-0 flex-1 space-y-3">
          <Panel
            title="Steps"
            labelledBy="edit-graph-heading"
            summary={
              <span className="text-xs text-zinc-500">
                {def.steps.length} steps · {def.transitions.length} connections · live counts of version {basedOn}
              </span>
            }
          >
            <EditableGraph
              def={def}
              selected={step?.key ?? null}
              onSelect={setSelected}
              onConnect={(from, branch, to) => change((d) => connect(d, from, branch, to))}
              onAdd={(type: StepType) => {
                const { def: next, key } = addStep(def, type, step?.key ?? null);
                setDef(next);
                setSelected(key);
              }}
              counts={counts}
              issues={issues}
              disabled={disabled}
            />
          </Panel>
          <ProblemsPanel def={def} issues={issues} onSelect={setSelected} />
        </div>
        <aside className="w-full shrink-0 xl:sticky xl:top-14 xl:max-h-[calc(100vh-4.5rem)] xl:w-[23rem] xl:overflow-y-auto">
          {step ? (
            <StepForm
              key={`${step.key}:${revision}`}
              def={def}
              step={step}
              isNew={!baseKeys.has(step.key)}
              issues={issues.byStep.get(step.key)}
              trigger={workflow.trigger === 'EVENT' ? `on the event ${workflow.triggerEvent}` : 'enrolled by hand, CSV or the API'}
              onChange={(patch) => change((d) => updateStep(d, step.key, patch))}
              onRename={(key) => {
                change((d) => updateStep(d, step.key, { key }));
                setSelected(key);
              }}
              onConnect={(branch, to) => change((d) => connect(d, step.key, branch, to))}
              onRemove={() => {
                change((d) => removeStep(d, step.key));
                setSelected(null);
              }}
              onClose={() => setSelected(null)}
              disabled={disabled}
            />
          ) : (
            <div className="rounded-md border border-dashed border-zinc-300 bg-white px-4 py-6 text-center text-zinc-500">
              Click a step to edit it. Add steps with the picker above the graph; connect them by dragging from a step&apos;s bottom handle onto another step.
            </div>
          )}
        </aside>
      </div>

      {publishing && (
        <PublishDialog
          workflowId={id}
          basedOn={basedOn}
          def={def}
          stepIds={stepIds}
          onClose={() => setPublishing(false)}
          onPublished={published}
          onLoadVersion={(n) => void loadVersion(n)}
          onSelectStep={setSelected}
        />
      )}
    </div>
  );
}
