'use client';

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Link from 'next/link';
import { useState } from 'react';
import { INPUT_CLASS } from '../../_components/filters';
import { JsonObjectField, issuesUnder, parseJsonObject } from '../../_components/json-object-field';
import { useTRPC } from '../../_trpc/client';

// Enroll this contact into a workflow (enrollments.enroll, the one enrollment path of the
// engine). A refusal is shown in words with its typed reason — already active, re-entry
// blocked, workflow disabled — and a link to the execution that blocks it; a success puts
// the new execution on the journey at once.

const button = 'inline-flex h-7 items-center rounded border px-2.5 text-xs font-medium shadow-xs disabled:cursor-not-allowed disabled:opacity-50';

interface Refusal {
  reason: string;
  executionId?: string;
}

function RefusalMessage({ refusal, email, workflowName }: { refusal: Refusal; email: string; workflowName: string }) {
  const execution = refusal.executionId && (
    <>
      {' '}
      <Link href={`/executions/${refusal.executionId}`} className="font-medium underline">
        Open execution {refusal.executionId.slice(0, 8)}
      </Link>
    </>
  );
  switch (refusal.reason) {
    case 'ACTIVE_EXECUTION':
      return (
        <>
          <strong>Already active.</strong> {email} is in “{workflowName}” right now; a contact goes through a workflow once at a time.{execution}
        </>
      );
    case 'REENTRY_BLOCKED':
      return (
        <>
          <strong>Re-entry blocked.</strong> {email} has been through “{workflowName}” before, and the workflow does not allow re-entry.{execution}
        </>
      );
    case 'WORKFLOW_DISABLED':
      return (
        <>
          <strong>Workflow disabled.</strong> “{workflowName}” is switched off; enable it on the Workflows page to enroll contacts.
        </>
      );
    default:
      return (
        <>
          <strong>Refused</strong> ({refusal.reason}).
        </>
      );
  }
}

export function EnrollForm({ contactId, email }: { contactId: string; email: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const workflows = useQuery(trpc.workflows.list.queryOptions());
  const [workflowId, setWorkflowId] = useState('');
  const [contextText, setContextText] = useState('');
  const parsed = parseJsonObject(contextText, { emptyIsObject: true, field: 'context' });
  const [outcome, setOutcome] = useState<{ workflowName: string; executionId?: string; refusal?: Refusal } | null>(null);
  const enroll = useMutation(trpc.enrollments.enroll.mutationOptions());
  const chosen = workflows.data?.find((w) => w.id === workflowId);
  const issues = enroll.error?.data?.zodError?.issues;

  return (
    <form
      aria-label="Enroll into a workflow"
      className="space-y-2 px-4 py-3"
      onSubmit={(e) => {
        e.preventDefault();
        if (!chosen || !parsed.ok) return;
        setOutcome(null);
        const context = Object.keys(parsed.value).length ? parsed.value : undefined;
        enroll.mutate(
          { workflowId: chosen.id, contactId, context },
          {
            onSuccess: (r) => setOutcome({ workflowName: chosen.name, executionId: r.executionId }),
            onError: (error) => {
              const conflict = error.data?.conflict as Refusal | null | undefined;
              if (conflict?.reason) setOutcome({ workflowName: chosen.name, refusal: conflict });
            },
            // The journey shows the new execution (or the one that blocked) at once.
            onSettled: () => void queryClient.invalidateQueries({ queryKey: trpc.contacts.get.queryKey({ id: contactId }) }),
          },
        );
      }}
    >
      <div className="flex flex-col gap-0.5">
        <label htmlFor="enroll-workflow" className="text-[10.5px] font-medium tracking-wide text-zinc-500 uppercase">
          Workflow
        </label>
        <select
          id="enroll-workflow"
          value={workflowId}
          onChange={(e) => {
            setWorkflowId(e.target.value);
            setOutcome(null);
            enroll.reset();
          }}
          className={`${INPUT_CLASS} w-full`}
          disabled={!workflows.data}
        >
          <option value="">{workflows.isPending ? 'Loading workflows…' : 'Choose a workflow…'}</option>
          {workflows.data?.map((w) => (
            <option key={w.id} value={w.id}>
              {w.name}
              {w.enabled ? '' : ' (disabled)'}
              {w.trigger === 'EVENT' && w.triggerEvent ? ` · also on ${w.triggerEvent}` : ''}
              {w.allowReentry ? '' : ' · once per contact'}
            </option>
          ))}
        </select>
        {workflows.error && (
          <p role="alert" className="text-xs text-red-700">
            Could not load the workflows: {workflows.error.message}
          </p>
        )}
      </div>
      <JsonObjectField
        label="Context (JSON object, optional)"
        value={contextText}
        onChange={(t) => {
          setContextText(t);
          enroll.reset();
        }}
        parse={parsed}
        serverIssues={issuesUnder('context', issues)}
        rows={3}
        hint={
          <>
            Steps read it as <code className="font-mono">context.&lt;key&gt;</code>; leave empty for none.
          </>
        }
      />
      <div className="flex items-center gap-2">
        <button type="submit" disabled={!chosen || !parsed.ok || enroll.isPending} className={`${button} border-sky-700 bg-sky-600 text-white hover:bg-sky-700`}>
          {enroll.isPending ? 'Enrolling…' : 'Enroll'}
        </button>
      </div>
      {outcome?.executionId && (
        <p role="status" data-testid="enroll-result" className="rounded border border-emerald-200 bg-emerald-50 px-2.5 py-1.5 text-xs text-emerald-900">
          <strong>Enrolled</strong> into “{outcome.workflowName}”.{' '}
          <Link href={`/executions/${outcome.executionId}`} className="font-medium underline">
            Open execution {outcome.executionId.slice(0, 8)}
          </Link>
        </p>
      )}
      {outcome?.refusal && (
        <p role="alert" data-testid="enroll-refusal" data-reason={outcome.refusal.reason} className="rounded border border-amber-300 bg-amber-50 px-2.5 py-1.5 text-xs text-amber-900">
          <RefusalMessage refusal={outcome.refusal} email={email} workflowName={outcome.workflowName} />
        </p>
      )}
      {enroll.error && !outcome?.refusal && !issues?.length && (
        <p role="alert" className="text-xs text-red-700">
          Could not enroll: {enroll.error.message}
        </p>
      )}
    </form>
  );
}
