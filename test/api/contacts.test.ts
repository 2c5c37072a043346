import { TRPCError } from '@trpc/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngineContext } from '../../server/engine/context';
import { trackEvent } from '../../server/engine/events';
import { runWorkerOnce } from '../../server/engine/worker';
import type { Actor } from '../../server/auth/actor';
import { ConflictError } from '../../server/trpc/trpc';
import { actorFor, callerFor } from '../support/callers';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createContact, createProject, delayWorkflow, waitWorkflow, workflowFrom } from '../support/fixtures';

// The marketer console's contact procedures: contacts.list searched by email
// prefix and by a data field with keyset pages both ways; contacts.get with the journey
// (executions, events, messages); contacts.update (replace data, fenced by updatedAt) and
// contacts.setSubscribed, each audited in its transaction, MARKETER and up, BAD_REQUEST
// with zod's paths for bad input, NOT_FOUND for another project's contact.

let t: TestDatabase;
let projectId: string;
let marketer: Actor;
let viewer: Actor;
let outsider: Actor;

beforeAll(async () => {
  t = await freshDatabase();
  projectId = (await createProject(t.db)).id;
  marketer = actorFor(projectId, 'MARKETER');
  viewer = actorFor(projectId, 'VIEWER');
  outsider = actorFor((await createProject(t.db)).id, 'OWNER');
});
afterAll(async () => t?.drop());

const as = (actor: Actor) => callerFor(t.db, actor);

async function rejection(promise: Promise<unknown>, code: TRPCError['code']): Promise<TRPCError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(TRPCError);
    expect((error as TRPCError).code, (error as Error).message).toBe(code);
    return error as TRPCError;
  }
  throw new Error(`expected ${code}`);
}

/** The zod issue paths of a BAD_REQUEST, as the error formatter hands them to clients. */
function pathsOf(error: TRPCError): string[] {
  const cause = error.cause as { issues?: { path: PropertyKey[] }[] } | undefined;
  return (cause?.issues ?? []).map((i) => i.path.map(String).join('.'));
}

describe('contacts.list', () => {
  let search: string;
  beforeAll(async () => {
    search = (await createProject(t.db, 'search')).id;
    const rows: [string, Record<string, unknown>][] = [
      ['ada@lovelace.io', { plan: 'pro', seats: 3 }],
      ['adam@smith.io', { plan: 'free', seats: '3' }],
      ['Adele@Music.io', { plan: 'pro', vip: true }],
      ['bob@builder.io', { plan: 'free' }],
      ['carol@x.io', { plan: 'pro', seats: 12 }],
    ];
    for (const [i, [email, data]] of rows.entries()) {
      await t.db.contact.create({ data: { projectId: search, email, data: data as object, createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, i)) } });
    }
    await createContact(t.db, projectId, 'ada@elsewhere.io', { plan: 'pro' });
  });
  const me = () => actorFor(search, 'VIEWER');

  it('by email prefix and by a data field, alone or together, in this project only', async () => {
    const emails = async (input: Parameters<ReturnType<typeof as>['contacts']['list']>[0]) => (await as(me()).contacts.list(input)).items.map((c) => c.email);
    expect(await emails({ search: 'ad' })).toEqual(['Adele@Music.io', 'adam@smith.io', 'ada@lovelace.io']);
    expect(await emails({ dataKey: 'plan', dataValue: 'pro' })).toEqual(['carol@x.io', 'Adele@Music.io', 'ada@lovelace.io']);
    expect(await emails({ search: 'ad', dataKey: 'plan', dataValue: 'pro' })).toEqual(['Adele@Music.io', 'ada@lovelace.io']);
    // A typed value matches the string and the JSON scalar it spells.
    expect(await emails({ dataKey: 'seats', dataValue: '3' })).toEqual(['adam@smith.io', 'ada@lovelace.io']);
    expect(await emails({ dataKey: 'vip', dataValue: 'true' })).toEqual(['Adele@Music.io']);
    expect(await emails({ dataKey: 'plan', dataValue: 'enterprise' })).toEqual([]);
    expect(await emails({ dataKey: 'pl%', dataValue: 'pro' })).toEqual([]);
  });

  it('pages forward and back by keyset cursors, with counts per contact', async () => {
    const first = await as(me()).contacts.list({ limit: 2 });
    expect(first.items.map((c) => c.email)).toEqual(['carol@x.io', 'bob@builder.io']);
    expect(first.prevCursor).toBeNull();
    const second = await as(me()).contacts.list({ limit: 2, cursor: first.nextCursor! });
    expect(second.items.map((c) => c.email)).toEqual(['Adele@Music.io', 'adam@smith.io']);
    const back = await as(me()).contacts.list({ limit: 2, before: second.prevCursor! });
    expect(back.items.map((c) => c.email)).toEqual(first.items.map((c) => c.email));
    expect(back.prevCursor).toBeNull();
    expect(first.items[0]).toMatchObject({ executionCount: 0, activeCount: 0, subscribed: true });
  });

  it('refuses half a data search and bad cursors with BAD_REQUEST at their paths', async () => {
    expect(pathsOf(await rejection(as(me()).contacts.list({ dataKey: 'plan' }), 'BAD_REQUEST'))).toEqual(['dataValue']);
    expect(pathsOf(await rejection(as(me()).contacts.list({ dataValue: 'pro' }), 'BAD_REQUEST'))).toEqual(['dataKey']);
    expect(pathsOf(await rejection(as(me()).contacts.list({ before: 'nope' }), 'BAD_REQUEST'))).toEqual(['before']);
    expect(pathsOf(await rejection(as(me()).contacts.list({ dataKey: 'k', dataValue: 'a\u0000b' }), 'BAD_REQUEST'))).toEqual(['dataValue']);
  });
});

