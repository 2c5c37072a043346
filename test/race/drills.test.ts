import { describe, expect, it } from 'vitest';
import { enroll } from '../../server/engine/enrollment';
import { checkInvariants } from '../../server/engine/invariants';
import { notifyWorkers } from '../../server/engine/wakeup';
import { freshDatabase } from '../support/database';
import { createProject, twoEmailWorkflow, workflowFrom } from '../support/fixtures';
import { startWorkerProcess, waitFor, type WorkerProcess } from '../support/processes';

// A fault drill: the database drops every worker connection, again and again, while the
// workers drain (as a PostgreSQL restart or failover does to its clients). Workers must
// ride it out — no crash, nothing lost, nothing done twice.

describe('fault drill: connections dropped under load', () => {
  it('workers survive their connections being terminated mid-drain: all finish, one message per step', async () => {
    const t = await freshDatabase();
    const workers: WorkerProcess[] = [];
    try {
      const project = await createProject(t.db);
      const wf = await workflowFrom(t.db, project.id, twoEmailWorkflow({ name: 'drill', allowReentry: true }));
      for (let i = 0; i < 2; i++) workers.push(await startWorkerProcess(t.url, { concurrency: 8, env: { LEASE_SECONDS: '2' } }));
      const ids: string[] = [];
      for (let i = 0; i < 400; i++) {
        const r = await enroll(t.db, { projectId: project.id, workflowId: wf.id, email: `drill-${i}@example.com` });
        ids.push((r as { executionId: string }).executionId);
      }
      await notifyWorkers(t.db);
      let terminated = 0;
      for (let round = 0; round < 8; round++) {
        await new Promise((r) => setTimeout(r, 250));
        const rows = await t.query(
          `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
            WHERE datname = current_database() AND application_name LIKE 'waypost-worker%'`,
        );
        terminated += rows.filter((r) => r.ok).length;
      }
      expect(terminated).toBeGreaterThan(0);
      await waitFor(
        'every execution to finish after the drops',
        async () => (await t.db.workflowExecution.count({ where: { status: 'COMPLETED' } })) === ids.length,
        90_000,
      );
      const [mismatch] = await t.query(`
        SELECT count(*)::int AS n FROM (
          SELECT se.id FROM "StepExecution" se JOIN "WorkflowStep" ws ON ws.id = se."stepId" AND ws.type = 'SEND_EMAIL'
            LEFT JOIN "Message" m ON m."stepExecutionId" = se.id GROUP BY se.id HAVING count(m.id) <> 1) v`);
      expect(mismatch.n).toBe(0);
      expect(await t.db.message.count()).toBe(ids.length * 2);
      const bad = (await checkInvariants(t.db)).filter((x) => x.violations > 0);
      expect(bad).toEqual([]);
      // Still alive: nobody crashed on a dropped connection.
      for (const w of workers) expect(w.child.exitCode).toBeNull();
    } finally {
      for (const w of workers) w.kill('SIGTERM');
      const codes = await Promise.all(workers.map((w) => w.exited));
      await t.drop();
      // A worker that did not exit 0 says why: its last lines are in the failure.
      const unclean = workers.flatMap((w, i) => (codes[i] === 0 ? [] : [`worker ${w.pid} exited ${codes[i]}:\n${w.output().slice(-4000)}`]));
      expect(unclean).toEqual([]);
    }
  }, 180_000);
});
