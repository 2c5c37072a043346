'use client';

import { formatDuration } from '../_components/time';
import { type RunProgress } from './use-enroll-run';
import { primary, secondary, count } from './parts';

// A run's progress: rows done of total, rate and time left, with Stop, Resume and Abandon.

export const RUN_TITLES: Record<string, string> = {
  idle: 'Check the rows, then enroll',
  running: 'Enrolling…',
  stopping: 'Enrolling… (stopping)',
  stopped: 'Stopped',
  failed: 'Interrupted',
  done: 'Enrolled',
};

export function Progress({ progress, onStop, onResume, onAbandon }: { progress: RunProgress; onStop: () => void; onResume: () => void; onAbandon: () => void }) {
  const { status, processed, total, rate } = progress;
  const percent = total ? Math.floor((100 * processed) / total) : 0;
  const remaining = total - processed;
  const eta = rate && remaining > 0 ? formatDuration((remaining / rate) * 1000) : null;
  const active = status === 'running' || status === 'stopping';
  return (
    <div className="space-y-2" data-testid="enroll-progress">
      <div className="flex items-center gap-3">
        <div
          role="progressbar"
          aria-label="Import progress"
          aria-valuemin={0}
          aria-valuemax={100}
          aria-valuenow={percent}
          aria-valuetext={`${count(processed)} of ${count(total)} rows`}
          className="h-2.5 w-full max-w-2xl overflow-hidden rounded-full bg-zinc-100 ring-1 ring-zinc-200 ring-inset"
        >
          <div
            className={`h-full rounded-full transition-[width] duration-200 ${status === 'failed' || status === 'stopped' ? 'bg-amber-500' : status === 'done' ? 'bg-emerald-600' : 'bg-sky-600'}`}
            style={{ width: `${(100 * processed) / Math.max(total, 1)}%` }}
          />
        </div>
        <span className="text-xs whitespace-nowrap text-zinc-600 tabular-nums">
          {count(processed)} of {count(total)} rows · {percent}%
        </span>
        {active && (
          <button type="button" className={secondary} onClick={onStop} disabled={status === 'stopping'}>
            {status === 'stopping' ? 'Stopping after this chunk…' : 'Stop'}
          </button>
        )}
      </div>
      <p className="flex flex-wrap gap-x-4 text-xs text-zinc-600 tabular-nums" aria-live="polite">
        <span>
          enrolled <strong className="text-emerald-800">{count(progress.enrolled)}</strong>
        </span>
        <span>
          refused <strong className={progress.refused ? 'text-amber-800' : ''}>{count(progress.refused)}</strong>
        </span>
        <span>
          invalid <strong className={progress.invalid ? 'text-red-800' : ''}>{count(progress.invalid)}</strong>
        </span>
        {rate !== null && <span>{count(Math.round(rate))} rows/s</span>}
        {active && eta && <span>about {eta} left</span>}
      </p>
      <div data-testid="enroll-status" aria-live="polite">
        {status === 'stopped' && (
          <p className="rounded border border-amber-200 bg-amber-50 px-3 py-2 text-amber-900">
            <strong>
              Stopped after {count(processed)} of {count(total)} rows: {count(processed)} processed, the remaining {count(remaining)} not sent.
            </strong>{' '}
            What was done stays done (enrolled contacts are in the workflow); the rows not sent are in the result as “not sent”.
            {remaining > 0 && (
              <button type="button" className={`${secondary} ml-3`} onClick={onResume}>
                Continue with the remaining {count(remaining)}
              </button>
            )}
          </p>
        )}
        {status === 'failed' && progress.failure && (
          <div role="alert" className="rounded border border-red-200 bg-red-50 px-3 py-2 text-red-800">
            <p>
              <strong>
                Rows {count(progress.failure.fromRow)}–{count(progress.failure.toRow)} were not processed: {progress.failure.message}.
              </strong>{' '}
              The {count(processed)} rows before them are done; {count(remaining)} rows are not processed. If the call did reach the server, a retry reports
              those contacts as already active.
            </p>
            <p className="mt-1.5 flex gap-2">
              <button type="button" className={primary} onClick={onResume}>
                Retry from row {count(progress.failure.fromRow)}
              </button>
              <button type="button" className={secondary} onClick={onAbandon}>
                Stop here
              </button>
            </p>
          </div>
        )}
        {status === 'done' && (
          <p className="text-emerald-800">
            <strong>Finished: all {count(total)} rows processed.</strong>
          </p>
        )}
      </div>
    </div>
  );
}

