import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDatabase, type TestDatabase } from '../support/database';
import { actorFor, callerFor } from '../support/callers';
import { createProject } from '../support/fixtures';
import { contextOf, createPerson, signIn } from '../support/auth';
import { createCaller } from '../../server/trpc/root';

// The audit entries about a project's people and keys (emails,
// names, roles, key names and prefixes) are read by owners only; everyone else reads the
// rest of the log as before, and cannot ask for those entries by action or target.

let t: TestDatabase;
let projectId: string;
let owner: ReturnType<typeof callerFor>;
let invitationId = '';
let keyId = '';

beforeAll(async () => {
  t = await freshDatabase();
  projectId = (await createProject(t.db)).id;
  owner = callerFor(t.db, actorFor(projectId, 'OWNER'));
  const invited = await owner.members.add({ email: 'new.hire@example.com', role: 'VIEWER' });
  invitationId = invited.invitation.id;
  // The invitee, a person of another project, accepts: that entry too is the owners' business.
  await createPerson(t.db, { projectId: (await createProject(t.db)).id, email: 'new.hire@example.com', password: 'new hire password', role: 'VIEWER' });
  const invitee = createCaller(await contextOf(t.db, new Headers({ cookie: await signIn(t.db, 'new.hire@example.com', 'new hire password') })));
  await invitee.invitations.accept({ id: invitationId });
  const key = await owner.apiKeys.create({ name: 'billing-sync', role: 'MARKETER' });
  keyId = key.id;
  await owner.contacts.upsert({ email: 'customer@example.com' });
});
afterAll(async () => t?.drop());

const actions = (page: { items: { action: string }[] }) => page.items.map((i) => i.action).sort();

describe('audit.list', () => {
  it('shows an owner every entry, members and keys included', async () => {
    expect(actions(await owner.audit.list({ limit: 50 }))).toEqual(['apiKeys.create', 'contacts.upsert', 'invitations.accept', 'members.add']);
  });

  it.each(['VIEWER', 'MARKETER', 'OPERATOR'] as const)('hides the members and keys entries from a %s, whatever the filter', async (role) => {
    const reader = callerFor(t.db, actorFor(projectId, role));
    const all = await reader.audit.list({ limit: 50 });
    expect(actions(all)).toEqual(['contacts.upsert']);
    const text = JSON.stringify(all);
    expect(text).not.toContain('new.hire@example.com');
    expect(text).not.toContain('billing-sync');
    expect((await reader.audit.list({ action: 'members.add', limit: 50 })).items).toEqual([]);
    expect((await reader.audit.list({ action: 'apiKeys.create', limit: 50 })).items).toEqual([]);
    expect((await reader.audit.list({ action: 'invitations.accept', limit: 50 })).items).toEqual([]);
    expect((await reader.audit.list({ targetId: invitationId, limit: 50 })).items).toEqual([]);
    expect((await reader.audit.list({ targetId: keyId, limit: 50 })).items).toEqual([]);
  });
});