describe('contacts.get: the journey', () => {
  it('executions across workflows, the events tracked for the contact and the emails sent to it', async () => {
    const welcome = await workflowFrom(t.db, projectId, waitWorkflow({ name: 'journey-welcome' }));
    const later = await workflowFrom(t.db, projectId, delayWorkflow(3600, { name: 'journey-delay' }));
    const a = await as(marketer).enrollments.enroll({ workflowId: welcome.id, email: 'journey@example.com' });
    const b = await as(marketer).enrollments.enroll({ workflowId: later.id, email: 'journey@example.com' });
    const contact = await t.db.contact.findFirstOrThrow({ where: { projectId, email: 'journey@example.com' } });
    const engine = createEngineContext(t.db);
    await runWorkerOnce(engine);
    await trackEvent(engine, { projectId, name: 'browsed', contactId: contact.id, data: { page: '/pricing' } });

    const got = await as(viewer).contacts.get({ id: contact.id });
    expect(got.executionCount).toBe(2);
    expect(got.executions.map((e) => e.id).sort()).toEqual([a.executionId, b.executionId].sort());
    const waiting = got.executions.find((e) => e.id === a.executionId)!;
    expect(waiting).toMatchObject({ workflowName: 'journey-welcome', status: 'WAITING', stepKey: 'wait', stepType: 'WAIT_FOR_EVENT', finishedAt: null });
    expect(got.events.map((e) => [e.name, e.state])).toEqual([['browsed', 'processed']]);
    expect(got.eventCount).toBe(1);
    expect(got.messages.map((m) => [m.subject, m.workflowName, m.executionId])).toEqual([['Hello journey@example.com', 'journey-welcome', a.executionId]]);

    await rejection(as(outsider).contacts.get({ id: contact.id }), 'NOT_FOUND');
  });
});

