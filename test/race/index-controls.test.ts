import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../server/db';
import { createEngineContext } from '../../server/engine/context';
import { enroll } from '../../server/engine/enrollment';
import { checkInvariants, type InvariantResult } from '../../server/engine/invariants';
import { advanceExecution, claimStep, type StepClaim } from '../../server/engine/claims';
import { processReadySteps } from '../../server/engine/runner';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createContact, createProject, delayWorkflow, stepId, workflowFrom } from '../support/fixtures';
import { fulfilled, racers, ROUNDS, type Racers } from '../support/race';

// Controls for the I2 and I5 indexes, as test/race/races.test.ts has for I1 and
// I3: the same race run without the index must produce the violation, and with it must
// not, so the races could have failed.
//
// Both indexes are the arbiters of an INSERT ... ON CONFLICT (column list) in the claims
// (the step row's upsert, the message's insert). Simply dropped, every such claim fails
// loudly ("there is no unique or exclusion constraint matching the ON CONFLICT
// specification"): the engine cannot run without them, which the first test shows. To
// race the engine's unchanged SQL without the guard, each control replaces the index with
// one of the same name and columns whose equality never holds (a btree operator class
// whose comparison never says "equal"): ON CONFLICT still finds its arbiter, and nothing
// is ever a duplicate, exactly as if the uniqueness were gone.

let t: TestDatabase;
let r16: Racers;

beforeAll(async () => {
  t = await freshDatabase();
  r16 = await racers(t.url, 16);
});
afterAll(async () => {
  await r16?.close();
  await t?.drop();
});

async function count(db: Db, id: InvariantResult['id']): Promise<number> {
  return (await checkInvariants(db)).find((r) => r.id === id)!.violations;
}

/** A btree operator class on uuid whose comparison never returns "equal". */
async function installNeverEqualOpclass(c: TestDatabase) {
  await c.query(`
    CREATE FUNCTION never_eq_cmp(uuid, uuid) RETURNS int LANGUAGE sql IMMUTABLE STRICT
      AS $$ SELECT CASE WHEN uuid_cmp($1, $2) = 0 THEN -1 ELSE uuid_cmp($1, $2) END $$`);
  for (const [name, body] of [
    ['lt', 'never_eq_cmp($1, $2) < 0'],
    ['le', 'never_eq_cmp($1, $2) <= 0'],
    ['eq', 'false'],
    ['ge', 'never_eq_cmp($1, $2) >= 0'],
    ['gt', 'never_eq_cmp($1, $2) > 0'],
  ]) {
    await c.query(`CREATE FUNCTION never_eq_${name}(uuid, uuid) RETURNS bool LANGUAGE sql IMMUTABLE STRICT AS $$ SELECT ${body} $$`);
  }
  await c.query(`CREATE OPERATOR ##< (LEFTARG = uuid, RIGHTARG = uuid, FUNCTION = never_eq_lt)`);
  await c.query(`CREATE OPERATOR ##<= (LEFTARG = uuid, RIGHTARG = uuid, FUNCTION = never_eq_le)`);
  await c.query(`CREATE OPERATOR ##= (LEFTARG = uuid, RIGHTARG = uuid, FUNCTION = never_eq_eq)`);
  await c.query(`CREATE OPERATOR ##>= (LEFTARG = uuid, RIGHTARG = uuid, FUNCTION = never_eq_ge)`);
  await c.query(`CREATE OPERATOR ##> (LEFTARG = uuid, RIGHTARG = uuid, FUNCTION = never_eq_gt)`);
  await c.query(`
    CREATE OPERATOR CLASS never_eq_ops FOR TYPE uuid USING btree AS
      OPERATOR 1 ##<, OPERATOR 2 ##<=, OPERATOR 3 ##=, OPERATOR 4 ##>=, OPERATOR 5 ##>, FUNCTION 1 never_eq_cmp(uuid, uuid)`);
}

// ---------------------------------------------------------------------------
// I2: a worker whose lease ran out racing its replacements

/**
 * One round: an execution whose worker claimed its first step and stalled past its lease
 * (lease 0); then, at once, the stalled worker completes what it holds while fifteen
 * workers look for due work (and find the expired lease to re-claim).
 */
