'use client';

import { useMutation } from '@tanstack/react-query';
import { useCallback, useEffect, useRef, useState } from 'react';
import { draftDefinition } from '@/server/common/version-definition';
import { useTRPC } from '../../../_trpc/client';
import { asInput, formatPath, serverIssuesOf, type VersionDefinition } from '../../_components/versions';
import { sameDefinition } from './definition-model';
import { friendly } from './fields';

// The draft (one per workflow, never seen by an execution): saved by itself a moment
// after the last change, or with Save draft. A draft must be well formed (every step
// named, keys well spelled) but may break the graph rules; while it is not well formed it
// is not sent, and the status says what to fix.

export const AUTOSAVE_MS = 1_500;

export interface Saved {
  def: VersionDefinition;
  basedOn: number;
  /** When the server last stored it (null: no draft; the editor holds a published version). */
  at: Date | null;
  by: string | null;
}

export type DraftStatus =
  | { kind: 'saved' }
  | { kind: 'clean' }
  | { kind: 'dirty' }
  | { kind: 'saving' }
  | { kind: 'unsavable'; reason: string }
  | { kind: 'failed'; reason: string };

/** Why this definition cannot be stored as a draft, or null. */
export function unsavable(def: VersionDefinition): string | null {
  const parsed = draftDefinition.safeParse(def);
  if (parsed.success) return null;
  const issue = parsed.error.issues[0]!;
  const [, index, field] = issue.path;
  const step = typeof index === 'number' && issue.path[0] === 'steps' ? def.steps[index] : undefined;
  const where = step ? `step “${step.name || step.key}”, ${String(field ?? '')}` : formatPath(issue.path);
  return `${where}: ${friendly(issue.message)}`;
}

export function useDraft({ workflowId, def, basedOn, initial, you }: { workflowId: string; def: VersionDefinition; basedOn: number; initial: Saved; you: string }) {
  const trpc = useTRPC();
  const [saved, setSaved] = useState<Saved>(initial);
  const [failure, setFailure] = useState<string | null>(null);
  const save = useMutation(trpc.workflows.saveDraft.mutationOptions());
  const { mutateAsync, isPending } = save;
  const dirty = basedOn !== saved.basedOn || !sameDefinition(def, saved.def);
  const blocked = dirty ? unsavable(def) : null;
  const latest = useRef({ def, basedOn });
  latest.current = { def, basedOn };

  const saveNow = useCallback(async () => {
    const sent = latest.current;
    if (unsavable(sent.def)) return;
    setFailure(null);
    try {
      const { savedAt } = await mutateAsync({ workflowId, basedOnVersion: sent.basedOn, definition: asInput(sent.def) });
      setSaved({ def: sent.def, basedOn: sent.basedOn, at: new Date(savedAt), by: you });
    } catch (error) {
      const [first] = serverIssuesOf(error);
      setFailure(first ? (first.path ? `${formatPath(first.path)}: ${first.message}` : first.message) : 'the server refused it');
    }
  }, [mutateAsync, workflowId, you]);

  // Autosave: a moment after the last change, once any save in flight has answered.
  useEffect(() => {
    if (!dirty || blocked || isPending || failure) return;
    const timer = setTimeout(() => void saveNow(), AUTOSAVE_MS);
    return () => clearTimeout(timer);
  }, [def, basedOn, dirty, blocked, isPending, failure, saveNow]);

  // A failure is retried by the next change or by Save draft.
  useEffect(() => setFailure(null), [def]);

  // Leaving with unsaved changes asks first.
  useEffect(() => {
    if (!dirty) return;
    const warn = (e: BeforeUnloadEvent) => e.preventDefault();
    window.addEventListener('beforeunload', warn);
    return () => window.removeEventListener('beforeunload', warn);
  }, [dirty]);

  const status: DraftStatus = isPending
    ? { kind: 'saving' }
    : failure
      ? { kind: 'failed', reason: failure }
      : blocked
        ? { kind: 'unsavable', reason: blocked }
        : dirty
          ? { kind: 'dirty' }
          : saved.at
            ? { kind: 'saved' }
            : { kind: 'clean' };

  return { saved, setSaved, status, dirty, saveNow };
}
