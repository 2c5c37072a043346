import { TRPCError } from '@trpc/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngineContext } from '../../server/engine/context';
import { runWorkerOnce } from '../../server/engine/worker';
import { throughput } from '../../server/read/overview';
import { actorFor, callerFor, rejection } from '../support/callers';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createContact, createProject, stepId, versionId, waitWorkflow, workflowFrom } from '../support/fixtures';

// The overview's own reads: throughput per minute over the last hour, and the
// latest failures. Counts are checked at the edges of their minutes and across projects;
// bad input is a BAD_REQUEST naming the field, never a 500.

let t: TestDatabase;

beforeAll(async () => {
  t = await freshDatabase();
});
afterAll(async () => t?.drop());

function zodPaths(error: TRPCError): string[] {
  return (error.cause as unknown as { issues: { path: (string | number)[] }[] }).issues.map((i) => i.path.join('.'));
}

/** A project with a workflow and a contact, and a way to write rows at chosen times. */
async function projectWithRows(name: string) {
  const project = await createProject(t.db, name);
  const workflow = await workflowFrom(t.db, project.id, waitWorkflow({ name: `${name} flow`, allowReentry: true }));
  const contact = await createContact(t.db, project.id, `${name}@example.com`);
  const hello = await stepId(t.db, workflow.id, 'hello');
  const wait = await stepId(t.db, workflow.id, 'wait');
  const version = await versionId(t.db, workflow.id);
  return {
    projectId: project.id,
    workflowId: workflow.id,
    contactId: contact.id,
    /** An execution started at `at` (one per call: re-entry is allowed, none is active). */
    async execution(at: Date, status = 'COMPLETED', lastError: string | null = null): Promise<string> {
      const [row] = await t.query(
        `INSERT INTO "WorkflowExecution"("projectId", "workflowId", "workflowVersionId", "contactId", status, "currentStepId", "startedAt", "updatedAt", "finishedAt", "lastError")
         VALUES ($1, $2, $8, $3, $4, $5, $6, $6, $6, $7) RETURNING id`,
        [project.id, workflow.id, contact.id, status, hello, at, lastError, version],
      );
      return row.id as string;
    },
    /** A step execution of a fresh execution, finished at `finishedAt` (null: still waiting). */
    async step(finishedAt: Date | null): Promise<string> {
      const executionId = await this.execution(new Date(Date.UTC(2020, 0, 1)));
      const [row] = await t.query(
        `INSERT INTO "StepExecution"("executionId", "stepId", status, "startedAt", "finishedAt")
         VALUES ($1, $2, $3, $4, $5) RETURNING id`,
        [executionId, finishedAt ? hello : wait, finishedAt ? 'COMPLETED' : 'WAITING', new Date(Date.UTC(2020, 0, 1)), finishedAt],
      );
      return row.id as string;
    },
    async event(at: Date, deadAt: Date | null = null, lastError: string | null = null): Promise<string> {
      const [row] = await t.query(
        `INSERT INTO "Event"("projectId", "contactId", name, "createdAt", "deadAt", "lastError", "dispatchAttempts")
         VALUES ($1, $2, 'purchase', $3, $4, $5, $6) RETURNING id`,
        [project.id, contact.id, at, deadAt, lastError, deadAt ? 5 : 0],
      );
      return row.id as string;
    },
    async failedMessage(at: Date, error: string): Promise<string> {
      const executionId = await this.execution(at);
      const [step] = await t.query(
        `INSERT INTO "StepExecution"("executionId", "stepId", status, "startedAt", "finishedAt") VALUES ($1, $2, 'COMPLETED', $3, $3) RETURNING id`,
        [executionId, hello, at],
      );
      const [row] = await t.query(
        `INSERT INTO "Message"("projectId", "executionId", "stepExecutionId", "to", subject, body, status, error, "createdAt")
         VALUES ($1, $2, $3, $4, 'Hello', 'Hi', 'FAILED', $5, $6) RETURNING id`,
        [project.id, executionId, step.id, `${name}@example.com`, error, at],
      );
      return row.id as string;
    },
  };
}