describe('contacts.update', () => {
  it('replaces the data, audited with before and after', async () => {
    const contact = await createContact(t.db, projectId, 'edit@example.com', { plan: 'free', drop: 1 });
    const saved = await as(marketer).contacts.update({ id: contact.id, data: { plan: 'pro', nested: { a: [1, 2] } }, expectedUpdatedAt: contact.updatedAt });
    expect(saved.data).toEqual({ plan: 'pro', nested: { a: [1, 2] } });
    expect(saved.updatedAt.getTime()).toBeGreaterThan(contact.updatedAt.getTime());
    const [entry] = await t.db.auditEntry.findMany({ where: { targetId: contact.id, action: 'contacts.update' } });
    expect(entry).toMatchObject({ actor: marketer.id, outcome: 'APPLIED', before: { data: { plan: 'free', drop: 1 } }, after: { data: { plan: 'pro', nested: { a: [1, 2] } } } });
  });

  it('a save over a change made since the editor read it loses: CONFLICT with the current contact, nothing saved', async () => {
    const contact = await createContact(t.db, projectId, 'race@example.com', { plan: 'free' });
    await as(marketer).contacts.upsert({ email: 'race@example.com', data: { seats: 2 } });
    const error = await rejection(as(marketer).contacts.update({ id: contact.id, data: { plan: 'pro' }, expectedUpdatedAt: contact.updatedAt }), 'CONFLICT');
    expect(error.cause).toBeInstanceOf(ConflictError);
    expect((error.cause as ConflictError).conflict).toMatchObject({ reason: 'CONTACT_CHANGED', data: { plan: 'free', seats: 2 } });
    expect((await t.db.contact.findUniqueOrThrow({ where: { id: contact.id } })).data).toEqual({ plan: 'free', seats: 2 });
    const entries = await t.db.auditEntry.findMany({ where: { targetId: contact.id, action: 'contacts.update' } });
    expect(entries.map((e) => e.outcome)).toEqual(['LOST']);
  });

  it('two saves from the same read: exactly one wins', async () => {
    const contact = await createContact(t.db, projectId, 'twice@example.com', {});
    const results = await Promise.allSettled([
      as(marketer).contacts.update({ id: contact.id, data: { by: 'first' }, expectedUpdatedAt: contact.updatedAt }),
      as(marketer).contacts.update({ id: contact.id, data: { by: 'second' }, expectedUpdatedAt: contact.updatedAt }),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    const won = results.find((r) => r.status === 'fulfilled') as PromiseFulfilledResult<{ data: unknown }>;
    expect((await t.db.contact.findUniqueOrThrow({ where: { id: contact.id } })).data).toEqual(won.value.data);
  });

  it('bad data is BAD_REQUEST at its path and saves nothing; a viewer is FORBIDDEN; another project NOT_FOUND', async () => {
    const contact = await createContact(t.db, projectId, 'bad@example.com', { keep: true });
    const id = contact.id;
    expect(pathsOf(await rejection(as(marketer).contacts.update({ id, data: [] as never }), 'BAD_REQUEST'))).toEqual(['data']);
    expect(pathsOf(await rejection(as(marketer).contacts.update({ id, data: { a: { b: 'x\u0000' } } }), 'BAD_REQUEST'))).toEqual(['data.a.b']);
    expect(pathsOf(await rejection(as(marketer).contacts.update({ id, data: JSON.parse('{"__proto__": 1}') }), 'BAD_REQUEST'))).toEqual(['data.__proto__']);
    expect(pathsOf(await rejection(as(marketer).contacts.update({ id, data: {}, expectedUpdatedAt: 'yesterday' as never }), 'BAD_REQUEST'))).toEqual([
      'expectedUpdatedAt',
    ]);
    await rejection(as(viewer).contacts.update({ id, data: { a: 1 } }), 'FORBIDDEN');
    await rejection(as(outsider).contacts.update({ id, data: { a: 1 } }), 'NOT_FOUND');
    expect((await t.db.contact.findUniqueOrThrow({ where: { id } })).data).toEqual({ keep: true });
    expect(await t.db.auditEntry.count({ where: { targetId: id } })).toBe(0);
  });
});

describe('contacts.setSubscribed', () => {
  it('unsubscribes and subscribes, audited; a viewer is FORBIDDEN; another project NOT_FOUND', async () => {
    const contact = await createContact(t.db, projectId, 'sub@example.com');
    expect((await as(marketer).contacts.setSubscribed({ id: contact.id, subscribed: false })).subscribed).toBe(false);
    expect((await as(marketer).contacts.setSubscribed({ id: contact.id, subscribed: true })).subscribed).toBe(true);
    const entries = await t.db.auditEntry.findMany({ where: { targetId: contact.id }, orderBy: [{ at: 'asc' }, { id: 'asc' }] });
    expect(entries.map((e) => [e.action, e.outcome, e.after])).toEqual([
      ['contacts.setSubscribed', 'APPLIED', { subscribed: false }],
      ['contacts.setSubscribed', 'APPLIED', { subscribed: true }],
    ]);
    await rejection(as(viewer).contacts.setSubscribed({ id: contact.id, subscribed: false }), 'FORBIDDEN');
    await rejection(as(outsider).contacts.setSubscribed({ id: contact.id, subscribed: false }), 'NOT_FOUND');
    expect(pathsOf(await rejection(as(marketer).contacts.setSubscribed({ id: contact.id, subscribed: 'no' as never }), 'BAD_REQUEST'))).toEqual(['subscribed']);
    expect((await t.db.contact.findUniqueOrThrow({ where: { id: contact.id } })).subscribed).toBe(true);
  });
});
