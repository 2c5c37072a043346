import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../server/auth/actor';
import { closeDb, createDb, type Db } from '../../server/db';
import { cancelExecution, readExecutionState } from '../../server/engine/claims';
import { createEngineContext } from '../../server/engine/context';
import { ENROLL_INSERT_ATTEMPTS, enroll, enrollBatch, type EnrollResult } from '../../server/engine/enrollment';
import { dispatchEvent, storeEvent } from '../../server/engine/events';
import { checkInvariants } from '../../server/engine/invariants';
import { applyRepair } from '../../server/repair/actions';
import { actorFor, callerFor, expectCode } from '../support/callers';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createContact, createProject, delayWorkflow, workflowFrom } from '../support/fixtures';
import { expectNoViolations, fulfilled, racers, ROUNDS, type Racers } from '../support/race';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy';

// An enrollment B that loses its insert to a concurrent enrollment A of the same contact
// (ON CONFLICT waits for A's insert, A commits, B's row is skipped), where A's execution
// then finishes (it completes, or is cancelled) before B's re-check reads who won. With
// allowReentry nothing blocks the contact any more: B enrolls it on a retry of its
// insert, and a B that keeps losing is told ACTIVE_EXECUTION naming the last winner. It
// used to throw "conflicted with an execution that no longer exists; retry": a 500 from
// enrollments.enroll, a failed import chunk, a failed event dispatch.
//
// The interleaving is forced with real sessions, no seam in the product: A is a real
// enrollment whose transaction the test holds open, so B's insert waits on it (seen in
// pg_stat_activity / pg_blocking_pids); the test commits A, sees B's insert return, and
// cancels A's execution before B's next statement reaches the server. What keeps B's next
// statement back is either B's own second row, waiting on another open enrollment (a
// batch), or, for a single enrollment (whose statements have no wait between them), a TCP
// proxy in front of B's session that holds what B sends, as a slow process would.

let t: TestDatabase;
let projectId: string;
let marketer: Actor;
let target: URL;

beforeAll(async () => {
  t = await freshDatabase();
  projectId = (await createProject(t.db)).id;
  marketer = actorFor(projectId, 'MARKETER');
  target = new URL(t.url);
});
afterAll(async () => t?.drop());

const reentry = () => workflowFrom(t.db, projectId, delayWorkflow(3600, { allowReentry: true }));
let contacts = 0;
const newContact = () => createContact(t.db, projectId, `lost-${++contacts}-${randomBytes(3).toString('hex')}@example.com`);