async function i2Round(db: Db, rs: Racers, projectId: string, workflowId: string, round: number, tag: string) {
  const contact = await createContact(db, projectId, `${tag}-${round}@example.com`);
  const enrolled = await enroll(db, { projectId, workflowId, contactId: contact.id });
  if (!enrolled.ok) throw new Error('enroll');
  const claimed = await claimStep(db, { executionId: enrolled.executionId, expectedVersion: 1, leaseSeconds: 0 });
  if (!claimed.won || !('claim' in claimed)) throw new Error('claim');
  const stalled: StepClaim = claimed.claim;
  const pause = await stepId(db, workflowId, 'pause');
  fulfilled(
    await rs.race(async (racer, i) =>
      i === 0
        ? advanceExecution(racer, stalled, { nextStepId: pause, status: 'RUNNING', output: { by: 'stalled' } })
        : processReadySteps(createEngineContext(racer, { owner: `worker-${i}` }), 4),
    ),
  );
  return enrolled.executionId;
}

describe('I2 control: the unique (execution, step) index', () => {
  it('with the index, a stalled worker racing fifteen replacements leaves one row per step', async () => {
    const projectId = (await createProject(t.db)).id;
    const wf = await workflowFrom(t.db, projectId, delayWorkflow(3600, { allowReentry: true }));
    for (let round = 0; round < Math.min(ROUNDS, 20); round++) {
      await i2Round(t.db, r16, projectId, wf.id, round, 'i2-ok');
      expect(await count(t.db, 'I2'), `round ${round}`).toBe(0);
    }
  });

  describe('without it', () => {
    let c: TestDatabase;
    let rc: Racers;
    beforeAll(async () => {
      c = await freshDatabase();
      rc = await racers(c.url, 16);
    });
    afterAll(async () => {
      await rc?.close();
      await c?.drop();
    });

    it('simply dropped, every step claim fails loudly: nothing runs', async () => {
      const projectId = (await createProject(c.db)).id;
      const wf = await workflowFrom(c.db, projectId, delayWorkflow(3600, { allowReentry: true }));
      const contact = await createContact(c.db, projectId, 'dropped@example.com');
      const enrolled = await enroll(c.db, { projectId, workflowId: wf.id, contactId: contact.id });
      if (!enrolled.ok) throw new Error('enroll');
      await c.query(`DROP INDEX "StepExecution_executionId_stepId_key"`);
      await expect(claimStep(c.db, { executionId: enrolled.executionId, expectedVersion: 1, leaseSeconds: 30 })).rejects.toThrow(
        /no unique or exclusion constraint matching the ON CONFLICT specification/,
      );
      expect(await c.query(`SELECT id FROM "StepExecution" WHERE "executionId" = $1`, [enrolled.executionId])).toEqual([]);
    });

    it('replaced by an index that enforces nothing, the same race creates a second row for a step', async () => {
      await installNeverEqualOpclass(c);
      await c.query(`DROP INDEX IF EXISTS "StepExecution_executionId_stepId_key"`);
      await c.query(`CREATE UNIQUE INDEX "StepExecution_executionId_stepId_key" ON "StepExecution"("executionId", "stepId" never_eq_ops)`);
      const projectId = (await createProject(c.db)).id;
      const wf = await workflowFrom(c.db, projectId, delayWorkflow(3600, { allowReentry: true }));
      let violated = false;
      for (let round = 0; round < ROUNDS && !violated; round++) {
        await i2Round(c.db, rc, projectId, wf.id, round, 'i2-broken');
        violated = (await count(c.db, 'I2')) > 0;
      }
      expect(violated).toBe(true);
    });
  });
});

// ---------------------------------------------------------------------------
// I5: sixteen completions of one SEND_EMAIL claim

// The message insert rides on advanceExecution, behind the version and claim-token fences
// (I6): with them intact no second completion of a step execution ever reaches the
// insert, so the index never decides anything on its own. To show that it does hold the
// line once the fences are gone, both variants below defeat the fences the same way: the
// execution and step rows are frozen (a trigger keeps every row as it was, so each stale
// completion passes its CAS again, as a lost fence would let it), and sixteen workers
// complete the same SEND_EMAIL claim at once. With the index: one email. Without: several.
// (The I5 query counts rows per step execution; the messages are never sent here.)

function mailWorkflow() {
  return {
    name: `mail-${Math.random().toString(36).slice(2, 8)}`,
    trigger: 'MANUAL' as const,
    allowReentry: true,
    steps: [
      { key: 'start', type: 'TRIGGER' as const, name: 'Start', config: {} },
      { key: 'mail', type: 'SEND_EMAIL' as const, name: 'Mail', config: { subject: 'Once', body: 'Only once' } },
    ],
    transitions: [{ from: 'start', to: 'mail', branch: null }],
  };
}

