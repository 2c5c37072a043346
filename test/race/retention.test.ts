import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngineContext } from '../../server/engine/context';
import { enrollBatch } from '../../server/engine/enrollment';
import type { MailTransport } from '../../server/engine/transport';
import { runWorkerOnce } from '../../server/engine/worker';
import { addRemoved, type Removed } from '../../server/retention/policy';
import { sweep } from '../../server/retention/sweep';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createProject, twoEmailWorkflow, workflowFrom } from '../support/fixtures';
import { expectNoViolations, fulfilled, racers, ROUNDS, type Racers } from '../support/race';
import { FAST, rowsOf, seedFinished } from '../support/retention';

// Retention under real concurrency (docs/deploy.md, "Retention"): several sweepers at once
// on their own connections remove each row exactly once and never fail; a sweep beside
// workers that are running executions and sending emails (some of them queued 40 days ago
// and only now sent) breaks no invariant, loses no email and removes nothing in flight.

let t: TestDatabase;
let r: Racers;
const GRACE = 120;
const DAYS = { days: 30, graceSeconds: GRACE };

beforeAll(async () => {
  t = await freshDatabase();
  r = await racers(t.url, 4);
});
afterAll(async () => {
  await r.close();
  await t.drop();
});

/** Old processed events of the project's contacts, and old audit entries about nothing kept. */
async function seedOldEventsAndAudit(projectId: string, n: number): Promise<void> {
  await t.query(
    `INSERT INTO "Event" ("projectId", "contactId", name, "createdAt", "processedAt", "nextDispatchAt", "dispatchAttempts")
     SELECT $1, c.id, 'page_view', now() - interval '40 days', now() - interval '40 days', now() - interval '40 days', 1
       FROM (SELECT id FROM "Contact" WHERE "projectId" = $1 ORDER BY id LIMIT $2) c`,
    [projectId, n],
  );
  await t.query(
    `INSERT INTO "AuditEntry" ("projectId", actor, action, "targetType", "targetId", outcome, at)
     SELECT $1, 'system', 'contacts.upsert', 'contact', gen_random_uuid()::text, 'APPLIED', now() - interval '40 days' - g * interval '1 second'
       FROM generate_series(1, $2::int) g`,
    [projectId, n],
  );
}

describe('several sweepers at once', () => {
  it(`remove each row exactly once between them, never fail, and leave every invariant holding (${ROUNDS} rounds)`, { timeout: 600_000 }, async () => {
    const n = 12;
    let contended = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const projectId = (await createProject(t.db, `sweepers-${round}`)).id;
      await seedFinished(t, t.db, projectId, n, 40);
      await seedOldEventsAndAudit(projectId, n);
      const timing = { ...FAST, executionBatch: 2 + (round % 3), rowBatch: 3 };
      const results = fulfilled(
        await r.race((db, i) => (i % 2 === 0 ? sweep(db, 'history', { ...DAYS, timing }) : sweep(db, 'history', { ...DAYS, timing }).then(async (h) => {
          const a = await sweep(db, 'audit', { ...DAYS, timing });
          return { ...h, removed: { ...h.removed, ...a.removed } };
        }))),
      );
      const sum: Removed = {};
      for (const result of results) addRemoved(sum, result.removed);
      const label = `round ${round}`;
      // Each row removed by exactly one sweeper: the sums are the seeded rows, never more.
      expect(sum, label).toMatchObject({ executions: n, steps: 2 * n, emails: n, events: n });
      // The two audit sweepers (racers 1 and 3) between them remove each old entry once.
      expect(sum.auditEntries, label).toBe(n);
      expect(await rowsOf(t, projectId), label).toMatchObject({ executions: 0, steps: 0, emails: 0, events: 0, auditEntries: 0 });
      if (results.filter((x) => (x.removed.executions ?? 0) > 0).length > 1) contended++;
      await expectNoViolations(t.db, label);
    }
    // The sweepers really did share the work (not one after the other) in some rounds.
    expect(contended).toBeGreaterThan(0);
  });
});

