'use client';

import { TRPCClientError } from '@trpc/client';
import { useCallback, useEffect, useRef, useState } from 'react';
import { useTRPCClient } from '../_trpc/client';
import { outcomeKind, type Outcome, type PreparedRow } from './csv-file';

// Running an import: the file's rows go to enrollments.enrollMany a chunk at a time, so
// the bar moves as rows are committed and Stop can take effect between two chunks. Each
// chunk is its own call (and its own audited transactions on the server): what a call
// answered is done, whatever happens to the calls after it.

export type RunStatus = 'idle' | 'running' | 'stopping' | 'stopped' | 'failed' | 'done';

export interface RunProgress {
  status: RunStatus;
  /** File rows settled so far (answered by the server, or invalid and never sent). */
  processed: number;
  total: number;
  enrolled: number;
  /** Rows the server refused (already active, re-entry blocked, ...). */
  refused: number;
  /** Invalid rows settled so far (never sent). */
  invalid: number;
  /** Rows per second over the current run (since Start, Continue or Retry). */
  rate: number | null;
  /** The failed chunk: its rows were not confirmed processed. */
  failure: { fromRow: number; toRow: number; message: string } | null;
}

function messageOf(error: unknown): string {
  if (error instanceof TRPCClientError) {
    const data = error.data as { code?: string; httpStatus?: number } | undefined;
    if (!data?.code) return `the server could not be reached (${error.message})`;
    return `${error.message} (${data.code})`;
  }
  return error instanceof Error ? error.message : String(error);
}

function pending(row: PreparedRow): Outcome {
  return row.invalid
    ? { row: row.row, email: row.email, kind: 'INVALID', message: row.invalid, executionId: null }
    : { row: row.row, email: row.email, kind: 'NOT_SENT', message: 'not sent: the import stopped before this row', executionId: null };
}

export function useEnrollRun({ workflowId, rows, chunkRows }: { workflowId: string | null; rows: PreparedRow[]; chunkRows: number }) {
  const client = useTRPCClient();
  const outcomes = useRef<Outcome[]>([]);
  const stopRequested = useRef(false);
  /** The workflow the run started with: a list refresh meanwhile (it was disabled, say) changes nothing mid-run. */
  const runWorkflowId = useRef<string | null>(null);
  const [progress, setProgress] = useState<RunProgress>({
    status: 'idle',
    processed: 0,
    total: rows.length,
    enrolled: 0,
    refused: 0,
    invalid: 0,
    rate: null,
    failure: null,
  });
  /** Bumped whenever outcomes change, for views that read them. */
  const [revision, setRevision] = useState(0);

  const reset = useCallback(() => {
    outcomes.current = rows.map(pending);
    stopRequested.current = false;
    setProgress({ status: 'idle', processed: 0, total: rows.length, enrolled: 0, refused: 0, invalid: 0, rate: null, failure: null });
    setRevision((r) => r + 1);
  }, [rows]);

  // A new file or mapping starts from scratch (neither can change once a run has begun).
  useEffect(reset, [reset]);

  const running = progress.status === 'running' || progress.status === 'stopping';
  // Leaving the page mid-import would drop the rows not sent yet without a word: ask first.
  useEffect(() => {
    if (!running) return;
    const warn = (event: BeforeUnloadEvent) => event.preventDefault();
    window.addEventListener('beforeunload', warn);
    return () => window.removeEventListener('beforeunload', warn);
  }, [running]);

  const runFrom = useCallback(
    async (start: number) => {
      const workflow = runWorkflowId.current;
      if (!workflow) return;
      stopRequested.current = false;
      const startedAt = performance.now();
      const tally = () => {
        let enrolled = 0;
        let refused = 0;
        let invalid = 0;
        for (let i = 0; i < processed; i++) {
          const kind = outcomes.current[i]!.kind;
          if (kind === 'ENROLLED') enrolled++;
          else if (kind === 'INVALID') invalid++;
          else refused++;
        }
        return { enrolled, refused, invalid };
      };
      let processed = start;
      const rateNow = () => {
        const seconds = (performance.now() - startedAt) / 1000;
        return seconds > 0.2 && processed > start ? (processed - start) / seconds : null;
      };
      setProgress((p) => ({ ...p, status: 'running', failure: null, rate: null }));
      for (let i = start; i < rows.length; i += chunkRows) {
        if (stopRequested.current) {
          setProgress((p) => ({ ...p, status: 'stopped', rate: rateNow() }));
          return;
        }
        const chunk = rows.slice(i, i + chunkRows);
        const toSend = chunk.filter((r) => !r.invalid);
        if (toSend.length > 0) {
          try {
            const answer = await client.enrollments.enrollMany.mutate({
              workflowId: workflow,
              contacts: toSend.map((r) => ({ email: r.email!, data: r.data })),
            });
            for (const result of answer.results) {
              const sent = toSend[result.row - 1]!;
              outcomes.current[sent.row - 1] = result.executionId
                ? { row: sent.row, email: sent.email, kind: 'ENROLLED', message: '', executionId: result.executionId }
                : {
                    row: sent.row,
                    email: sent.email,
                    kind: outcomeKind(result.error?.reason ?? 'FAILED'),
                    message: result.error?.message ?? 'no answer for this row',
                    executionId: result.error?.executionId ?? null,
                  };
            }
          } catch (error) {
            const last = chunk[chunk.length - 1]!.row;
            for (const sent of toSend) {
              outcomes.current[sent.row - 1] = { ...pending(sent), message: `not confirmed: the call for rows ${chunk[0]!.row}–${last} failed (${messageOf(error)})` };
            }
            setProgress((p) => ({ ...p, status: 'failed', rate: rateNow(), failure: { fromRow: chunk[0]!.row, toRow: last, message: messageOf(error) } }));
            setRevision((r) => r + 1);
            return;
          }
        }
        processed = i + chunk.length;
        const counts = tally();
        setProgress((p) => ({ ...p, ...counts, processed, rate: rateNow() }));
        setRevision((r) => r + 1);
      }
      setProgress((p) => ({ ...p, status: 'done', rate: rateNow() }));
    },
    [client, rows, chunkRows],
  );

  const start = useCallback(() => {
    runWorkflowId.current = workflowId;
    void runFrom(0);
  }, [runFrom, workflowId]);
  /** Continue after a stop, or retry the failed chunk and go on. */
  const resume = useCallback(() => void runFrom(progress.processed), [runFrom, progress.processed]);
  const stop = useCallback(() => {
    stopRequested.current = true;
    setProgress((p) => (p.status === 'running' ? { ...p, status: 'stopping' } : p));
  }, []);
  /** Give up on a failed import: what was done stays, the rest is reported as not sent. */
  const abandon = useCallback(() => setProgress((p) => (p.status === 'failed' ? { ...p, status: 'stopped' } : p)), []);

  return { progress, outcomes: outcomes.current, revision, start, resume, stop, abandon, reset };
}
