import { TRPCError } from '@trpc/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enroll } from '../../server/engine/enrollment';
import type { BulkProgress } from '../../server/repair/bulk';
import type { Actor } from '../../server/auth/actor';
import { actorFor, callerFor } from '../support/callers';
import { freshDatabase, type TestDatabase } from '../support/database';
import { runStepsOnly } from '../support/drive';
import { createProject, stepId, waitWorkflow, workflowFrom } from '../support/fixtures';

// Bulk repair over the router: repair.stuckGroups for every role, and
// repair.applyManyLive, the streaming bulk repair the console watches over SSE. Stopping
// the stream stops the run between rows (rows done stay done) and the run's audit entry
// says it was interrupted; a reconnect never restarts a run.

let t: TestDatabase;
let projectId: string;
let operator: Actor;
let workflowId: string;
let waitStep: string;

beforeAll(async () => {
  // Stuck means "past its due time" at once, so the test need not wait out a grace period.
  process.env.STUCK_GRACE_SECONDS = '0';
  t = await freshDatabase();
  projectId = (await createProject(t.db)).id;
  operator = actorFor(projectId, 'OPERATOR');
  const wf = await workflowFrom(t.db, projectId, waitWorkflow({ name: 'live-bulk' }, 0));
  workflowId = wf.id;
  waitStep = await stepId(t.db, wf.id, 'wait');
  for (let i = 0; i < 3; i++) await enroll(t.db, { projectId, workflowId, email: `live-${i}@example.com` });
  await runStepsOnly(t.db);
  await new Promise((r) => setTimeout(r, 50));
});
afterAll(async () => t?.drop());

/** A tracked event's payload, as the in-process caller yields it ([id, data, …]). */
const payload = (event: unknown): BulkProgress => (Array.isArray(event) ? event[1] : (event as { data: BulkProgress }).data) as BulkProgress;

const input = () => ({
  filter: { reason: 'WAIT_OVERDUE' as const, workflowId, stepId: waitStep, errorPattern: null },
  action: 'FORCE_TIMEOUT' as const,
  reason: 'live bulk test',
});

const runEntries = () => t.db.auditEntry.findMany({ where: { action: 'repair.applyMany', actor: operator.id }, orderBy: { at: 'asc' } });

describe('repair.applyManyLive', () => {
  it('stuckGroups answers every role, with the group the live run then repairs', async () => {
    const { groups } = await callerFor(t.db, actorFor(projectId, 'VIEWER')).repair.stuckGroups({ workflowId });
    expect(groups).toHaveLength(1);
    expect(groups[0]).toMatchObject({ reason: 'WAIT_OVERDUE', count: 3, stepId: waitStep, errorPattern: null, stepName: 'Wait for purchase' });
  });

  it('stopping the stream after a row stops the run: that row stays done, the others untouched, the run audited as interrupted', async () => {
    const seen: BulkProgress[] = [];
    for await (const event of await callerFor(t.db, operator).repair.applyManyLive(input())) {
      seen.push(payload(event));
      if (payload(event).type === 'item') break;
    }
    expect(seen.map((p) => p.type)).toEqual(['selected', 'item']);
    expect(seen[0]).toEqual({ type: 'selected', total: 3 });
    const forced = await t.db.stepExecution.count({ where: { stepId: waitStep, resolvedBy: 'OPERATOR' } });
    expect(forced).toBe(1);
    const [entry] = await runEntries();
    expect(entry).toMatchObject({ outcome: 'APPLIED', reason: 'live bulk test', after: { action: 'FORCE_TIMEOUT', matched: 3, applied: 1, interrupted: true } });
  });

  it('run again, it repairs what is left of the group to the end and says so', async () => {
    const seen: BulkProgress[] = [];
    for await (const event of await callerFor(t.db, operator).repair.applyManyLive(input())) seen.push(payload(event));
    expect(seen.map((p) => p.type)).toEqual(['selected', 'item', 'item', 'finished']);
    expect(seen.at(-1)).toEqual({ type: 'finished', matched: 2, done: 2, interrupted: false });
    expect(await t.db.stepExecution.count({ where: { stepId: waitStep, resolvedBy: 'OPERATOR' } })).toBe(3);
    const entries = await runEntries();
    expect(entries.map((e) => (e.after as { interrupted: boolean }).interrupted)).toEqual([true, false]);
  });

  it('a reconnect (lastEventId) is refused instead of starting the run again', async () => {
    const stream = await callerFor(t.db, operator).repair.applyManyLive({ ...input(), lastEventId: '7' });
    const attempt = (async () => {
      for await (const _ of stream) void _;
    })();
    await expect(attempt).rejects.toSatisfy((e) => e instanceof TRPCError && e.code === 'PRECONDITION_FAILED');
  });

  it('is for operators: a viewer is FORBIDDEN', async () => {
    await expect(callerFor(t.db, actorFor(projectId, 'VIEWER')).repair.applyManyLive(input())).rejects.toSatisfy(
      (e) => e instanceof TRPCError && e.code === 'FORBIDDEN',
    );
  });
});
