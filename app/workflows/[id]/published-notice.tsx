'use client';

import { useQuery } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { useTRPC } from '../../_trpc/client';
import { DiffView } from '../_components/diff-view';
import { executionsAtStep, forgetPublished, recallPublished, type PublishedNotice as Notice } from '../_components/versions';

// Once, right after a publish: which version was published, what it changed, and the
// executions standing at removed or changed steps of the version it replaced (each count
// a link to them on the executions list, where an operator may move them).

export function PublishedNotice({ id, version, mayRepair }: { id: string; version: number; mayRepair: boolean }) {
  const trpc = useTRPC();
  const [notice, setNotice] = useState<Notice | null>(null);
  useEffect(() => setNotice(recallPublished(id, version)), [id, version]);
  const old = useQuery({ ...trpc.workflows.get.queryOptions({ id, version: notice?.basedOn ?? 1 }), enabled: notice !== null });
  if (!notice) return null;
  const stepIds = new Map((old.data?.steps ?? []).map((s) => [s.key, s.id]));
  const atOld = [...notice.diff.removed, ...notice.diff.changed].reduce((n, s) => n + (s.activeByVersion?.[notice.basedOn] ?? 0), 0);
  const moving = notice.diff.removed.length + notice.diff.changed.length > 0;
  return (
    <section role="status" aria-label="Published" data-testid="published-notice" className="rounded-md border border-emerald-200 bg-emerald-50/60 px-4 py-3">
      <div className="flex items-start gap-3">
        <div className="min-w-0 space-y-0.5">
          <p className="font-semibold text-emerald-900">Version {notice.version} published.</p>
          <p className="text-xs text-emerald-900/80">
            Contacts enrolled from now on start on version {notice.version}. Executions already running stay on the version they started on.
            {moving &&
              (atOld > 0
                ? ` ${atOld.toLocaleString()} execution${atOld === 1 ? '' : 's'} of version ${notice.basedOn} stand at removed or changed steps: follow a count to list them${mayRepair ? ' (Move… opens the move to the new version)' : ', and an operator can move them'} if they should not finish on version ${notice.basedOn}.`
                : ` No execution of version ${notice.basedOn} stands at a removed or changed step.`)}
          </p>
        </div>
        <button
          type="button"
          onClick={() => {
            forgetPublished(id, version);
            setNotice(null);
          }}
          className="ml-auto shrink-0 rounded px-2 py-0.5 text-xs text-emerald-900 hover:bg-emerald-100"
        >
          Dismiss
        </button>
      </div>
      <div className="mt-2 rounded bg-white p-3 ring-1 ring-emerald-100">
        <DiffView
          diff={notice.diff}
          links={{
            version: notice.basedOn,
            at: (key) => (stepIds.get(key) ? executionsAtStep(id, stepIds.get(key)!) : null),
            move: mayRepair ? (key) => (stepIds.get(key) ? executionsAtStep(id, stepIds.get(key)!, true) : null) : undefined,
          }}
        />
      </div>
    </section>
  );
}
