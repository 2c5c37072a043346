import { afterEach, describe, expect, it } from 'vitest';
import { cpSync, mkdtempSync, writeFileSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DEFAULT_MIGRATIONS_DIR, migrate, markRolledBack, readMigrations, invalidIndexes, SUPERSEDED_CHECKSUMS } from '../server/migrator';
import { emptyDatabase, type TestDatabase } from './support/database';
import pg from 'pg';

const BEFORE_I2_CHECK = '20261201000000_init';
const BEFORE_I1_CHECK = '20261201000200_step_execution_unique';
const I1_CHECK = '20261201000300_check_active_execution_duplicates';
const I2_CHECK = '20261201000100_check_step_execution_duplicates';
const VERSIONS = '20261207000000_workflow_versions';
/** The migration applied just before the workflow versions one. */
function beforeVersions(): string {
  const names = readMigrations().map((m) => m.name);
  const at = names.indexOf(VERSIONS);
  if (at < 1) throw new Error(`${VERSIONS} is not a migration after the first`);
  return names[at - 1]!;
}

const opened: TestDatabase[] = [];
async function blank() {
  const t = await emptyDatabase();
  opened.push(t);
  return t;
}
afterEach(async () => {
  while (opened.length) await opened.pop()!.drop();
});

/** Whether the database is past the workflow versions migration (its steps and executions name a version). */
async function hasVersions(t: TestDatabase): Promise<boolean> {
  const [row] = await t.query(`SELECT to_regclass('"WorkflowVersion"') IS NOT NULL AS present`);
  return row.present as boolean;
}

/**
 * A project, a contact, a workflow with one WAIT_FOR_EVENT step: the rows executions need.
 * On a database past the versions migration the step belongs to the workflow's version 1.
 */
async function seedWorkflow(t: TestDatabase) {
  const [project] = await t.query(`INSERT INTO "Project"(name) VALUES ('p') RETURNING id`);
  const [contact] = await t.query(
    `INSERT INTO "Contact"("projectId", email) VALUES ($1, 'a@example.com') RETURNING id`,
    [project.id],
  );
  const [workflow] = await t.query(
    `INSERT INTO "Workflow"("projectId", name, trigger) VALUES ($1, 'w', 'MANUAL') RETURNING id`,
    [project.id],
  );
  let versionId: string | null = null;
  if (await hasVersions(t)) {
    const [version] = await t.query(
      `INSERT INTO "WorkflowVersion"("workflowId", number, "publishedBy") VALUES ($1, 1, 'test') RETURNING id`,
      [workflow.id],
    );
    versionId = version.id;
  }
  const [step] = versionId
    ? await t.query(
        `INSERT INTO "WorkflowStep"("workflowId", "versionId", key, type, name, config)
         VALUES ($1, $2, 'wait', 'WAIT_FOR_EVENT', 'Wait', '{"eventName":"purchase","timeoutSeconds":60}') RETURNING id`,
        [workflow.id, versionId],
      )
    : await t.query(
        `INSERT INTO "WorkflowStep"("workflowId", key, type, name, config)
         VALUES ($1, 'wait', 'WAIT_FOR_EVENT', 'Wait', '{"eventName":"purchase","timeoutSeconds":60}') RETURNING id`,
        [workflow.id],
      );
  return { projectId: project.id, contactId: contact.id, workflowId: workflow.id, stepId: step.id, versionId };
}