/** One round: claim an execution's SEND_EMAIL step, then complete that claim sixteen times at once. */
async function i5Round(db: Db, rs: Racers, projectId: string, workflowId: string, round: number, tag: string): Promise<number> {
  const enrolled = await enroll(db, { projectId, workflowId, email: `${tag}-${round}@example.com` });
  if (!enrolled.ok) throw new Error('enroll');
  // A worker runs the trigger step and claims the SEND_EMAIL step, as usual.
  const mail = await stepId(db, workflowId, 'mail');
  const first = await claimStep(db, { executionId: enrolled.executionId, expectedVersion: 1, leaseSeconds: 30 });
  if (!first.won || !('claim' in first)) throw new Error('claim');
  const advanced = await advanceExecution(db, first.claim, { nextStepId: mail, status: 'RUNNING', output: {} });
  if (!advanced.won) throw new Error('advance');
  const claimed = await claimStep(db, { executionId: enrolled.executionId, expectedVersion: advanced.version, leaseSeconds: 30 });
  if (!claimed.won || !('claim' in claimed)) throw new Error('claim');
  const claim = claimed.claim;
  const results = fulfilled(
    await rs.race((racer) =>
      advanceExecution(racer, claim, {
        nextStepId: mail,
        status: 'COMPLETED',
        output: { queued: true },
        message: { to: `${tag}-${round}@example.com`, subject: 'Once', body: 'Only once' },
      }),
    ),
  );
  expect(results.every((r) => r.won), 'the fences are defeated: every completion passes').toBe(true);
  const [m] = await db.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM "Message" WHERE "stepExecutionId" = ${claim.stepExecutionId}::uuid`;
  return m!.n;
}

describe('I5 control: the unique message per step execution', () => {
  let c: TestDatabase;
  let rc: Racers;
  beforeAll(async () => {
    c = await freshDatabase();
    rc = await racers(c.url, 16);
  });
  afterAll(async () => {
    await rc?.close();
    await c?.drop();
  });

  it('with the fences defeated and the index in place, sixteen completions queue one email', async () => {
    const projectId = (await createProject(c.db)).id;
    const wf = await workflowFrom(c.db, projectId, mailWorkflow());
    // The rows are frozen only while the completions race (fences_frozen), so each
    // round's setup runs through the engine as usual.
    await c.query(`CREATE TABLE fences_frozen (on_ boolean NOT NULL)`);
    await c.query(`INSERT INTO fences_frozen VALUES (false)`);
    await c.query(`
      CREATE FUNCTION keep_row_when_frozen() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF (SELECT on_ FROM fences_frozen) THEN RETURN OLD; END IF; RETURN NEW; END $$`);
    await c.query(`CREATE TRIGGER keep_execution BEFORE UPDATE ON "WorkflowExecution" FOR EACH ROW EXECUTE FUNCTION keep_row_when_frozen()`);
    await c.query(`CREATE TRIGGER keep_step BEFORE UPDATE ON "StepExecution" FOR EACH ROW EXECUTE FUNCTION keep_row_when_frozen()`);
    for (let round = 0; round < 10; round++) {
      expect(await frozenRound(c, rc, projectId, wf.id, round, 'i5-ok'), `round ${round}`).toBe(1);
    }
    expect(await count(c.db, 'I5')).toBe(0);
  });

  it('without the index, the same race queues the email more than once', async () => {
    await installNeverEqualOpclass(c);
    await c.query(`DROP INDEX "Message_stepExecutionId_key"`);
    await c.query(`CREATE UNIQUE INDEX "Message_stepExecutionId_key" ON "Message"("stepExecutionId" never_eq_ops)`);
    const projectId = (await createProject(c.db)).id;
    const wf = await workflowFrom(c.db, projectId, mailWorkflow());
    let violated = false;
    for (let round = 0; round < ROUNDS && !violated; round++) {
      await frozenRound(c, rc, projectId, wf.id, round, 'i5-broken');
      violated = (await count(c.db, 'I5')) > 0;
    }
    expect(violated).toBe(true);
  });
});

/** i5Round with the fences frozen only while the sixteen completions race. */
async function frozenRound(c: TestDatabase, rs: Racers, projectId: string, workflowId: string, round: number, tag: string) {
  const frozen = {
    ...rs,
    race: async <T,>(fn: (db: Db, i: number) => Promise<T>) => {
      await c.query(`UPDATE fences_frozen SET on_ = true`);
      try {
        return await rs.race(fn);
      } finally {
        await c.query(`UPDATE fences_frozen SET on_ = false`);
      }
    },
  };
  return i5Round(c.db, frozen, projectId, workflowId, round, tag);
}
