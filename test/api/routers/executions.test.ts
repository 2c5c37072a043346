import { beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../../server/auth/actor';
import { actorFor } from '../../support/callers';
import { createContact, createProject, delayWorkflow, versionId, waitWorkflow, workflowFrom } from '../../support/fixtures';
import { t, otherProjectId, outsider, as, expectCode, runWorkers, setUpRouterTests } from './support';

setUpRouterTests();

describe('executions', () => {
  let project: string;
  let me: Actor;
  let workflowA: string;
  let workflowB: string;
  const ids: string[] = [];

  beforeAll(async () => {
    project = (await createProject(t.db)).id;
    me = actorFor(project, 'OPERATOR');
    workflowA = (await workflowFrom(t.db, project, waitWorkflow({ name: 'A' }))).id;
    workflowB = (await workflowFrom(t.db, project, delayWorkflow(3600, { name: 'B' }))).id;
    const versionOf = { [workflowA]: await versionId(t.db, workflowA), [workflowB]: await versionId(t.db, workflowB) };
    // Ten executions a second apart, alternating workflows; the newest last.
    for (let i = 0; i < 10; i++) {
      const contact = await createContact(t.db, project, `person${i}@example.com`);
      const workflowId = i % 2 === 0 ? workflowA : workflowB;
      const { id } = await t.db.workflowExecution.create({
        data: {
          projectId: project,
          workflowId,
          workflowVersionId: versionOf[workflowId]!,
          contactId: contact.id,
          status: i < 6 ? 'COMPLETED' : 'EXITED',
          startedAt: new Date(Date.UTC(2026, 1, 1, 0, 0, i)),
        },
      });
      ids.push(id);
    }
  });

  it('list pages newest first by keyset and filters by workflow, status, contact (id or email prefix) and start time', async () => {
    const caller = as(me);
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const result = await caller.executions.list({ limit: 4, cursor });
      seen.push(...result.items.map((e) => e.id));
      cursor = result.nextCursor ?? undefined;
    } while (cursor);
    expect(seen).toEqual([...ids].reverse());

    const byWorkflow = await caller.executions.list({ workflowId: workflowB });
    expect(byWorkflow.items.map((e) => e.id)).toEqual([ids[9], ids[7], ids[5], ids[3], ids[1]]);
    expect(byWorkflow.items[0]).toMatchObject({ workflowName: 'B', contactEmail: 'person9@example.com', status: 'EXITED' });
    const exitedInA = await caller.executions.list({ workflowId: workflowA, status: ['EXITED'] });
    expect(exitedInA.items.map((e) => e.id)).toEqual([ids[8], ids[6]]);
    const byPrefix = await caller.executions.list({ contact: 'PERSON3' });
    expect(byPrefix.items.map((e) => e.id)).toEqual([ids[3]]);
    const contactId = (await t.db.workflowExecution.findUniqueOrThrow({ where: { id: ids[4]! } })).contactId;
    expect((await caller.executions.list({ contact: contactId })).items.map((e) => e.id)).toEqual([ids[4]]);
    const window = await caller.executions.list({ since: new Date(Date.UTC(2026, 1, 1, 0, 0, 2)), until: '2026-02-01T00:00:05.000Z' });
    expect(window.items.map((e) => e.id)).toEqual([ids[4], ids[3], ids[2]]);

    const foreignContact = await createContact(t.db, otherProjectId, 'foreign-filter@example.com');
    await expectCode(caller.executions.list({ contact: foreignContact.id }), 'NOT_FOUND');
    await expectCode(caller.executions.list({ workflowId: (await workflowFrom(t.db, otherProjectId, delayWorkflow(1))).id }), 'NOT_FOUND');
    await expectCode(caller.executions.list({ limit: 201 }), 'BAD_REQUEST');
    await expectCode(caller.executions.list({ status: ['SLEEPING' as 'RUNNING'] }), 'BAD_REQUEST');
  });

  it('stuck filters use the same predicates as repair.stuck; stats count by status and by stuck reason', async () => {
    const caller = as(me);
    const { executionId } = await caller.enrollments.enroll({ workflowId: workflowA, email: 'overdue@example.com' });
    await runWorkers();
    const wait = await t.db.stepExecution.findFirstOrThrow({ where: { executionId, status: 'WAITING' } });
    await t.db.stepExecution.update({ where: { id: wait.id }, data: { dueAt: new Date(Date.now() - 60_000) } });

    const stuck = await caller.executions.list({ stuck: ['WAIT_OVERDUE'] });
    expect(stuck.items.map((e) => e.id)).toEqual([executionId]);
    expect((await caller.executions.list({ stuck: ['FAILED', 'LEASE_EXPIRED'] })).items).toEqual([]);
    const listed = await caller.repair.stuck({ reason: 'WAIT_OVERDUE' });
    expect(listed.items.map((i) => i.executionId)).toEqual([executionId]);
    expect(listed.items[0]!.description).toMatch(/timeout/);

    const stats = await caller.executions.stats();
    expect(stats.byStatus).toEqual({ RUNNING: 0, WAITING: 1, COMPLETED: 6, EXITED: 4, FAILED: 0, CANCELLED: 0 });
    expect(stats.byStuckReason.WAIT_OVERDUE).toBe(1);
    expect(stats.total).toBe(11);
    expect((await caller.executions.stats({ workflowId: workflowB })).byStatus).toMatchObject({ COMPLETED: 3, EXITED: 2, WAITING: 0 });
    await expectCode(as(outsider).executions.stats({ workflowId: workflowB }), 'NOT_FOUND');
  });

  it('get tells the story: step timeline, messages, the resuming event, audit entries and current stuck reasons', async () => {
    const caller = as(me);
    const { executionId } = await caller.enrollments.enroll({ workflowId: workflowA, email: 'story@example.com' });
    await runWorkers();
    const { eventId } = await caller.events.track({ name: 'purchase', email: 'story@example.com' });
    await runWorkers();

    const story = await caller.executions.get({ id: executionId });
    expect(story).toMatchObject({ id: executionId, status: 'COMPLETED', workflowName: 'A', contactEmail: 'story@example.com' });
    expect(story.steps.map((s) => [s.stepKey, s.stepType, s.status])).toEqual([
      ['start', 'TRIGGER', 'COMPLETED'],
      ['hello', 'SEND_EMAIL', 'COMPLETED'],
      ['wait', 'WAIT_FOR_EVENT', 'COMPLETED'],
      ['thanks', 'SEND_EMAIL', 'COMPLETED'],
    ]);
    expect(story.steps[2]).toMatchObject({ resolvedBy: 'EVENT', resolvedBranch: 'EVENT', resumeEventId: eventId, attempt: 1 });
    expect(story.steps[2]!.dueAt).toBeInstanceOf(Date);
    expect(story.messages.map((m) => m.subject)).toEqual(['Hello story@example.com', 'Thanks']);
    expect(story.events).toMatchObject([{ id: eventId, name: 'purchase', role: 'resumed' }]);
    expect(story.audit.map((a) => a.action)).toEqual(['enrollments.enroll']);
    expect(story.stuck).toEqual([]);

    await expectCode(as(outsider).executions.get({ id: executionId }), 'NOT_FOUND');
  });
});
