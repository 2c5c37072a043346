import { describe, expect, it } from 'vitest';
import { TRPCError } from '@trpc/server';
import { actorFor } from '../../support/callers';
import { createProject, delayWorkflow, waitWorkflow } from '../../support/fixtures';
import { t, projectId, marketer, viewer, outsider, as, expectCode, conflictOf, auditOf, runWorkers, setUpRouterTests } from './support';

setUpRouterTests();

describe('workflows', () => {
  it('create validates through the engine: a bad graph is BAD_REQUEST with paths into the input, and writes nothing', async () => {
    const before = await t.db.workflow.count();
    const bad = waitWorkflow({ name: 'bad graph' });
    bad.transitions = [...bad.transitions, { from: 'hello', to: 'nowhere', branch: null }];
    const error = await expectCode(as(marketer).workflows.create(bad), 'BAD_REQUEST');
    const issues = (error.cause as unknown as { issues: { path: (string | number)[] }[] }).issues;
    expect(issues.map((i) => i.path.join('.'))).toContain('transitions.4.to');
    expect(await t.db.workflow.count()).toBe(before);
  });

  it('create stores the graph and audits it; get shows steps, transitions and how many executions stand at each step', async () => {
    const { id } = await as(marketer).workflows.create(waitWorkflow({ name: 'shape' }));
    expect((await auditOf(id)).map((e) => [e.action, e.outcome])).toEqual([['workflows.create', 'APPLIED']]);

    await as(marketer).enrollments.enroll({ workflowId: id, email: 'live1@example.com' });
    await as(marketer).enrollments.enroll({ workflowId: id, email: 'live2@example.com' });
    await runWorkers(); // both reach the wait and stay there
    await as(marketer).enrollments.enroll({ workflowId: id, email: 'live3@example.com' }); // stays at the trigger

    const wf = await as(viewer).workflows.get({ id });
    expect(wf.steps.map((s) => s.key)).toEqual(['start', 'hello', 'wait', 'thanks', 'reminder']);
    const live = Object.fromEntries(wf.steps.map((s) => [s.key, s.live]));
    expect(live).toEqual({ start: 1, hello: 0, wait: 2, thanks: 0, reminder: 0 });
    expect(wf.live).toBe(3);
    expect(wf.transitions).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ from: 'wait', to: 'thanks', branch: 'EVENT' }),
        expect.objectContaining({ from: 'wait', to: 'reminder', branch: 'TIMEOUT' }),
      ]),
    );
    await expectCode(as(outsider).workflows.get({ id }), 'NOT_FOUND');
  });

  it('a taken name is CONFLICT NAME_TAKEN naming the holder, audited as REJECTED; other projects may reuse it', async () => {
    const first = await as(marketer).workflows.create(delayWorkflow(1, { name: 'Newsletter' }));
    const error = await expectCode(as(marketer).workflows.create(delayWorkflow(1, { name: 'Newsletter' })), 'CONFLICT');
    expect(conflictOf(error)).toEqual({ reason: 'NAME_TAKEN', workflowId: first.id });
    expect((await auditOf(first.id)).map((e) => e.outcome)).toEqual(['APPLIED', 'REJECTED']);
    await expect(as(outsider).workflows.create(delayWorkflow(1, { name: 'Newsletter' }))).resolves.toHaveProperty('id');
  });

  it('two creates with one name at once: one workflow, one CONFLICT', async () => {
    const input = delayWorkflow(1, { name: 'Raced name' });
    const results = await Promise.allSettled([as(marketer).workflows.create(input), as(marketer).workflows.create(input)]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const lost = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect((lost.reason as TRPCError).code).toBe('CONFLICT');
    expect(await t.db.workflow.count({ where: { projectId, name: 'Raced name' } })).toBe(1);
  });

  it('list is per project, with step and execution counts; setEnabled toggles and audits, foreign ids are NOT_FOUND', async () => {
    const project = (await createProject(t.db)).id;
    const me = actorFor(project, 'MARKETER');
    const { id } = await as(me).workflows.create(delayWorkflow(3600, { name: 'only one' }));
    await as(me).enrollments.enroll({ workflowId: id, email: 'x@example.com' });
    const list = await as(me).workflows.list();
    expect(list.map((w) => w.name)).toEqual(['only one']);
    expect(list[0]).toMatchObject({ stepCount: 3, executions: { RUNNING: 1, WAITING: 0 } });

    expect(await as(me).workflows.setEnabled({ id, enabled: false })).toEqual({ id, enabled: false });
    expect((await as(me).workflows.list())[0]!.enabled).toBe(false);
    const entries = await t.db.auditEntry.findMany({ where: { targetId: id, action: 'workflows.setEnabled' } });
    expect(entries).toMatchObject([{ outcome: 'APPLIED', before: { enabled: true }, after: { enabled: false } }]);

    await expectCode(as(outsider).workflows.setEnabled({ id, enabled: true }), 'NOT_FOUND');
    expect((await t.db.workflow.findUniqueOrThrow({ where: { id } })).enabled).toBe(false);
    await expectCode(as(actorFor(project, 'VIEWER')).workflows.setEnabled({ id, enabled: true }), 'FORBIDDEN');
  });
});
