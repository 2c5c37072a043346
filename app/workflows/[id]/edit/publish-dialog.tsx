'use client';

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useEffect, useId, useRef } from 'react';
import { absoluteTime, RelativeTime } from '../../../_components/time';
import { useTRPC } from '../../../_trpc/client';
import { DiffView } from '../../_components/diff-view';
import { asInput, executionsAtStep, formatPath, serverIssuesOf, versionConflictOf, type StepDiff, type VersionDefinition } from '../../_components/versions';
import { friendly } from './fields';

// Review & publish: workflows.publishPreview shows what publishing changes (steps added,
// removed, changed with their fields) and how many executions stand at each removed or
// changed step now; Publish sends the same definition with the version the editor started
// from. A publish over a version someone else published meanwhile is refused
// (VERSION_CONFLICT): the dialog says who published which version when and what it
// changed, and offers to load it, the marketer's edits kept aside.

export function PublishDialog({
  workflowId,
  basedOn,
  def,
  stepIds,
  onClose,
  onPublished,
  onLoadVersion,
  onSelectStep,
}: {
  workflowId: string;
  basedOn: number;
  def: VersionDefinition;
  /** The step ids of version `basedOn` by key: the executions list's filter. */
  stepIds: Map<string, string>;
  onClose: () => void;
  onPublished: (version: number, diff: StepDiff) => void;
  onLoadVersion: (version: number) => void;
  onSelectStep: (key: string) => void;
}) {
  const trpc = useTRPC();
  const dialog = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const queryClient = useQueryClient();
  // Told of a newer version (by the preview or a refused publish): the editor's banner and history catch up now, not at their next refresh.
  const refresh = () => void queryClient.invalidateQueries({ queryKey: trpc.workflows.pathKey() });
  const preview = useMutation(trpc.workflows.publishPreview.mutationOptions({ onSuccess: (p) => p.latestVersion > basedOn && refresh() }));
  const publish = useMutation(trpc.workflows.publish.mutationOptions({ onSuccess: (r) => onPublished(r.version, r.diff), onError: refresh }));
  const input = { workflowId, basedOnVersion: basedOn, definition: asInput(def) };

  useEffect(() => {
    const d = dialog.current;
    if (d && !d.open) d.showModal();
    preview.mutate(input);
    // The definition is fixed while the dialog is open (it is modal).
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  const p = preview.data;
  const conflict = versionConflictOf(publish.error);
  const refusal = publish.error && !conflict ? publish.error : preview.error;
  const links = { version: basedOn, at: (key: string) => (stepIds.get(key) ? executionsAtStep(workflowId, stepIds.get(key)!) : null) };
  const behind = p && p.latestVersion > basedOn;
  const stepName = (path: string) => {
    const m = /^steps\.(\d+)(\.(.*))?$/.exec(path);
    const step = m ? def.steps[Number(m[1])] : undefined;
    return step ? { key: step.key, label: `${step.name || step.key}${m?.[3] ? ` › ${m[3].replace(/^config\./, '')}` : ''}` } : null;
  };

  return (
    <dialog
      ref={dialog}
      aria-labelledby={titleId}
      onClose={onClose}
      data-testid="publish-dialog"
      className="m-auto w-[min(46rem,calc(100vw-2rem))] rounded-lg border border-zinc-300 bg-white p-0 text-[13px] text-zinc-900 shadow-xl backdrop:bg-zinc-900/40"
    >
      <header className="flex items-baseline gap-3 border-b border-zinc-200 px-5 py-3">
        <h2 id={titleId} className="text-[15px] font-semibold">
          {conflict ? 'Not published: someone published first' : `Publish version ${basedOn + 1}`}
        </h2>
        <span className="text-xs text-zinc-500">based on version {basedOn}</span>
      </header>

      <div className="max-h-[65vh] min-h-[12rem] space-y-3 overflow-y-auto px-5 py-4">
        {conflict ? (
          <div className="space-y-3" data-testid="version-conflict">
            <p role="alert" className="rounded bg-red-50 px-3 py-2 text-red-900 ring-1 ring-red-200">
              <span className="font-semibold">
                Version {conflict.current.number} was published by {conflict.current.publishedBy}
              </span>{' '}
              <span title={absoluteTime(conflict.current.publishedAt)}>
                at {absoluteTime(conflict.current.publishedAt)} (<RelativeTime at={conflict.current.publishedAt} />)
              </span>
              , after you started from version {basedOn}. Nothing was published, and your edits are still in the editor.
            </p>
            <div>
              <h3 className="mb-1 text-xs font-semibold text-zinc-700">
                What version {conflict.current.number} changed from version {basedOn}
              </h3>
              <DiffView diff={conflict.diff} />
            </div>
            <p className="text-xs text-zinc-600">
              Load version {conflict.current.number} to edit from it: your edits are kept beside the editor, to copy or put back on top of it.
            </p>
          </div>
        ) : (
          <>
            {preview.isPending && (
              <p role="status" className="py-6 text-center text-zinc-500">
                Comparing with version {basedOn} and counting the executions at each step…
              </p>
            )}
            {refusal && (
              <div role="alert" className="rounded bg-red-50 px-3 py-2 text-red-900 ring-1 ring-red-200" data-testid="publish-refused">
                <p className="font-medium">{refusal.data?.code === 'BAD_REQUEST' ? 'This definition cannot be published yet:' : `Refused: ${refusal.message}`}</p>
                {refusal.data?.code === 'BAD_REQUEST' && (
                  <ul className="mt-1 space-y-0.5 text-xs">
                    {serverIssuesOf(refusal).map((issue, i) => {
                      const at = stepName(issue.path);
                      return (
                        <li key={`${issue.path}:${i}`}>
                          {at ? (
                            <button type="button" className="font-semibold underline" onClick={() => (onSelectStep(at.key), dialog.current?.close())}>
                              {at.label}
                            </button>
                          ) : (
                            <code className="font-mono font-semibold">{issue.path ? formatPath(issue.path) : 'definition'}</code>
                          )}
                          : {friendly(issue.message)}
                        </li>
                      );
                    })}
                  </ul>
                )}
              </div>
            )}
            {p && (
              <>
                {behind && (
                  <p role="alert" className="rounded bg-amber-50 px-3 py-2 text-amber-900 ring-1 ring-amber-200">
                    Version {p.latestVersion} has been published since you started from version {basedOn}: publishing will be refused. Load version {p.latestVersion} and
                    make your changes on it.
                  </p>
                )}
                <DiffView diff={p.diff} links={links} />
                {p.activeAtRemoved + p.activeAtChanged > 0 ? (
                  <p className="rounded bg-zinc-50 px-3 py-2 text-xs text-zinc-700 ring-1 ring-zinc-200" data-testid="active-note">
                    <span className="font-semibold text-amber-800">
                      {p.activeAtRemoved.toLocaleString()} at removed steps, {p.activeAtChanged.toLocaleString()} at changed steps.
                    </span>{' '}
                    Executions already running stay on the version they started on and finish there; contacts enrolled after publishing start on version {basedOn + 1}.
                    After publishing, the workflow page links to the executions at removed and changed steps, to move them if you want.
                  </p>
                ) : (
                  <p className="text-xs text-zinc-500">No execution stands at a removed or changed step. Contacts enrolled after publishing start on version {basedOn + 1}.</p>
                )}
              </>
            )}
          </>
        )}
        {publish.error && !conflict && !refusal && <p role="alert">{publish.error.message}</p>}
      </div>

      <footer className="flex items-center gap-2 border-t border-zinc-200 bg-zinc-50 px-5 py-3">
        <span className="text-xs text-zinc-500">{conflict ? 'Nothing was written.' : `Published only if version ${basedOn} is still the latest.`}</span>
        <button type="button" onClick={() => dialog.current?.close()} className="ml-auto rounded px-3 py-1.5 text-xs font-medium text-zinc-700 ring-1 ring-zinc-300 hover:bg-zinc-100">
          {conflict ? 'Close' : 'Cancel'}
        </button>
        {conflict ? (
          <button
            type="button"
            onClick={() => onLoadVersion(conflict.current.number)}
            className="rounded bg-zinc-900 px-3 py-1.5 text-xs font-medium text-white hover:bg-zinc-700"
          >
            Load version {conflict.current.number}
          </button>
        ) : behind ? (
          <>
            <button type="button" onClick={() => onLoadVersion(p.latestVersion)} className="rounded px-3 py-1.5 text-xs font-medium text-zinc-800 ring-1 ring-zinc-300 hover:bg-zinc-100">
              Load version {p.latestVersion}
            </button>
            <PublishButton onClick={() => publish.mutate(input)} pending={publish.isPending} disabled={!p} label={`Publish version ${basedOn + 1}`} />
          </>
        ) : (
          <PublishButton onClick={() => publish.mutate(input)} pending={publish.isPending} disabled={!p || publish.isSuccess} label={`Publish version ${basedOn + 1}`} />
        )}
      </footer>
    </dialog>
  );
}

function PublishButton({ onClick, pending, disabled, label }: { onClick: () => void; pending: boolean; disabled: boolean; label: string }) {
  return (
    <button
      type="button"
      onClick={onClick}
      disabled={disabled || pending}
      className="rounded bg-zinc-900 px-3 py-1.5 text-xs font-medium text-white hover:bg-zinc-700 focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-sky-600 disabled:cursor-not-allowed disabled:bg-zinc-300"
    >
      {pending ? 'Publishing…' : label}
    </button>
  );
}