describe('a sweep beside workers at work', () => {
  it(`removes only what is done, loses no email, sends none twice, breaks no invariant (${Math.max(5, Math.round(ROUNDS / 5))} rounds)`, { timeout: 600_000 }, async () => {
    const rounds = Math.max(5, Math.round(ROUNDS / 5));
    for (let round = 0; round < rounds; round++) {
      const label = `round ${round}`;
      const projectId = (await createProject(t.db, `beside-${round}`)).id;
      // 40 old executions done with; 3 more whose emails were queued 40 days ago (the
      // sender was down) and are being sent during the whole sweep: in flight, to be kept.
      await seedFinished(t, t.db, projectId, 40, 40);
      const delayed = await seedFinished(t, t.db, projectId, 3, 40);
      const queued = await t.query(
        `UPDATE "Message" m SET status = 'QUEUED', "sentAt" = NULL, "to" = 'late@example.com' FROM "WorkflowExecution" e
          WHERE e.id = m."executionId" AND e."workflowId" = $1 RETURNING m.id`,
        [delayed],
      );
      // And new executions, enrolled now, for the workers to run while the sweep goes.
      const workflow = await workflowFrom(t.db, projectId, twoEmailWorkflow());
      const enrolled = await enrollBatch(t.db, projectId, workflow.id, Array.from({ length: 12 }, (_, i) => ({ email: `new-${round}-${i}@example.com` })));
      expect(enrolled.every((e) => e.ok)).toBe(true);

      // The late emails' provider answers once the sweep is over; the new ones' at once.
      let sweepOver!: () => void;
      const over = new Promise<void>((resolve) => (sweepOver = resolve));
      const sent: string[] = [];
      const transport: MailTransport = {
        name: 'counting',
        send: async (m) => {
          if (m.to === 'late@example.com') await over;
          sent.push(m.to);
          return { providerId: `test:${sent.length}` };
        },
      };
      const results = await r.race(async (db, i) => {
        if (i === 0) return sweep(db, 'history', { ...DAYS, timing: { executionBatch: 3, rowBatch: 3, minPauseMs: 5, pauseRatio: 0 } }).finally(sweepOver);
        return runWorkerOnce(createEngineContext(db, { transport }), { concurrency: 4 });
      });
      const [swept] = fulfilled(results) as [Awaited<ReturnType<typeof sweep>>];
      await runWorkerOnce(createEngineContext(t.db, { transport }));

      // Every late email was sent once and recorded SENT: its execution and email were kept.
      const emails = await t.query(`SELECT status FROM "Message" WHERE id = ANY($1::uuid[])`, [queued.map((q) => q.id)]);
      expect(emails.map((e) => e.status), label).toEqual(['SENT', 'SENT', 'SENT']);
      expect(sent.filter((to) => to === 'late@example.com'), label).toHaveLength(3);
      // The new executions ran to their end with both emails, each sent once.
      const fresh = await t.query(
        `SELECT e.status, (SELECT count(*)::int FROM "Message" m WHERE m."executionId" = e.id AND m.status = 'SENT') AS sent
           FROM "WorkflowExecution" e WHERE e."workflowId" = $1`,
        [workflow.id],
      );
      expect(fresh, label).toEqual(fresh.map(() => ({ status: 'COMPLETED', sent: 2 })));
      expect(fresh, label).toHaveLength(12);
      expect(sent.filter((to) => to.startsWith(`new-${round}-`)), label).toHaveLength(24);
      // What was done with is gone; what was in flight is left for the next sweep.
      expect(swept.removed.executions, label).toBe(40);
      expect(await rowsOf(t, projectId), label).toMatchObject({ executions: 3 + 12 });
      await expectNoViolations(t.db, label);
      const next = await sweep(t.db, 'history', { ...DAYS, timing: FAST });
      expect(next.removed.executions, label).toBe(3);
    }
  });
});