async function insertExecution(
  t: TestDatabase,
  ids: { projectId: string; workflowId: string; contactId: string; stepId: string | null; versionId: string | null },
  status: string,
) {
  const [row] = ids.versionId
    ? await t.query(
        `INSERT INTO "WorkflowExecution"("projectId", "workflowId", "workflowVersionId", "contactId", status, "currentStepId")
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
        [ids.projectId, ids.workflowId, ids.versionId, ids.contactId, status, ids.stepId],
      )
    : await t.query(
        `INSERT INTO "WorkflowExecution"("projectId", "workflowId", "contactId", status, "currentStepId")
         VALUES ($1, $2, $3, $4, $5) RETURNING id`,
        [ids.projectId, ids.workflowId, ids.contactId, status, ids.stepId],
      );
  return row.id as string;
}

async function indexValidity(t: TestDatabase, name: string) {
  const rows = await t.query(
    `SELECT i.indisvalid, i.indisunique, pg_get_indexdef(i.indexrelid) AS def
       FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = $1`,
    [name],
  );
  return rows[0] as { indisvalid: boolean; indisunique: boolean; def: string } | undefined;
}

describe('migrations', () => {
  it('apply on an empty database, then again as a no-op', async () => {
    const t = await blank();
    const all = readMigrations().map((m) => m.name);
    const first = await migrate(t.url);
    expect(first.applied).toEqual(all);
    const second = await migrate(t.url);
    expect(second.applied).toEqual([]);
    expect(second.skipped).toEqual(all);
    const rows = await t.query(
      `SELECT migration_name, checksum, finished_at, applied_steps_count, rolled_back_at FROM "_prisma_migrations" ORDER BY migration_name`,
    );
    expect(rows.map((r) => r.migration_name)).toEqual(all);
    for (const [i, row] of rows.entries()) {
      // Exactly what `prisma migrate deploy` records: sha256 hex of the file, one step, finished.
      expect(row.checksum).toBe(readMigrations()[i]!.checksum);
      expect(row.checksum).toMatch(/^[0-9a-f]{64}$/);
      expect(row.finished_at).not.toBeNull();
      expect(row.applied_steps_count).toBe(1);
      expect(row.rolled_back_at).toBeNull();
    }
  });

  it('the I1 and I2 unique indexes exist and are valid', async () => {
    const t = await blank();
    await migrate(t.url);
    const i1 = await indexValidity(t, 'WorkflowExecution_active_workflowId_contactId_key');
    expect(i1).toMatchObject({ indisvalid: true, indisunique: true });
    expect(i1!.def).toMatch(/WHERE \(status = ANY \(ARRAY\['RUNNING'::"ExecutionStatus", 'WAITING'::"ExecutionStatus"\]\)\)/);
    const i2 = await indexValidity(t, 'StepExecution_executionId_stepId_key');
    expect(i2).toMatchObject({ indisvalid: true, indisunique: true });
    expect(await indexValidity(t, 'WorkflowExecution_workflowId_sourceEventId_key')).toMatchObject({ indisunique: true }); // I3
    expect(await indexValidity(t, 'Message_stepExecutionId_key')).toMatchObject({ indisunique: true }); // I5
  });

  it('I1: a second active execution for the same workflow and contact is a unique violation; a COMPLETED one beside it is allowed', async () => {
    const t = await blank();
    await migrate(t.url);
    const ids = await seedWorkflow(t);
    await insertExecution(t, ids, 'WAITING');
    await expect(insertExecution(t, ids, 'RUNNING')).rejects.toMatchObject({
      code: '23505',
      constraint: 'WorkflowExecution_active_workflowId_contactId_key',
    });
    await expect(insertExecution(t, ids, 'COMPLETED')).resolves.toBeTypeOf('string');
    await expect(insertExecution(t, ids, 'CANCELLED')).resolves.toBeTypeOf('string');
  });

  it('I2: a second step-execution row for the same execution and step is a unique violation', async () => {
    const t = await blank();
    await migrate(t.url);
    const ids = await seedWorkflow(t);
    const executionId = await insertExecution(t, ids, 'WAITING');
    const insert = () =>
      t.query(`INSERT INTO "StepExecution"("executionId", "stepId", status) VALUES ($1, $2, 'WAITING')`, [
        executionId,
        ids.stepId,
      ]);
    await insert();
    await expect(insert()).rejects.toMatchObject({ code: '23505', constraint: 'StepExecution_executionId_stepId_key' });
  });

  it('the I1 check refuses duplicates, names them, and leaves every row in place', async () => {
    const t = await blank();
    await migrate(t.url, { until: BEFORE_I1_CHECK });
    const ids = await seedWorkflow(t);
    const a = await insertExecution(t, ids, 'RUNNING');
    const b = await insertExecution(t, ids, 'WAITING');
    const error = await migrate(t.url).catch((e: Error) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toContain(I1_CHECK);
    expect((error as Error).message).toContain(a);
    expect((error as Error).message).toContain(b);
    expect((error as Error).message).toContain(ids.workflowId);
    const rows = await t.query(`SELECT id FROM "WorkflowExecution" ORDER BY id`);
    expect(rows.map((r) => r.id).sort()).toEqual([a, b].sort());
    expect(await indexValidity(t, 'WorkflowExecution_active_workflowId_contactId_key')).toBeUndefined();

    // The failed migration blocks later runs with a clear message until resolved.
    const blocked = await migrate(t.url).catch((e: Error) => e);
    expect((blocked as Error).message).toMatch(new RegExp(`${I1_CHECK} failed earlier and blocks`));
    expect((blocked as Error).message).toContain('--rolled-back');

    // Fix the data the way an operator would (cancel one), resolve, migrate: both rows stay.
    await t.query(`UPDATE "WorkflowExecution" SET status = 'CANCELLED' WHERE id = $1`, [b]);
    await markRolledBack(t.url, I1_CHECK);
    const done = await migrate(t.url);
    expect(done.applied).toContain(I1_CHECK);
    expect((await t.query(`SELECT count(*)::int AS n FROM "WorkflowExecution"`))[0].n).toBe(2);
    expect(await indexValidity(t, 'WorkflowExecution_active_workflowId_contactId_key')).toMatchObject({ indisvalid: true });
  });

  it('the I2 check refuses duplicate step rows, names them, and leaves every row in place', async () => {
    const t = await blank();
    await migrate(t.url, { until: BEFORE_I2_CHECK });
    const ids = await seedWorkflow(t);
    const executionId = await insertExecution(t, ids, 'WAITING');
    const [s1] = await t.query(
      `INSERT INTO "StepExecution"("executionId", "stepId", status) VALUES ($1, $2, 'WAITING') RETURNING id`,
      [executionId, ids.stepId],
    );
    const [s2] = await t.query(
      `INSERT INTO "StepExecution"("executionId", "stepId", status) VALUES ($1, $2, 'COMPLETED') RETURNING id`,
      [executionId, ids.stepId],
    );
    const error = (await migrate(t.url).catch((e: Error) => e)) as Error;
    expect(error.message).toContain(I2_CHECK);
    expect(error.message).toContain(s1.id);
    expect(error.message).toContain(s2.id);
    expect((await t.query(`SELECT count(*)::int AS n FROM "StepExecution"`))[0].n).toBe(2);
  });

  it('an upgrade from before the I1 index keeps a WAITING execution and its step and ends with valid indexes', async () => {
    const t = await blank();
    await migrate(t.url, { until: BEFORE_I1_CHECK });
    const ids = await seedWorkflow(t);
    const executionId = await insertExecution(t, ids, 'WAITING');
    const [step] = await t.query(
      `INSERT INTO "StepExecution"("executionId", "stepId", status, "dueAt")
       VALUES ($1, $2, 'WAITING', now() + interval '1 hour') RETURNING id`,
      [executionId, ids.stepId],
    );
    const result = await migrate(t.url);
    // The I1 check and index come next; later migrations follow them.
    expect(result.applied.slice(0, 2)).toEqual([I1_CHECK, '20261201000400_active_execution_unique']);
    const [execution] = await t.query(`SELECT status, "currentStepId" FROM "WorkflowExecution" WHERE id = $1`, [executionId]);
    expect(execution).toEqual({ status: 'WAITING', currentStepId: ids.stepId });
    const [stepRow] = await t.query(`SELECT status, "executionId" FROM "StepExecution" WHERE id = $1`, [step.id]);
    expect(stepRow).toEqual({ status: 'WAITING', executionId });
    expect(await indexValidity(t, 'WorkflowExecution_active_workflowId_contactId_key')).toMatchObject({ indisvalid: true });
    expect(await indexValidity(t, 'StepExecution_executionId_stepId_key')).toMatchObject({ indisvalid: true });
    const client = new pg.Client({ connectionString: t.url });
    await client.connect();
    expect(await invalidIndexes(client)).toEqual([]);
    await client.end();
  });

  it('an upgrade from before workflow versions keeps existing workflows and executions as version 1, and the FK keeps a current step inside its version', async () => {
    const t = await blank();
    await migrate(t.url, { until: beforeVersions() });
    expect(await hasVersions(t)).toBe(false);
    // A two-step workflow (trigger -> wait), an execution WAITING at the wait, and a finished one with no step.
    const ids = await seedWorkflow(t);
    const [trigger] = await t.query(
      `INSERT INTO "WorkflowStep"("workflowId", key, type, name) VALUES ($1, 'start', 'TRIGGER', 'Start') RETURNING id`,
      [ids.workflowId],
    );
    const [transition] = await t.query(
      `INSERT INTO "WorkflowTransition"("workflowId", "fromStepId", "toStepId") VALUES ($1, $2, $3) RETURNING id`,
      [ids.workflowId, trigger.id, ids.stepId],
    );
    const waiting = await insertExecution(t, ids, 'WAITING');
    const finished = await insertExecution(t, { ...ids, stepId: null }, 'COMPLETED');
    const [stepRow] = await t.query(
      `INSERT INTO "StepExecution"("executionId", "stepId", status, "dueAt")
       VALUES ($1, $2, 'WAITING', now() + interval '1 hour') RETURNING id`,
      [waiting, ids.stepId],
    );

    const result = await migrate(t.url);
    expect(result.applied[0]).toBe(VERSIONS);

    // The workflow has exactly one version, 1, published by 'system', and it is the latest.
    const versions = await t.query(
      `SELECT id, number, "basedOn", "publishedBy" FROM "WorkflowVersion" WHERE "workflowId" = $1`,
      [ids.workflowId],
    );
    expect(versions).toEqual([{ id: expect.any(String), number: 1, basedOn: null, publishedBy: 'system' }]);
    const v1 = versions[0].id as string;
    const [workflow] = await t.query(`SELECT "latestVersion" FROM "Workflow" WHERE id = $1`, [ids.workflowId]);
    expect(workflow).toEqual({ latestVersion: 1 });
    // Its steps and transition are version 1's; the executions run on version 1, where they were.
    const steps = await t.query(`SELECT id, "versionId" FROM "WorkflowStep" WHERE "workflowId" = $1 ORDER BY key`, [ids.workflowId]);
    expect(steps).toEqual([
      { id: trigger.id, versionId: v1 },
      { id: ids.stepId, versionId: v1 },
    ]);
    const [t1] = await t.query(`SELECT "versionId", "fromStepId", "toStepId" FROM "WorkflowTransition" WHERE id = $1`, [transition.id]);
    expect(t1).toEqual({ versionId: v1, fromStepId: trigger.id, toStepId: ids.stepId });
    const executions = await t.query(
      `SELECT id, status, "currentStepId", "workflowVersionId" FROM "WorkflowExecution" ORDER BY status::text`,
    );
    expect(executions).toEqual([
      { id: finished, status: 'COMPLETED', currentStepId: null, workflowVersionId: v1 },
      { id: waiting, status: 'WAITING', currentStepId: ids.stepId, workflowVersionId: v1 },
    ]);
    const [kept] = await t.query(`SELECT status, "executionId", "stepId" FROM "StepExecution" WHERE id = $1`, [stepRow.id]);
    expect(kept).toEqual({ status: 'WAITING', executionId: waiting, stepId: ids.stepId });
    const client = new pg.Client({ connectionString: t.url });
    await client.connect();
    expect(await invalidIndexes(client)).toEqual([]);
    await client.end();

    // Version 2 of the same workflow, with its own 'wait' step (a key is unique per version only).
    const [v2] = await t.query(
      `INSERT INTO "WorkflowVersion"("workflowId", number, "basedOn", "publishedBy") VALUES ($1, 2, 1, 'test') RETURNING id`,
      [ids.workflowId],
    );
    const [v2wait] = await t.query(
      `INSERT INTO "WorkflowStep"("workflowId", "versionId", key, type, name, config)
       VALUES ($1, $2, 'wait', 'WAIT_FOR_EVENT', 'Wait', '{"eventName":"purchase","timeoutSeconds":60}') RETURNING id`,
      [ids.workflowId, v2.id],
    );
    // An execution of version 1 at version 2's step cannot be stored (COMPLETED: clear of I1), nor can one be moved there.
    await expect(insertExecution(t, { ...ids, versionId: v2.id, stepId: v2wait.id }, 'COMPLETED')).resolves.toBeTypeOf('string');
    await expect(
      insertExecution(t, { ...ids, versionId: v1, stepId: v2wait.id }, 'COMPLETED'),
    ).rejects.toMatchObject({ code: '23503', constraint: 'WorkflowExecution_step_in_version_fkey' });
    await expect(
      t.query(`UPDATE "WorkflowExecution" SET "currentStepId" = $2 WHERE id = $1`, [waiting, v2wait.id]),
    ).rejects.toMatchObject({ code: '23503', constraint: 'WorkflowExecution_step_in_version_fkey' });
    // Moving step and version together is allowed.
    await t.query(`UPDATE "WorkflowExecution" SET "currentStepId" = $2, "workflowVersionId" = $3 WHERE id = $1`, [
      waiting,
      v2wait.id,
      v2.id,
    ]);
    // A transition between two versions' steps is refused the same way.
    await expect(
      t.query(`INSERT INTO "WorkflowTransition"("workflowId", "versionId", "fromStepId", "toStepId", branch) VALUES ($1, $2, $3, $4, 'yes')`, [
        ids.workflowId,
        v1,
        trigger.id,
        v2wait.id,
      ]),
    ).rejects.toMatchObject({ code: '23503', constraint: 'WorkflowTransition_to_in_version_fkey' });
  });

  it('an applied migration that was edited fails loudly', async () => {
    const t = await blank();
    const dir = mkdtempSync(path.join(tmpdir(), 'wp-migrations-'));
    cpSync(DEFAULT_MIGRATIONS_DIR, dir, { recursive: true });
    await migrate(t.url, { dir });
    appendFileSync(path.join(dir, BEFORE_I2_CHECK, 'migration.sql'), '\n-- an innocent-looking edit\n');
    await expect(migrate(t.url, { dir })).rejects.toThrow(/20261201000000_init was modified after it was applied/);
  });

  it('a database that recorded an earlier, comment-only text of a migration starts, and its checksum is brought up to date', async () => {
    const t = await blank();
    await migrate(t.url);
    const [entry] = Object.entries(SUPERSEDED_CHECKSUMS);
    const [name, [earlier]] = [entry![0], entry![1]];
    await t.query(`UPDATE "_prisma_migrations" SET checksum = $1 WHERE migration_name = $2`, [earlier!.checksum, name]);
    const logged: string[] = [];
    const result = await migrate(t.url, { log: (line) => logged.push(line) });
    expect(result.applied).toEqual([]);
    expect(logged.join('\n')).toContain(`migration ${name}: recorded checksum updated`);
    const [row] = await t.query(`SELECT checksum FROM "_prisma_migrations" WHERE migration_name = $1`, [name]);
    expect(row.checksum).toBe(readMigrations().find((m) => m.name === name)!.checksum);
    // Any other recorded text is still an edited migration.
    await t.query(`UPDATE "_prisma_migrations" SET checksum = $1 WHERE migration_name = $2`, ['0'.repeat(64), name]);
    await expect(migrate(t.url)).rejects.toThrow(new RegExp(`${name} was modified after it was applied`));
  });

  it('an INVALID index left by an interrupted concurrent build is detected', async () => {
    const t = await blank();
    const dir = mkdtempSync(path.join(tmpdir(), 'wp-migrations-'));
    cpSync(DEFAULT_MIGRATIONS_DIR, dir, { recursive: true });
    await migrate(t.url, { dir });
    // Simulate the leftover of a failed CREATE INDEX CONCURRENTLY: duplicates make the
    // concurrent build of a new unique index fail, leaving it INVALID.
    const ids = await seedWorkflow(t);
    await insertExecution(t, ids, 'COMPLETED');
    await insertExecution(t, ids, 'COMPLETED');
    const name = '20261201999999_unique_everything';
    const { mkdirSync } = await import('node:fs');
    mkdirSync(path.join(dir, name));
    writeFileSync(
      path.join(dir, name, 'migration.sql'),
      `CREATE UNIQUE INDEX CONCURRENTLY "WorkflowExecution_all_key" ON "WorkflowExecution"("workflowId", "contactId");\n`,
    );
    await expect(migrate(t.url, { dir })).rejects.toThrow(/Migration 20261201999999_unique_everything failed/);
    // Later runs refuse while that migration is unresolved, and name the INVALID index once resolved.
    await expect(migrate(t.url, { dir })).rejects.toThrow(/failed earlier and blocks/);
    await markRolledBack(t.url, name);
    await expect(migrate(t.url, { dir })).rejects.toThrow(/INVALID index\(es\) "WorkflowExecution_all_key"/);
  });
});