describe('overview.throughput', () => {
  // 12:30:40 UTC: the window of 60 minutes is [11:31:00, 12:31:00).
  const now = new Date('2026-06-01T12:30:40.000Z');
  const since = new Date('2026-06-01T11:31:00.000Z');
  const ms = (base: Date, delta: number) => new Date(base.getTime() + delta);

  it('counts each kind in its minute: the first instant of a minute is in it, the last millisecond before is not', async () => {
    const p = await projectWithRows('edges');
    const other = await projectWithRows('edges-other');
    // Enrollments: one just before the window (not counted), one at its first instant, two in
    // the last millisecond of the first minute, one at the start of the current minute.
    for (const at of [ms(since, -1), since, ms(since, 59_999), ms(since, 59_999), new Date('2026-06-01T12:30:00.000Z')]) await p.execution(at);
    // Steps: finished at 11:45:00.000 and 11:45:59.999 (one minute), 11:46:00.000 (the next),
    // one still waiting (never counted), one finished in another project (not ours).
    for (const at of [new Date('2026-06-01T11:45:00.000Z'), new Date('2026-06-01T11:45:59.999Z'), new Date('2026-06-01T11:46:00.000Z'), null]) await p.step(at);
    await other.step(new Date('2026-06-01T11:45:30.000Z'));
    // Events: one at the end of the window (12:30:59.999, still the current minute), one
    // after it (not counted), and another project's in the same minute.
    await p.event(new Date('2026-06-01T12:30:59.999Z'));
    await p.event(new Date('2026-06-01T12:31:00.000Z'));
    await other.event(new Date('2026-06-01T12:30:10.000Z'));
    await other.execution(since);

    const result = await throughput(t.db, { projectId: p.projectId, minutes: 60, now });
    expect(result.buckets).toHaveLength(60);
    expect(result.since).toEqual(since);
    expect(result.until).toEqual(new Date('2026-06-01T12:31:00.000Z'));
    expect(result.buckets[0]!.at).toEqual(since);
    expect(result.buckets[59]!.at).toEqual(new Date('2026-06-01T12:30:00.000Z'));
    // Consecutive minutes, no gaps.
    expect(result.buckets.every((b, i) => b.at.getTime() === since.getTime() + i * 60_000)).toBe(true);

    const at = (iso: string) => result.buckets.find((b) => b.at.toISOString() === iso)!;
    expect(at('2026-06-01T11:31:00.000Z').enrollments).toBe(3);
    expect(at('2026-06-01T12:30:00.000Z')).toMatchObject({ enrollments: 1, eventsTracked: 1 });
    expect(at('2026-06-01T11:45:00.000Z').stepsRun).toBe(2);
    expect(at('2026-06-01T11:46:00.000Z').stepsRun).toBe(1);
    // Every other minute is present and zero.
    const busy = ['2026-06-01T11:31:00.000Z', '2026-06-01T12:30:00.000Z', '2026-06-01T11:45:00.000Z', '2026-06-01T11:46:00.000Z'];
    for (const b of result.buckets.filter((b) => !busy.includes(b.at.toISOString()))) {
      expect(b, b.at.toISOString()).toMatchObject({ enrollments: 0, stepsRun: 0, eventsTracked: 0 });
    }
    expect(result.totals).toEqual({ enrollments: 4, stepsRun: 3, eventsTracked: 1 });

    // The other project sees only its own rows.
    const theirs = await throughput(t.db, { projectId: other.projectId, minutes: 60, now });
    expect(theirs.totals).toEqual({ enrollments: 1, stepsRun: 1, eventsTracked: 1 });
  });

  it('a window of one minute is the current minute only; of 180, three hours', async () => {
    const p = await projectWithRows('widths');
    await p.execution(new Date('2026-06-01T12:29:59.999Z'));
    await p.execution(new Date('2026-06-01T12:30:00.000Z'));
    await p.execution(new Date('2026-06-01T09:31:00.000Z'));
    const one = await throughput(t.db, { projectId: p.projectId, minutes: 1, now });
    expect(one.buckets).toHaveLength(1);
    expect(one.totals.enrollments).toBe(1);
    const three = await throughput(t.db, { projectId: p.projectId, minutes: 180, now });
    expect(three.buckets).toHaveLength(180);
    expect(three.buckets[0]!.at).toEqual(new Date('2026-06-01T09:31:00.000Z'));
    expect(three.totals.enrollments).toBe(3);
  });

  it('live through the router: an enrollment, the steps the worker runs and a tracked event show in the last hour', async () => {
    const project = await createProject(t.db, 'live');
    const workflow = await workflowFrom(t.db, project.id, waitWorkflow({ name: 'live flow' }));
    const marketer = callerFor(t.db, actorFor(project.id, 'MARKETER'));
    const viewer = callerFor(t.db, actorFor(project.id, 'VIEWER'));
    const empty = await viewer.overview.throughput();
    expect(empty.buckets).toHaveLength(60);
    expect(empty.totals).toEqual({ enrollments: 0, stepsRun: 0, eventsTracked: 0 });

    await marketer.enrollments.enroll({ workflowId: workflow.id, email: 'live@example.com' });
    await runWorkerOnce(createEngineContext(t.db));
    await marketer.events.track({ name: 'browsed', email: 'live@example.com' });
    const result = await viewer.overview.throughput({});
    expect(result.totals.enrollments).toBe(1);
    // trigger and hello ran; the wait is parked, not finished.
    expect(result.totals.stepsRun).toBe(2);
    expect(result.totals.eventsTracked).toBe(1);
    // Within the last two minutes (the test may straddle a minute boundary).
    const recent = result.buckets.slice(-2);
    expect(recent.reduce((n, b) => n + b.enrollments, 0)).toBe(1);
    const thirty = await viewer.overview.throughput({ minutes: 30 });
    expect(thirty.buckets).toHaveLength(30);
  });

  it('refuses a window outside 1..180 whole minutes with the field named; no session is UNAUTHORIZED', async () => {
    const project = await createProject(t.db, 'bad-throughput');
    const viewer = callerFor(t.db, actorFor(project.id, 'VIEWER'));
    for (const minutes of [0, 181, 1.5, -3, Number.NaN]) {
      const error = await rejection(viewer.overview.throughput({ minutes }));
      expect(error.code, String(minutes)).toBe('BAD_REQUEST');
      expect(zodPaths(error)).toEqual(['minutes']);
    }
    const error = await rejection(viewer.overview.throughput({ minutes: '60' as unknown as number }));
    expect(error.code).toBe('BAD_REQUEST');
    expect((await rejection(callerFor(t.db, null).overview.throughput())).code).toBe('UNAUTHORIZED');
  });
});

