'use client';

import { useQuery } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { LoadError } from '../_components/panel';
import { useTRPC } from '../_trpc/client';
import { defaultMapping, isProblem, prepareRows, readCsv, sizeProblem, type CsvFile, type CsvProblem, type Limits, type Mapping } from './csv-file';
import { ResultPanel } from './result-panel';
import { useEnrollRun } from './use-enroll-run';
import { primary, secondary, count, Stage } from './parts';
import { WorkflowPicker, FileDrop, ColumnMapping } from './inputs';
import { Preview } from './preview';
import { RUN_TITLES, Progress } from './progress';

export function EnrollView({ initialWorkflowId, limits, chunkRows }: { initialWorkflowId: string | null; limits: Limits; chunkRows: number }) {
  const trpc = useTRPC();
  const workflows = useQuery(trpc.workflows.list.queryOptions());
  const [workflowId, setWorkflowId] = useState<string | null>(initialWorkflowId);
  const [file, setFile] = useState<CsvFile | null>(null);
  const [problem, setProblem] = useState<(CsvProblem & { name: string }) | null>(null);
  const [reading, setReading] = useState(false);
  const [mapping, setMapping] = useState<Mapping>({ emailColumn: null, dataColumns: [] });
  const rows = useMemo(() => (file ? prepareRows(file, mapping) : []), [file, mapping]);
  const chosen = workflows.data?.find((w) => w.id === workflowId) ?? null;
  const enrollable = chosen?.enabled ? chosen.id : null;
  const run = useEnrollRun({ workflowId: enrollable, rows, chunkRows });
  const status = run.progress.status;
  const locked = status !== 'idle';
  const valid = rows.filter((r) => !r.invalid).length;

  const chooseWorkflow = (id: string) => {
    setWorkflowId(id);
    // The choice lives in the URL, so a link shared from here opens on the same workflow.
    window.history.replaceState(null, '', `/enroll?workflow=${id}`);
  };

  const readFile = async (picked: File) => {
    setFile(null);
    const early = sizeProblem(picked.size, limits);
    if (early) {
      setProblem({ ...early, name: picked.name });
      return;
    }
    setReading(true);
    try {
      const read = readCsv(picked.name, new Uint8Array(await picked.arrayBuffer()), limits);
      if (isProblem(read)) {
        setProblem({ ...read, name: picked.name });
      } else {
        setProblem(null);
        setMapping(defaultMapping(read.header));
        setFile(read);
      }
    } catch (error) {
      setProblem({ problem: 'unparseable', message: `The file could not be read: ${error instanceof Error ? error.message : String(error)}`, name: picked.name });
    } finally {
      setReading(false);
    }
  };

  const startOver = () => {
    setFile(null);
    setProblem(null);
    run.reset();
  };

  if (workflows.error) return <LoadError what="the workflows" message={workflows.error.message} />;
  if (!workflows.data) {
    return (
      <p role="status" className="py-8 text-center text-zinc-500">
        Loading workflows…
      </p>
    );
  }

  return (
    <div className="space-y-4">
      <Stage n={1} id="stage-workflow" title="Choose the workflow">
        <WorkflowPicker
          workflows={workflows.data}
          value={workflowId}
          onChange={chooseWorkflow}
          locked={locked}
          requestedMissing={initialWorkflowId !== null && workflowId === initialWorkflowId && !chosen}
        />
      </Stage>

      <Stage n={2} id="stage-file" title="Upload a CSV file" aside={reading ? <span role="status">Reading the file…</span> : null}>
        <FileDrop onFile={readFile} locked={locked} loaded={file} problem={problem} />
      </Stage>

      {file && (
        <Stage n={3} id="stage-columns" title="Map the columns">
          <ColumnMapping file={file} mapping={mapping} onChange={setMapping} locked={locked} />
        </Stage>
      )}

      {file && mapping.emailColumn !== null && (
        <Stage
          n={4}
          id="stage-run"
          title={RUN_TITLES[status]!}
          aside={locked && status !== 'running' && status !== 'stopping' ? (
            <button type="button" className={secondary} onClick={startOver}>
              Start another import
            </button>
          ) : null}
        >
          <div className="space-y-3">
            {!locked && <Preview file={file} rows={rows} mapping={mapping} />}
            {!locked && (
              <div className="flex flex-wrap items-center gap-3 border-t border-zinc-100 pt-3">
                <button type="button" className={primary} disabled={!enrollable || valid === 0} onClick={run.start}>
                  {chosen?.enabled ? `Enroll ${count(valid)} contacts into ${chosen.name}` : `Enroll ${count(valid)} contacts`}
                </button>
                <span className="text-xs text-zinc-500">
                  {!enrollable
                    ? 'Choose an enabled workflow first.'
                    : valid === 0
                      ? 'No row is valid: check the email column.'
                      : `Sent ${chunkRows} rows per call; you can stop between calls. ${rows.length - valid > 0 ? `${count(rows.length - valid)} invalid rows are reported, not sent.` : ''}`}
                </span>
              </div>
            )}
            {locked && (
              <Progress progress={run.progress} onStop={run.stop} onResume={run.resume} onAbandon={run.abandon} />
            )}
          </div>
        </Stage>
      )}

      {file && (status === 'done' || status === 'stopped' || status === 'failed') && (
        <ResultPanel outcomes={run.outcomes} revision={run.revision} fileName={file.name} workflowName={chosen?.name ?? 'the workflow'} status={status} />
      )}
    </div>
  );
}
