import { describe, expect, it } from 'vitest';
import { actorFor } from '../../support/callers';
import { createContact, createProject, delayWorkflow, workflowFrom } from '../../support/fixtures';
import { t, projectId, otherProjectId, marketer, viewer, outsider, as, expectCode, auditOf, setUpRouterTests } from './support';

setUpRouterTests();

describe('contacts', () => {
  it('upsert creates, then merges data into the same contact whatever the email case, auditing each call', async () => {
    const created = await as(marketer).contacts.upsert({ email: 'Ada@Example.com', data: { plan: 'free' } });
    expect(created).toMatchObject({ email: 'Ada@Example.com', data: { plan: 'free' }, created: true });
    const merged = await as(marketer).contacts.upsert({ email: 'ada@example.com', data: { seats: 3 } });
    expect(merged).toMatchObject({ id: created.id, email: 'Ada@Example.com', data: { plan: 'free', seats: 3 }, created: false });

    const entries = await auditOf(created.id);
    expect(entries.map((e) => [e.action, e.outcome, e.actor])).toEqual([
      ['contacts.upsert', 'APPLIED', marketer.id],
      ['contacts.upsert', 'APPLIED', marketer.id],
    ]);
    expect(entries[1]!.before).toEqual({ data: { plan: 'free' } });
    expect(entries[1]!.after).toMatchObject({ data: { plan: 'free', seats: 3 } });
  });

  it('list pages newest first by keyset, searches an email prefix literally (LIKE wildcards are text), and stays in its project', async () => {
    const project = (await createProject(t.db)).id;
    const me = actorFor(project, 'VIEWER');
    const emails = ['a_b@x.io', 'axb@x.io', 'A%c@x.io', 'bob@x.io', 'carol@x.io', 'dave@x.io', 'erin@x.io'];
    for (const [i, email] of emails.entries()) {
      await t.db.contact.create({ data: { projectId: project, email, createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, i)) } });
    }
    await createContact(t.db, otherProjectId, 'a_b-elsewhere@x.io');

    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const result = await as(me).contacts.list({ limit: 3, cursor });
      seen.push(...result.items.map((c) => c.email));
      cursor = result.nextCursor ?? undefined;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual([...emails].reverse());

    expect((await as(me).contacts.list({ search: 'A_' })).items.map((c) => c.email)).toEqual(['a_b@x.io']);
    expect((await as(me).contacts.list({ search: 'a%' })).items.map((c) => c.email)).toEqual(['A%c@x.io']);
    expect((await as(me).contacts.list({ search: 'A' })).items.map((c) => c.email)).toEqual(['A%c@x.io', 'axb@x.io', 'a_b@x.io']);
    await expectCode(as(me).contacts.list({ cursor: 'not-a-cursor' }), 'BAD_REQUEST');
  });

  it("get returns the contact with its executions across workflows; another project's contact is NOT_FOUND", async () => {
    const first = await workflowFrom(t.db, projectId, delayWorkflow(3600, { name: 'contact-get-1' }));
    const second = await workflowFrom(t.db, projectId, delayWorkflow(3600, { name: 'contact-get-2' }));
    const a = await as(marketer).enrollments.enroll({ workflowId: first.id, email: 'grace@example.com' });
    const b = await as(marketer).enrollments.enroll({ workflowId: second.id, email: 'grace@example.com' });
    const contact = await t.db.contact.findFirstOrThrow({ where: { projectId, email: 'grace@example.com' } });

    const got = await as(viewer).contacts.get({ id: contact.id });
    expect(got.executionCount).toBe(2);
    expect(got.executions.map((e) => e.id).sort()).toEqual([a.executionId, b.executionId].sort());
    expect(got.executions.map((e) => e.workflowName).sort()).toEqual(['contact-get-1', 'contact-get-2']);

    await expectCode(as(outsider).contacts.get({ id: contact.id }), 'NOT_FOUND');
    await expectCode(as(viewer).contacts.get({ id: 'not-a-uuid' }), 'BAD_REQUEST');
  });
});