async function until(label: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${label}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** One PostgreSQL session of its own (pool of one), named so pg_stat_activity finds it. */
function session(url: string): { db: Db; app: string } {
  const app = `waypost-lost-${randomBytes(4).toString('hex')}`;
  return { db: createDb(url, { poolSize: 1, applicationName: app }), app };
}

async function backend(app: string): Promise<{ pid: number; state: string; waitEventType: string | null; query: string } | undefined> {
  const [row] = await t.query(
    `SELECT pid, state, wait_event_type AS "waitEventType", query FROM pg_stat_activity WHERE application_name = $1`,
    [app],
  );
  return row;
}

const inserting = (b: Awaited<ReturnType<typeof backend>>) => !!b && b.query.includes('-- insertExecutions');
/** B's insert waits for a lock (A's transaction, still open). */
const insertWaits = async (app: string) => {
  const b = await backend(app);
  return inserting(b) && b!.state === 'active' && b!.waitEventType === 'Lock';
};
/** B's insert has returned (and B has sent nothing since). */
const insertReturned = async (app: string) => {
  const b = await backend(app);
  return inserting(b) && b!.state !== 'active';
};

interface OpenEnrollment {
  executionId: string;
  pid: number;
  commit(): Promise<void>;
}

/** A: a real enrollment of the contact, its transaction held open until commit(). */
async function openEnrollment(workflowId: string, contactId: string): Promise<OpenEnrollment> {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let opened!: (v: { executionId: string; pid: number }) => void;
  const ready = new Promise<{ executionId: string; pid: number }>((r) => (opened = r));
  const done = t.db.$transaction(
    async (tx) => {
      const [r] = await enrollBatch(tx, projectId, workflowId, [{ contactId }]);
      if (!r?.ok || !r.created) throw new Error(`A did not enroll: ${JSON.stringify(r)}`);
      const [me] = await tx.$queryRaw<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
      opened({ executionId: r.executionId, pid: me!.pid });
      await gate;
    },
    { maxWait: 10_000, timeout: 60_000 },
  );
  const info = await Promise.race([ready, done.then(() => Promise.reject(new Error('A ended before it enrolled')))]);
  return {
    ...info,
    async commit() {
      release();
      await done;
    },
  };
}

/** An operator cancels the execution (the product's audited repair); false if it had moved on. */
async function cancel(db: Db, executionId: string, expectedVersion: number): Promise<boolean> {
  const r = await applyRepair(
    db,
    { projectId, action: 'CANCEL', executionId, actor: 'user:operator-test', expectedVersion, reason: 'the winner finishes' },
    { graceSeconds: 0 },
  );
  return r.ok;
}

/** A's execution finishes: an operator cancels it. */
async function finish(executionId: string): Promise<void> {
  const state = await readExecutionState(t.db, executionId);
  expect(await cancel(t.db, executionId, state!.version)).toBe(true);
}

interface Held {
  db: Db;
  app: string;
  proxy: TcpProxy;
  close(): Promise<void>;
}

/** B's session, behind a proxy that can hold what B sends. */
async function heldSession(): Promise<Held> {
  const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  const { db, app } = session(proxy.url(t.url));
  await db.$queryRaw`SELECT 1`;
  return {
    db,
    app,
    proxy,
    async close() {
      proxy.release();
      await closeDb(db);
      await proxy.close();
    },
  };
}

/**
 * B (`call`, over the held session) loses `times` inserts in a row: each time, an
 * enrollment A of the same contact is open before B reads, B's insert waits for it, A
 * commits (B's row is skipped), and A's execution is cancelled before B's next statement.
 * The winners, in order, and B's answer (or what it threw).
 */
async function loseInserts<T>(
  b: Held,
  workflowId: string,
  contactId: string,
  times: number,
  call: () => Promise<T>,
): Promise<{ answer: PromiseSettledResult<T>; winners: string[] }> {
  const winners: string[] = [];
  let a = await openEnrollment(workflowId, contactId);
  const answer = call().then(
    (value): PromiseSettledResult<T> => ({ status: 'fulfilled', value }),
    (reason): PromiseSettledResult<T> => ({ status: 'rejected', reason }),
  );
  for (let k = 0; k < times; k++) {
    await until(`B's insert waits for A #${k + 1}`, () => insertWaits(b.app));
    b.proxy.hold();
    await a.commit();
    await until(`B's insert returns after A #${k + 1} commits`, () => insertReturned(b.app));
    winners.push(a.executionId);
    await finish(a.executionId);
    if (k + 1 < times) a = await openEnrollment(workflowId, contactId);
    b.proxy.release();
  }
  return { answer: await answer, winners };
}

const valueOf = <T>(s: PromiseSettledResult<T>): T => {
  if (s.status === 'rejected') throw s.reason;
  return s.value;
};

async function executionsOf(contactId: string) {
  return t.query<{ id: string; status: string; sourceEventId: string | null; enrollOnce: boolean }>(
    `SELECT id, status::text AS status, "sourceEventId", "enrollOnce" FROM "WorkflowExecution" WHERE "contactId" = $1 ORDER BY "startedAt"`,
    [contactId],
  );
}

describe('an enrollment that loses its insert to one that finishes before the re-check', () => {
  // Plain sessions only: B's batch holds contacts c1 < c2; A1 and A2 enroll them, open.
  // B's insert waits on A1 for c1; A1 commits, c1 is skipped, and B's insert goes on to
  // wait on A2 for c2. Meanwhile A1's execution is cancelled; then A2 commits.
  it('a batch: the contact whose winner finished is enrolled on a retry, the other told ACTIVE_EXECUTION', async () => {
    const wf = await reentry();
    const [c1, c2] = [await newContact(), await newContact()].sort((x, y) => (x.id < y.id ? -1 : 1));
    const b = session(t.url);
    try {
      await b.db.$queryRaw`SELECT 1`;
      const a1 = await openEnrollment(wf.id, c1!.id);
      const a2 = await openEnrollment(wf.id, c2!.id);
      const answer = enrollBatch(b.db, projectId, wf.id, [{ contactId: c2!.id }, { contactId: c1!.id }]).then(
        (value) => ({ value, error: null }),
        (error: unknown) => ({ value: null, error }),
      );
      const bPid = async () => (await backend(b.app))?.pid;
      const blockedBy = async (pid: number) => {
        const [row] = await t.query(`SELECT $1::int = ANY(pg_blocking_pids($2::int)) AS yes`, [pid, await bPid()]);
        return row.yes === true;
      };
      await until("B's insert waits for A1", () => blockedBy(a1.pid));
      await a1.commit();
      await until("B's insert has skipped c1 and waits for A2", () => blockedBy(a2.pid));
      await finish(a1.executionId);
      await a2.commit();
      const { value, error } = await answer;
      expect(error).toBeNull();
      // Rows in the order given: c2 first.
      expect(value![0]).toEqual({ ok: false, reason: 'ACTIVE_EXECUTION', executionId: a2.executionId });
      expect(value![1]).toMatchObject({ ok: true, created: true });
      const c1Runs = await executionsOf(c1!.id);
      expect(c1Runs.map((e) => [e.id, e.status])).toEqual([
        [a1.executionId, 'CANCELLED'],
        [(value![1] as { executionId: string }).executionId, 'RUNNING'],
      ]);
      await expectNoViolations(t.db, 'batch');
    } finally {
      await closeDb(b.db);
    }
  });

  describe('a single enrollment, held between its insert and its re-check', () => {
    let b: Held;
    beforeAll(async () => {
      b = await heldSession();
    });
    afterAll(async () => b?.close());

    it('allowReentry: enrolled on a retry of the insert', async () => {
      const wf = await reentry();
      const contact = await newContact();
      const { answer, winners } = await loseInserts(b, wf.id, contact.id, 1, () =>
        enroll(b.db, { projectId, workflowId: wf.id, contactId: contact.id }),
      );
      const result = valueOf(answer);
      expect(result).toMatchObject({ ok: true, created: true });
      expect((await executionsOf(contact.id)).map((e) => [e.id, e.status])).toEqual([
        [winners[0], 'CANCELLED'],
        [(result as { executionId: string }).executionId, 'RUNNING'],
      ]);
      await expectNoViolations(t.db, 'single');
    });

    it('losing every attempt: ACTIVE_EXECUTION naming the last winner, nothing inserted', async () => {
      expect(ENROLL_INSERT_ATTEMPTS, 'a bounded number of inserts, more than one').toBeGreaterThan(1);
      expect(ENROLL_INSERT_ATTEMPTS).toBeLessThanOrEqual(5);
      const wf = await reentry();
      const contact = await newContact();
      const { answer, winners } = await loseInserts(b, wf.id, contact.id, ENROLL_INSERT_ATTEMPTS, () =>
        enroll(b.db, { projectId, workflowId: wf.id, contactId: contact.id }),
      );
      expect(valueOf(answer)).toEqual({ ok: false, reason: 'ACTIVE_EXECUTION', executionId: winners.at(-1) });
      expect((await executionsOf(contact.id)).map((e) => e.id)).toEqual(winners);
      await expectNoViolations(t.db, 'exhausted');
    });

    it('allowReentry=false: REENTRY_BLOCKED naming the finished execution (it blocks forever)', async () => {
      const wf = await workflowFrom(t.db, projectId, delayWorkflow(3600, { allowReentry: false }));
      const contact = await newContact();
      const { answer, winners } = await loseInserts(b, wf.id, contact.id, 1, () =>
        enroll(b.db, { projectId, workflowId: wf.id, contactId: contact.id }),
      );
      expect(valueOf(answer)).toEqual({ ok: false, reason: 'REENTRY_BLOCKED', executionId: winners[0] });
      expect((await executionsOf(contact.id)).map((e) => e.id)).toEqual(winners);
    });

    it('an event-triggered enrollment (sourceEventId): enrolled on a retry, the dispatch does not fail', async () => {
      const name = `signup-${randomBytes(3).toString('hex')}`;
      const wf = await workflowFrom(t.db, projectId, { ...delayWorkflow(3600, { allowReentry: true }), trigger: 'EVENT', triggerEvent: name });
      const contact = await newContact();
      const stored = await storeEvent(t.db, { projectId, name, contactId: contact.id }, 0);
      const eventId = (stored as { eventId: string }).eventId;
      const { answer, winners } = await loseInserts(b, wf.id, contact.id, 1, () =>
        dispatchEvent(createEngineContext(b.db, { owner: 'held-dispatcher' }), eventId),
      );
      const summary = valueOf(answer);
      expect(summary?.enrollments).toEqual([{ workflowId: wf.id, result: expect.objectContaining({ ok: true, created: true }) }]);
      const runs = await executionsOf(contact.id);
      expect(runs.map((e) => [e.id, e.status, e.sourceEventId])).toEqual([
        [winners[0], 'CANCELLED', null],
        [(summary!.enrollments[0]!.result as { executionId: string }).executionId, 'RUNNING', eventId],
      ]);
      const [event] = await t.query(`SELECT "processedAt", "dispatchAttempts", "lastError" FROM "Event" WHERE id = $1`, [eventId]);
      expect(event).toMatchObject({ lastError: null });
      expect(event.processedAt).not.toBeNull();
      await expectNoViolations(t.db, 'event');
    });

    it('enrollments.enroll answers the new execution, not INTERNAL_SERVER_ERROR', async () => {
      const wf = await reentry();
      const contact = await newContact();
      const caller = callerFor(b.db, marketer);
      const { answer, winners } = await loseInserts(b, wf.id, contact.id, 1, () =>
        caller.enrollments.enroll({ workflowId: wf.id, contactId: contact.id }),
      );
      const { executionId } = valueOf(answer);
      expect((await executionsOf(contact.id)).map((e) => e.id)).toEqual([winners[0], executionId]);
    });

    it('enrollments.enroll losing every attempt: CONFLICT ACTIVE_EXECUTION naming the last winner', async () => {
      expect(ENROLL_INSERT_ATTEMPTS, 'a bounded number of inserts, more than one').toBeGreaterThan(1);
      const wf = await reentry();
      const contact = await newContact();
      const caller = callerFor(b.db, marketer);
      const { answer, winners } = await loseInserts(b, wf.id, contact.id, ENROLL_INSERT_ATTEMPTS, () =>
        caller.enrollments.enroll({ workflowId: wf.id, contactId: contact.id }),
      );
      const error = await expectCode(answer.status === 'fulfilled' ? Promise.resolve(answer.value) : Promise.reject(answer.reason), 'CONFLICT');
      expect((error.cause as { conflict?: unknown }).conflict).toEqual({ reason: 'ACTIVE_EXECUTION', executionId: winners.at(-1) });
    });
  });

  // Real concurrency, no forcing: enrollers of one contact into an allowReentry workflow
  // while cancellers end whatever execution of it is active, as fast as they can. Every
  // call answers (none throws), every answer is typed and names an execution that exists,
  // and I1 (and the rest) hold after every round. The cancellers use the engine's cancel
  // claim itself: the operator's audited repair takes a transaction of several statements
  // and seldom lands between an insert and its re-check (this one does, in a few percent
  // of the calls: on 444286c about 6% of them threw), so I8 (manual actions audited) is
  // not this scenario's business.
  it('enrollers and cancellers of one contact at once: every call answered, I1 holds', async () => {
    const ENROLLERS = 5;
    const CALLS = 4;
    const r: Racers = await racers(t.url, ENROLLERS + 2);
    try {
      const wf = await reentry();
      for (let round = 0; round < ROUNDS; round++) {
        const contact = await newContact();
        let finished = 0;
        const settled = await r.race(async (db, i): Promise<EnrollResult[]> => {
          if (i < ENROLLERS) {
            const results: EnrollResult[] = [];
            try {
              for (let n = 0; n < CALLS; n++) results.push(await enroll(db, { projectId, workflowId: wf.id, contactId: contact.id }));
            } finally {
              finished++;
            }
            return results;
          }
          while (finished < ENROLLERS) {
            const active = await db.$queryRaw<{ id: string; version: number }[]>`
              SELECT id, version FROM "WorkflowExecution"
               WHERE "workflowId" = ${wf.id}::uuid AND "contactId" = ${contact.id}::uuid AND status IN ('RUNNING', 'WAITING')`;
            for (const e of active) await cancelExecution(db, { executionId: e.id, expectedVersion: e.version, reason: 'race: cancelled' });
          }
          return [];
        });
        const results = fulfilled(settled).flat();
        expect(results, `round ${round}`).toHaveLength(ENROLLERS * CALLS);
        const ids = new Set((await executionsOf(contact.id)).map((e) => e.id));
        for (const res of results) {
          if (res.ok) expect(res.created, `round ${round}`).toBe(true);
          else expect(res.reason, `round ${round}`).toBe('ACTIVE_EXECUTION');
          expect(ids.has((res as { executionId: string }).executionId), `round ${round}: names an execution that exists`).toBe(true);
        }
        // Nothing accepted is lost, nothing made unanswered: the contact's executions are the calls' successes.
        const created = new Set(results.filter((res) => res.ok).map((res) => (res as { executionId: string }).executionId));
        expect(created, `round ${round}`).toEqual(ids);
        const bad = (await checkInvariants(t.db)).filter((inv) => inv.id !== 'I8' && inv.violations > 0);
        expect(bad, `round ${round}: ${JSON.stringify(bad)}`).toEqual([]);
      }
    } finally {
      await r.close();
    }
  });
});
