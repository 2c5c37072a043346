import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { advanceExecution, claimReadySteps, type StepClaim } from '../../server/engine/claims';
import { enrollBatch } from '../../server/engine/enrollment';
import { prepared, rawDb, recordStatement } from '../../bench/support';
import { stepsWorkflow } from '../../bench/workload';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createContact, createProject, workflowFrom } from '../support/fixtures';

// The bench's raw baseline sends the engine's own statements over plain pg. These check
// that what it records is the statement the claim sends (so the baseline does the same
// work), and that it runs as a named prepared statement with the same effect.

let t: TestDatabase;
let pool: pg.Pool;

beforeAll(async () => {
  t = await freshDatabase();
  pool = new pg.Pool({ connectionString: t.url, max: 2 });
});

afterAll(async () => {
  await pool.end();
  await t.drop();
});

describe('the raw baseline', () => {
  it('records a claim exactly as Prisma would send it, and runs it prepared with the same effect', async () => {
    const project = await createProject(t.db);
    const { id: workflowId } = await workflowFrom(t.db, project.id, stepsWorkflow('raw-baseline'));
    const contact = await createContact(t.db, project.id, 'raw@example.com');
    const [enrolled] = await enrollBatch(t.db, project.id, workflowId, [{ contactId: contact.id }]);
    expect(enrolled!.ok).toBe(true);

    const s = recordStatement((db) => claimReadySteps(db, { limit: 4, leaseSeconds: 30, owner: 'raw-test', maxAttempts: 3 }));
    expect(s.text).toContain('FOR UPDATE SKIP LOCKED');
    expect(s.values).toContain('raw-test');

    const [claim] = (await pool.query<StepClaim>(prepared(s))).rows;
    expect(claim).toMatchObject({ contactId: contact.id, attempt: 1 });
    // A second run of the same prepared statement finds nothing more: the claim took the row.
    expect((await pool.query(prepared(s))).rows).toHaveLength(0);

    const advance = recordStatement((db) =>
      advanceExecution(db, claim!, { nextStepId: claim!.stepId, status: 'COMPLETED', output: {} }),
    );
    const [advanced] = (await pool.query<{ version: number }>(prepared(advance))).rows;
    expect(advanced!.version).toBe(claim!.version + 1);
    const [row] = await t.query(`SELECT status::text AS status, version FROM "WorkflowExecution" WHERE id = $1`, [claim!.executionId]);
    expect(row).toEqual({ status: 'COMPLETED', version: claim!.version + 1 });
  });

  it('runs the engine enrollment over plain pg with the result Prisma gives', async () => {
    const project = await createProject(t.db);
    const { id: workflowId } = await workflowFrom(t.db, project.id, stepsWorkflow('raw-enroll'));
    const [first] = await enrollBatch(rawDb(pool), project.id, workflowId, [{ email: 'pg@example.com' }]);
    expect(first).toMatchObject({ ok: true, created: true });
    const [again] = await enrollBatch(t.db, project.id, workflowId, [{ email: 'PG@example.com' }]);
    expect(again).toMatchObject({ ok: false, reason: 'ACTIVE_EXECUTION', executionId: (first as { executionId: string }).executionId });
  });
});
