import { describe, expect, it } from 'vitest';
import { actorFor } from '../../support/callers';
import { createProject } from '../../support/fixtures';
import { t, outsider, as, setUpRouterTests } from './support';

setUpRouterTests();

describe('audit.list', () => {
  it('pages the project\'s log newest first, filtered by target, actor and action', async () => {
    const project = (await createProject(t.db)).id;
    const alice = actorFor(project, 'MARKETER', 'alice');
    const bob = actorFor(project, 'MARKETER', 'bob');
    const contacts = [];
    for (let i = 0; i < 5; i++) contacts.push(await as(i % 2 ? bob : alice).contacts.upsert({ email: `log${i}@example.com` }));
    const all: string[] = [];
    let cursor: string | undefined;
    do {
      const result = await as(actorFor(project, 'VIEWER')).audit.list({ limit: 2, cursor });
      all.push(...result.items.map((e) => e.targetId));
      cursor = result.nextCursor ?? undefined;
    } while (cursor);
    expect(all).toEqual(contacts.map((c) => c.id).reverse());
    expect((await as(alice).audit.list({ actor: bob.id })).items.map((e) => e.targetId)).toEqual([contacts[3]!.id, contacts[1]!.id]);
    expect((await as(alice).audit.list({ targetId: contacts[2]!.id })).items).toHaveLength(1);
    expect((await as(alice).audit.list({ action: 'workflows.create' })).items).toHaveLength(0);
    // Nothing of another project's log shows.
    expect((await as(outsider).audit.list({ targetId: contacts[2]!.id })).items).toHaveLength(0);
  });
});