describe('overview.recentFailures', () => {
  it('lists FAILED executions, dead events and failed emails of the project, latest first, each with what to act on', async () => {
    const p = await projectWithRows('failing');
    const other = await projectWithRows('failing-other');
    const base = Date.now() - 3_600_000;
    const at = (minutes: number) => new Date(base + minutes * 60_000);
    const failedExecution = await p.execution(at(1), 'FAILED', 'step "hello" failed: SMTP 550 mailbox unavailable');
    await p.execution(at(2), 'COMPLETED');
    const deadEvent = await p.event(at(0), at(3), 'dispatch failed 5 times: connection refused');
    await p.event(at(4)); // tracked and processed in time: not a failure
    const failedMessage = await p.failedMessage(at(5), 'SMTP 421 try again later');
    await other.execution(at(6), 'FAILED', 'not yours');
    await other.event(at(6), at(6), 'not yours either');
    await other.failedMessage(at(6), 'nor this');

    const viewer = callerFor(t.db, actorFor(p.projectId, 'VIEWER'));
    const items = await viewer.overview.recentFailures();
    expect(items.map((i) => [i.kind, i.id])).toEqual([
      ['MESSAGE_FAILED', failedMessage],
      ['EVENT_DEAD', deadEvent],
      ['EXECUTION_FAILED', failedExecution],
    ]);
    const [message, event, execution] = items as [(typeof items)[number], (typeof items)[number], (typeof items)[number]];
    expect(execution).toMatchObject({
      executionId: failedExecution,
      workflowId: p.workflowId,
      workflowName: 'failing flow',
      stepName: 'Hello',
      contactId: p.contactId,
      contactEmail: 'failing@example.com',
      error: 'step "hello" failed: SMTP 550 mailbox unavailable',
      at: at(1),
    });
    expect(event).toMatchObject({ eventId: deadEvent, executionId: null, subject: 'purchase', attempts: 5, contactEmail: 'failing@example.com', at: at(3) });
    expect(message).toMatchObject({ workflowName: 'failing flow', stepName: 'Hello', subject: 'Hello', error: 'SMTP 421 try again later', at: at(5) });
    expect(message.executionId).toBeTruthy();
  });

  it('is bounded: at most `limit` across every kind, the latest kept', async () => {
    const p = await projectWithRows('many-failures');
    const base = Date.now() - 3_600_000;
    for (let i = 0; i < 12; i++) await p.execution(new Date(base + i * 1_000), 'FAILED', `failure ${i}`);
    for (let i = 0; i < 12; i++) await p.event(new Date(base), new Date(base + 500 + i * 1_000), `dead ${i}`);
    const viewer = callerFor(t.db, actorFor(p.projectId, 'VIEWER'));
    const ten = await viewer.overview.recentFailures();
    expect(ten).toHaveLength(10);
    expect(ten.map((i) => i.error)).toEqual([
      'dead 11', 'failure 11', 'dead 10', 'failure 10', 'dead 9', 'failure 9', 'dead 8', 'failure 8', 'dead 7', 'failure 7',
    ]);
    expect(await viewer.overview.recentFailures({ limit: 3 })).toHaveLength(3);
    expect(await viewer.overview.recentFailures({ limit: 50 })).toHaveLength(24);
  });

  it('nothing failed: an empty list', async () => {
    const project = await createProject(t.db, 'healthy');
    expect(await callerFor(t.db, actorFor(project.id, 'VIEWER')).overview.recentFailures()).toEqual([]);
  });

  it('refuses a limit outside 1..50 with the field named', async () => {
    const project = await createProject(t.db, 'bad-failures');
    const viewer = callerFor(t.db, actorFor(project.id, 'VIEWER'));
    for (const limit of [0, 51, 2.5]) {
      const error = await rejection(viewer.overview.recentFailures({ limit }));
      expect(error.code).toBe('BAD_REQUEST');
      expect(zodPaths(error)).toEqual(['limit']);
    }
    expect((await rejection(callerFor(t.db, null).overview.recentFailures())).code).toBe('UNAUTHORIZED');
  });
});
