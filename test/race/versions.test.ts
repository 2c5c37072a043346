import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WorkflowInput } from '../../server/common/workflow-definition';
import type { VersionDefinition } from '../../server/common/version-definition';
import { createEngineContext } from '../../server/engine/context';
import { enroll } from '../../server/engine/enrollment';
import { trackEvent } from '../../server/engine/events';
import { checkInvariants } from '../../server/engine/invariants';
import { discardDraft, publishVersion, saveDraft, versionDefinitionOf } from '../../server/engine/versions';
import { notifyWorkers } from '../../server/engine/wakeup';
import { workflowDetail } from '../../server/read/workflows';
import { freshDatabase, type TestDatabase } from '../support/database';
import { runStepsOnly } from '../support/drive';
import { createContact, createProject, workflowFrom } from '../support/fixtures';
import { startWorkerProcess, waitFor, type WorkerProcess } from '../support/processes';
import { expectNoViolations, racers, ROUNDS } from '../support/race';

// Workflow versions (docs/versions.md): executions keep the version they were enrolled
// on; publish is a compare-and-swap on the workflow's latestVersion. Guards named per
// test; scripts/guard-mutations/versions.ts removes each and expects a failure.

const by = (projectId: string, actor = 'user:tester') => ({ projectId, actor });

/** TRIGGER → update → condition (yes: email a, no: email b) → delay → wait (EVENT: email c, TIMEOUT: email d) → exit. */
function everyStepType(subject: string, overrides: Partial<WorkflowInput> = {}): WorkflowInput {
  return {
    name: `every step ${Math.random().toString(36).slice(2, 8)}`,
    trigger: 'MANUAL',
    allowReentry: true,
    steps: [
      { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
      { key: 'tag', type: 'UPDATE_CONTACT', name: 'Tag', config: { set: { tagged: true } } },
      { key: 'vip', type: 'CONDITION', name: 'VIP?', config: { field: 'contact.data.vip', op: 'eq', value: true } },
      { key: 'mail_a', type: 'SEND_EMAIL', name: 'A', config: { subject: `${subject} A`, body: 'Hi {{contact.email}}' } },
      { key: 'mail_b', type: 'SEND_EMAIL', name: 'B', config: { subject: `${subject} B`, body: 'Hi' } },
      { key: 'pause', type: 'DELAY', name: 'Pause', config: { seconds: 1 } },
      { key: 'wait', type: 'WAIT_FOR_EVENT', name: 'Wait', config: { eventName: 'ping', timeoutSeconds: 2 } },
      { key: 'mail_c', type: 'SEND_EMAIL', name: 'C', config: { subject: `${subject} C`, body: 'Pinged' } },
      { key: 'mail_d', type: 'SEND_EMAIL', name: 'D', config: { subject: `${subject} D`, body: 'Silent' } },
      { key: 'done', type: 'EXIT', name: 'Done', config: { reason: 'finished' } },
    ],
    transitions: [
      { from: 'start', to: 'tag', branch: null },
      { from: 'tag', to: 'vip', branch: null },
      { from: 'vip', to: 'mail_a', branch: 'yes' },
      { from: 'vip', to: 'mail_b', branch: 'no' },
      { from: 'mail_a', to: 'pause', branch: null },
      { from: 'mail_b', to: 'pause', branch: null },
      { from: 'pause', to: 'wait', branch: null },
      { from: 'wait', to: 'mail_c', branch: 'EVENT' },
      { from: 'wait', to: 'mail_d', branch: 'TIMEOUT' },
      { from: 'mail_c', to: 'done', branch: null },
    ],
    ...overrides,
  };
}

/** Version 2 of everyStepType: new copy everywhere, the DELAY removed (the mails lead straight to the wait). */
function secondVersion(def: VersionDefinition, subject: string): VersionDefinition {
  return {
    steps: def.steps
      .filter((s) => s.key !== 'pause')
      .map((s) => (s.type === 'SEND_EMAIL' ? { ...s, config: { ...s.config, subject: `${subject} ${s.name}` } } : s)),
    transitions: def.transitions
      .filter((t) => t.from !== 'pause')
      .map((t) => (t.to === 'pause' ? { ...t, to: 'wait' } : t)),
  };
}

async function definition(t: TestDatabase, workflowId: string, number: number): Promise<VersionDefinition> {
  return (await versionDefinitionOf(t.db, workflowId, number))!;
}

/** Step rows (any status) whose step belongs to another version than their execution's: a step of the wrong version ran. */
async function stepsOfAnotherVersion(t: TestDatabase): Promise<number> {
  const [row] = await t.query(`
    SELECT count(*)::int AS n FROM "StepExecution" s
      JOIN "WorkflowStep" ws ON ws.id = s."stepId"
      JOIN "WorkflowExecution" e ON e.id = s."executionId"
     WHERE ws."versionId" <> e."workflowVersionId"`);
  return row.n;
}

describe('workflow versions', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await freshDatabase();
  });
  afterAll(async () => {
    await t?.drop();
  });

  // Guard: every step and wait claim returns the execution's workflowVersionId and the
  // worker reads that version's graph (run-steps.ts). With the worker reading the
  // workflow's latest version instead, the version-1 execution fails at a step id the
  // new graph does not have.
  it('an execution keeps the version it was enrolled on; new enrollments take the latest', async () => {
    const project = await createProject(t.db);
    const wf = await workflowFrom(t.db, project.id, everyStepType('v1'));
    const early = await createContact(t.db, project.id, 'pin-early@example.com');
    const late = await createContact(t.db, project.id, 'pin-late@example.com');
    const first = await enroll(t.db, { projectId: project.id, workflowId: wf.id, contactId: early.id });
    if (!first.ok) throw new Error(first.reason);
    const published = await publishVersion(t.db, by(project.id), { workflowId: wf.id, basedOnVersion: 1, definition: secondVersion(await definition(t, wf.id, 1), 'v2') });
    expect(published).toMatchObject({ ok: true, version: 2 });
    const second = await enroll(t.db, { projectId: project.id, workflowId: wf.id, contactId: late.id });
    if (!second.ok) throw new Error(second.reason);
    await runStepsOnly(t.db);
    const rows = await t.query(
      `SELECT e.id, v.number, e.status, e."lastError", (SELECT array_agg(m.subject ORDER BY m.subject) FROM "Message" m WHERE m."executionId" = e.id) AS subjects,
              (SELECT ws.key FROM "WorkflowStep" ws WHERE ws.id = e."currentStepId") AS at
         FROM "WorkflowExecution" e JOIN "WorkflowVersion" v ON v.id = e."workflowVersionId"
        WHERE e."workflowId" = $1 ORDER BY v.number`,
      [wf.id],
    );
    // v1 runs its DELAY (still parked there: the test runs steps only); v2 has none and reaches the wait.
    expect(rows.map((r) => ({ number: r.number, status: r.status, lastError: r.lastError, subjects: r.subjects }))).toEqual([
      { number: 1, status: 'WAITING', lastError: null, subjects: ['v1 B'] },
      { number: 2, status: 'WAITING', lastError: null, subjects: ['v2 B'] },
    ]);
    expect(rows.map((r) => r.at)).toEqual(['pause', 'wait']);
    expect(await stepsOfAnotherVersion(t)).toBe(0);
    await expectNoViolations(t.db, 'pinning');
  });

  it('a publish based on an older version is refused with the current version and the diff; nothing is written', async () => {
    const project = await createProject(t.db);
    const wf = await workflowFrom(t.db, project.id, everyStepType('c1'));
    const base = await definition(t, wf.id, 1);
    expect(await publishVersion(t.db, by(project.id, 'user:first'), { workflowId: wf.id, basedOnVersion: 1, definition: secondVersion(base, 'first') })).toMatchObject({ ok: true, version: 2 });
    const [before] = await t.query(`SELECT (SELECT count(*)::int FROM "WorkflowStep" WHERE "workflowId" = $1) AS steps, (SELECT count(*)::int FROM "WorkflowVersion" WHERE "workflowId" = $1) AS versions`, [wf.id]);
    const stale = await publishVersion(t.db, by(project.id, 'user:second'), { workflowId: wf.id, basedOnVersion: 1, definition: secondVersion(base, 'second') });
    expect(stale).toMatchObject({ ok: false, reason: 'VERSION_CONFLICT', current: { number: 2, publishedBy: 'user:first' } });
    if (stale.ok || stale.reason !== 'VERSION_CONFLICT') throw new Error('expected a conflict');
    expect(stale.diff.removed.map((s) => s.key)).toEqual(['pause']);
    expect(stale.diff.changed.map((s) => s.key).sort()).toEqual(['mail_a', 'mail_b', 'mail_c', 'mail_d']);
    const [after] = await t.query(`SELECT (SELECT count(*)::int FROM "WorkflowStep" WHERE "workflowId" = $1) AS steps, (SELECT count(*)::int FROM "WorkflowVersion" WHERE "workflowId" = $1) AS versions`, [wf.id]);
    expect(after).toEqual(before);
    const audit = await t.query(`SELECT actor, outcome, after->>'reason' AS reason FROM "AuditEntry" WHERE action = 'workflows.publish' AND "targetId" = $1 ORDER BY at`, [wf.id]);
    expect(audit).toEqual([
      { actor: 'user:first', outcome: 'APPLIED', reason: null },
      { actor: 'user:second', outcome: 'REJECTED', reason: 'VERSION_CONFLICT' },
    ]);
  });

  it('a definition that breaks the graph rules is refused with paths into it, and nothing is written', async () => {
    const project = await createProject(t.db);
    const wf = await workflowFrom(t.db, project.id, everyStepType('i1'));
    const base = await definition(t, wf.id, 1);
    const broken = { ...base, steps: base.steps.map((s) => (s.key === 'mail_a' ? { ...s, config: { subject: '', body: 'x' } } : s)) };
    const result = await publishVersion(t.db, by(project.id), { workflowId: wf.id, basedOnVersion: 1, definition: broken });
    expect(result.ok).toBe(false);
    if (result.ok || result.reason !== 'INVALID') throw new Error('expected INVALID');
    const index = base.steps.findIndex((s) => s.key === 'mail_a');
    expect(result.error.issues.map((i) => i.path.join('.'))).toContain(`steps.${index}.config.subject`);
    const unreachable = { ...base, transitions: base.transitions.filter((t) => t.to !== 'mail_d') };
    expect(await publishVersion(t.db, by(project.id), { workflowId: wf.id, basedOnVersion: 1, definition: unreachable })).toMatchObject({ ok: false, reason: 'INVALID' });
    const [row] = await t.query(`SELECT "latestVersion" FROM "Workflow" WHERE id = $1`, [wf.id]);
    expect(row.latestVersion).toBe(1);
  });

  it('a draft is kept, shown and discarded without touching a version or an execution; publishing clears it', async () => {
    const project = await createProject(t.db);
    const wf = await workflowFrom(t.db, project.id, everyStepType('d1'));
    const base = await definition(t, wf.id, 1);
    const half = { steps: base.steps.slice(0, 3), transitions: [] };
    expect(await saveDraft(t.db, by(project.id), { workflowId: wf.id, basedOnVersion: 1, definition: half })).toMatchObject({ ok: true });
    const detail = await workflowDetail(t.db, { projectId: project.id, graceSeconds: 60, workflowId: wf.id });
    expect(detail?.draft).toMatchObject({ basedOnVersion: 1, definition: half });
    expect(detail?.steps).toHaveLength(base.steps.length);
    expect(await discardDraft(t.db, by(project.id), wf.id)).toEqual({ ok: true, discarded: true });
    expect(await discardDraft(t.db, by(project.id), wf.id)).toEqual({ ok: true, discarded: false });
    const other = await createProject(t.db);
    expect(await discardDraft(t.db, by(other.id), wf.id)).toEqual({ ok: false, reason: 'WORKFLOW_NOT_FOUND' });
    expect(await saveDraft(t.db, by(other.id), { workflowId: wf.id, basedOnVersion: 1, definition: half })).toEqual({ ok: false, reason: 'WORKFLOW_NOT_FOUND' });
    await saveDraft(t.db, by(project.id), { workflowId: wf.id, basedOnVersion: 1, definition: half });
    await publishVersion(t.db, by(project.id), { workflowId: wf.id, basedOnVersion: 1, definition: secondVersion(base, 'd2') });
    const [draft] = await t.query(`SELECT count(*)::int AS n FROM "WorkflowDraft" WHERE "workflowId" = $1`, [wf.id]);
    expect(draft.n).toBe(0);
  });

  it('the database refuses an execution at a step of another version (WorkflowExecution_step_in_version_fkey)', async () => {
    const project = await createProject(t.db);
    const wf = await workflowFrom(t.db, project.id, everyStepType('f1'));
    await publishVersion(t.db, by(project.id), { workflowId: wf.id, basedOnVersion: 1, definition: secondVersion(await definition(t, wf.id, 1), 'f2') });
    const contact = await createContact(t.db, project.id, 'fk@example.com');
    const enrolled = await enroll(t.db, { projectId: project.id, workflowId: wf.id, contactId: contact.id });
    if (!enrolled.ok) throw new Error(enrolled.reason);
    const [v1step] = await t.query(`SELECT s.id FROM "WorkflowStep" s JOIN "WorkflowVersion" v ON v.id = s."versionId" WHERE v."workflowId" = $1 AND v.number = 1 AND s.key = 'wait'`, [wf.id]);
    await expect(t.query(`UPDATE "WorkflowExecution" SET "currentStepId" = $2 WHERE id = $1`, [enrolled.executionId, v1step.id])).rejects.toThrow(/step_in_version_fkey/);
    const [i9] = (await checkInvariants(t.db)).filter((r) => r.id === 'I9');
    expect(i9!.violations).toBe(0);
  });

  // Guard: publishVersion's compare-and-swap (`WHERE "latestVersion" = basedOn`). Without
  // it both publishes of a round win and the workflow gains two versions from one base.
  it(`two publishes based on the same version at once: exactly one wins, the other is refused (${ROUNDS} rounds)`, async () => {
    const project = await createProject(t.db);
    const wf = await workflowFrom(t.db, project.id, everyStepType('r0'));
    const base = await definition(t, wf.id, 1);
    const r = await racers(t.url, 2);
    try {
      for (let round = 0; round < ROUNDS; round++) {
        const basedOnVersion = round + 1;
        const results = await r.race((db, i) =>
          publishVersion(db, by(project.id, `user:racer${i}`), { workflowId: wf.id, basedOnVersion, definition: secondVersion(base, `round ${round} racer ${i}`) }),
        );
        const outcomes = results.map((x) => (x.status === 'fulfilled' ? (x.value.ok ? 'won' : x.value.reason) : `threw ${String(x.reason)}`));
        expect(outcomes.sort(), `round ${round}`).toEqual(['VERSION_CONFLICT', 'won']);
      }
      const versions = await t.query(`SELECT number FROM "WorkflowVersion" WHERE "workflowId" = $1 ORDER BY number`, [wf.id]);
      expect(versions.map((v) => v.number)).toEqual(Array.from({ length: ROUNDS + 1 }, (_, i) => i + 1));
      const [steps] = await t.query(`SELECT count(*)::int AS n FROM "WorkflowStep" WHERE "workflowId" = $1`, [wf.id]);
      expect(steps.n).toBe(base.steps.length + ROUNDS * (base.steps.length - 1));
    } finally {
      await r.close();
    }
  });

  it('a publish while 300 executions run on three worker processes: each finishes on its own version, invariants hold', { timeout: 240_000 }, async () => {
    const t2 = await freshDatabase();
    const workers: WorkerProcess[] = [];
    try {
      const project = await createProject(t2.db);
      const wf = await workflowFrom(t2.db, project.id, everyStepType('old'));
      const ctx = createEngineContext(t2.db);
      const enrollSome = async (from: number, n: number) => {
        const ids: { id: string; contactId: string }[] = [];
        for (let i = from; i < from + n; i++) {
          const contact = await createContact(t2.db, project.id, `flight-${i}@example.com`, { vip: i % 3 === 0 });
          const r = await enroll(t2.db, { projectId: project.id, workflowId: wf.id, contactId: contact.id });
          if (!r.ok) throw new Error(r.reason);
          ids.push({ id: r.executionId, contactId: contact.id });
        }
        await notifyWorkers(t2.db);
        return ids;
      };
      for (let i = 0; i < 3; i++) workers.push(await startWorkerProcess(t2.url, { concurrency: 8 }));
      const first = await enrollSome(0, 150);
      // Publish while the first half is in flight: some at the delay, some parked at the wait.
      await new Promise((r) => setTimeout(r, 700));
      const [inFlight] = await t2.query(`SELECT count(*)::int AS n FROM "WorkflowExecution" WHERE status IN ('RUNNING', 'WAITING')`);
      expect(inFlight.n).toBeGreaterThan(0);
      const published = await publishVersion(t2.db, by(project.id), { workflowId: wf.id, basedOnVersion: 1, definition: secondVersion(await definition(t2, wf.id, 1), 'new') });
      expect(published).toMatchObject({ ok: true, version: 2 });
      const second = await enrollSome(150, 150);
      await Promise.all(
        [...first, ...second]
          .filter((_, i) => i % 2 === 0)
          .map((x) => trackEvent(ctx, { projectId: project.id, name: 'ping', contactId: x.contactId })),
      );
      await waitFor(
        'every execution to finish',
        async () => {
          const [row] = await t2.query(`SELECT count(*)::int AS n FROM "WorkflowExecution" WHERE status IN ('RUNNING', 'WAITING')`);
          return row.n === 0;
        },
        120_000,
      );
      const outcome = await t2.query(`
        SELECT v.number, e.status, count(*)::int AS n,
               count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM "Message" m WHERE m."executionId" = e.id AND m.subject NOT LIKE (CASE v.number WHEN 1 THEN 'old %' ELSE 'new %' END)))::int AS "ownCopy"
          FROM "WorkflowExecution" e JOIN "WorkflowVersion" v ON v.id = e."workflowVersionId"
         GROUP BY v.number, e.status ORDER BY v.number, e.status`);
      // EXIT ends as EXITED (pinged), the TIMEOUT branch as COMPLETED; every message is its version's copy.
      const byVersion = (n: number) => outcome.filter((o) => o.number === n);
      expect(byVersion(1).reduce((a, o) => a + o.n, 0)).toBe(150);
      expect(byVersion(2).reduce((a, o) => a + o.n, 0)).toBe(150);
      expect(outcome.filter((o) => !['COMPLETED', 'EXITED'].includes(o.status))).toEqual([]);
      expect(outcome.every((o) => o.ownCopy === o.n), JSON.stringify(outcome)).toBe(true);
      const [paused] = await t2.query(`
        SELECT count(*) FILTER (WHERE v.number = 1)::int AS v1, count(*) FILTER (WHERE v.number = 2)::int AS v2
          FROM "StepExecution" s JOIN "WorkflowStep" ws ON ws.id = s."stepId" AND ws.key = 'pause'
          JOIN "WorkflowVersion" v ON v.id = ws."versionId"`);
      expect(paused).toEqual({ v1: 150, v2: 0 });
      expect(await stepsOfAnotherVersion(t2)).toBe(0);
      await expectNoViolations(t2.db, 'publish in flight');
    } finally {
      for (const w of workers) w.kill();
      await Promise.all(workers.map((w) => w.exited));
      await t2.drop();
    }
  });
});
