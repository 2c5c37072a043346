import pg from 'pg';
import { closeDb, createDb } from '../server/db';
import { enroll, enrollBatch } from '../server/engine/enrollment';
import { holdBackAll } from './workload';
import { progress, ratio, rawDb, round, type BenchContext } from './support';
import { newWorkflow, stepsWorkflow } from './workload';

// Enrollments/s through the engine's enroll() (one contact a call, new emails, so each
// call upserts a contact and inserts an execution) with 1 and 8 concurrent callers,
// against the same statements over plain pg with named prepared statements.

export interface EnrollFigure {
  callers: number;
  engine: number;
  raw: number;
  ratio: number | null;
}

async function callersFor(seconds: number, callers: number, call: (n: number) => Promise<unknown>): Promise<number> {
  let done = 0;
  let next = 0;
  const deadline = performance.now() + seconds * 1000;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (performance.now() < deadline) {
        await call(next++);
        done++;
      }
    }),
  );
  return done / ((performance.now() - t0) / 1000);
}

export async function enrollPhase(ctx: BenchContext, projectId: string): Promise<EnrollFigure[]> {
  const seconds = ctx.options.quick ? 3 : 10;
  const workflowId = await newWorkflow(ctx.db, projectId, stepsWorkflow('enroll'));
  const db = createDb(ctx.url, { poolSize: 8, applicationName: 'waypost-bench-enroll' });
  const pool = new pg.Pool({ connectionString: ctx.url, max: 8, application_name: 'waypost-bench-enroll-raw' });
  const raw = rawDb(pool);
  const figures: EnrollFigure[] = [];
  try {
    for (const callers of [1, 8]) {
      const engine = await callersFor(seconds, callers, async (n) => {
        const r = await enroll(db, { projectId, workflowId, email: `e${callers}-${n}@enroll.bench` });
        if (!r.ok) throw new Error(`enroll refused: ${r.reason}`);
      });
      const baseline = await callersFor(seconds, callers, async (n) => {
        const [r] = await enrollBatch(raw, projectId, workflowId, [{ email: `r${callers}-${n}@enroll.bench` }]);
        if (!r!.ok) throw new Error(`raw enroll refused: ${r!.reason}`);
      });
      const figure = { callers, engine: round(engine), raw: round(baseline), ratio: ratio(engine, baseline) };
      progress('enroll', `${callers} caller(s): engine ${figure.engine}/s, raw ${figure.raw}/s (x${figure.ratio})`);
      figures.push(figure);
    }
  } finally {
    await closeDb(db);
    await pool.end();
  }
  // These executions are not the step phases' to run.
  await holdBackAll(ctx.db);
  return figures;
}
