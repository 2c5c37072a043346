'use client';

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useRouter } from 'next/navigation';
import { useDeferredValue, useMemo, useRef, useState } from 'react';
import { Panel } from '../../_components/panel';
import { useTRPC } from '../../_trpc/client';
import { drawable, formatPath, validateDefinition, type DefinitionIssue } from '../_components/definition';
import { WorkflowGraph } from '../_components/workflow-graph';

// The JSON editor of a new workflow: a textarea with line numbers, validated as you type
// with workflows.create's own schema (so an accepted draft is one the server accepts),
// the graph previewed beside it. The server's verdict is shown the same way: its zod
// issues at their paths, a taken name at `name`; nothing is stored when it refuses.

type ServerError = { data?: { code?: string; zodError?: { issues?: { path: string; message: string }[] } | null; conflict?: { reason?: string } | null } | null; message: string };

function serverIssues(error: ServerError): DefinitionIssue[] {
  const issues = error.data?.zodError?.issues;
  if (issues?.length) return issues.map((i) => ({ path: formatPath(i.path), message: i.message }));
  if (error.data?.conflict?.reason === 'NAME_TAKEN') return [{ path: 'name', message: error.message }];
  return [{ path: '(server)', message: error.message }];
}

export function WorkflowEditor({ initialText }: { initialText: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const router = useRouter();
  const [text, setText] = useState(initialText);
  const deferred = useDeferredValue(text);
  const validation = useMemo(() => validateDefinition(deferred), [deferred]);
  const preview = useMemo(() => drawable(validation.draft), [validation]);
  const [rejected, setRejected] = useState<{ text: string; issues: DefinitionIssue[] } | null>(null);
  const textarea = useRef<HTMLTextAreaElement>(null);
  const gutter = useRef<HTMLDivElement>(null);

  const create = useMutation(
    trpc.workflows.create.mutationOptions({
      onSuccess: ({ id }) => {
        void queryClient.invalidateQueries({ queryKey: trpc.workflows.list.queryKey() });
        router.push(`/workflows/${id}`);
      },
      onError: (error) => setRejected({ text, issues: serverIssues(error as unknown as ServerError) }),
    }),
  );

  const lines = text.split('\n').length;
  const errorLines = new Set(validation.issues.map((i) => i.line).filter((l): l is number => l !== undefined));
  // The server's refusal stands until the text changes.
  const serverSide = rejected && rejected.text === text ? rejected.issues : [];
  const upToDate = deferred === text;

  const goTo = (issue: DefinitionIssue) => {
    const el = textarea.current;
    if (!el || issue.line === undefined) return;
    const offset = text.split('\n').slice(0, issue.line - 1).reduce((n, l) => n + l.length + 1, 0) + (issue.column ?? 1) - 1;
    el.focus();
    el.setSelectionRange(offset, offset);
  };

  return (
    <div className="grid gap-3 xl:grid-cols-[minmax(0,5fr)_minmax(0,6fr)]">
      <Panel
        title="Definition (JSON)"
        labelledBy="editor-heading"
        summary={
          <span role="status" data-testid="validation-state" className={`text-xs ${validation.ok ? 'text-emerald-700' : 'text-red-700'}`}>
            {!upToDate ? 'checking…' : validation.ok ? 'valid' : `${validation.issues.length} problem${validation.issues.length === 1 ? '' : 's'}`}
          </span>
        }
        aside={
          <button
            type="button"
            disabled={!validation.ok || !upToDate || create.isPending}
            onClick={() => validation.ok && create.mutate(validation.draft as Parameters<typeof create.mutate>[0])}
            className="rounded bg-zinc-900 px-3 py-1 text-xs font-medium text-white hover:bg-zinc-700 focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-sky-600 disabled:cursor-not-allowed disabled:bg-zinc-300"
          >
            {create.isPending ? 'Creating…' : 'Create workflow'}
          </button>
        }
      >
        <div className="flex h-[560px] font-mono text-[12px] leading-[18px]">
          <div ref={gutter} aria-hidden className="w-11 shrink-0 overflow-hidden border-r border-zinc-200 bg-zinc-50 py-2 text-right text-zinc-400 select-none">
            {Array.from({ length: lines }, (_, i) => (
              <div key={i} className={`pr-2 ${errorLines.has(i + 1) ? 'bg-red-100 font-semibold text-red-700' : ''}`}>
                {i + 1}
              </div>
            ))}
          </div>
          <textarea
            ref={textarea}
            aria-label="Workflow definition (JSON)"
            aria-invalid={!validation.ok}
            aria-describedby="definition-issues"
            spellCheck={false}
            autoCapitalize="off"
            autoComplete="off"
            wrap="off"
            value={text}
            onChange={(e) => setText(e.target.value)}
            onScroll={(e) => {
              if (gutter.current) gutter.current.scrollTop = e.currentTarget.scrollTop;
            }}
            onKeyDown={(e) => {
              // Tab indents (two spaces); Escape then Tab leaves the editor, as in code editors.
              if (e.key === 'Tab' && !e.shiftKey && !e.altKey && !e.ctrlKey && !e.metaKey && e.currentTarget.dataset.escaped !== '1') {
                e.preventDefault();
                const el = e.currentTarget;
                const { selectionStart: start, selectionEnd: end } = el;
                setText(text.slice(0, start) + '  ' + text.slice(end));
                requestAnimationFrame(() => el.setSelectionRange(start + 2, start + 2));
              }
              e.currentTarget.dataset.escaped = e.key === 'Escape' ? '1' : '0';
            }}
            className="min-w-0 flex-1 resize-none overflow-auto bg-white px-2 py-2 whitespace-pre text-zinc-900 outline-none focus-visible:ring-2 focus-visible:ring-sky-600 focus-visible:ring-inset"
          />
        </div>
        <div id="definition-issues" className="border-t border-zinc-200">
          {validation.issues.length === 0 && serverSide.length === 0 ? (
            <p className="flex px-4 py-2 text-xs text-emerald-700">
              No problems: this is what workflows.create will accept.
              <span className="ml-auto text-zinc-400">Tab indents; Esc then Tab leaves the editor.</span>
            </p>
          ) : (
            <ul aria-label="Problems" className="max-h-56 divide-y divide-zinc-100 overflow-auto text-xs">
              {[...serverSide.map((i) => ({ ...i, server: true })), ...validation.issues.map((i) => ({ ...i, server: false }))].map((issue, n) => (
                <li key={`${issue.path}:${issue.message}:${n}`} data-testid="definition-issue" className="flex gap-2 px-4 py-1.5">
                  <code className="shrink-0 font-mono font-semibold text-red-800">{issue.path}</code>
                  <span className="text-zinc-700">{issue.message}</span>
                  {issue.line !== undefined && (
                    <button type="button" onClick={() => goTo(issue)} className="ml-auto shrink-0 text-zinc-500 underline hover:text-zinc-900">
                      line {issue.line}
                      {issue.column !== undefined && `, column ${issue.column}`}
                    </button>
                  )}
                  {issue.server && <span className="ml-auto shrink-0 text-zinc-500">refused by the server; nothing was stored</span>}
                </li>
              ))}
            </ul>
          )}
        </div>
      </Panel>
      <Panel
        title="Preview"
        labelledBy="preview-heading"
        summary={<span className="text-xs text-zinc-500">{preview.steps.length} steps · {preview.transitions.length} transitions drawn</span>}
      >
        {preview.steps.length === 0 ? (
          <p className="px-4 py-10 text-center text-zinc-500">Nothing to draw yet: the definition has no steps with keys.</p>
        ) : (
          <WorkflowGraph label="Preview of the workflow's step graph" steps={preview.steps} transitions={preview.transitions} />
        )}
      </Panel>
    </div>
  );
}
