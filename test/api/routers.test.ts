import { TRPCError } from '@trpc/server';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import superjson from 'superjson';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkInvariants, createEngineContext, runWorkerOnce } from '../../server/engine';
import { appRouter } from '../../server/trpc/root';
import { ConflictError, type Actor } from '../../server/trpc/trpc';
import { actorFor, callerFor, contextFor } from '../support/callers';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createContact, createProject, delayWorkflow, waitWorkflow, workflowFrom } from '../support/fixtures';

// The behaviour of every procedure of API.md (except apiKeys/members): results, keyset
// pagination, project scoping (another project's ids are NOT_FOUND), conflicts carrying
// data.conflict, and the audit entry each mutation writes in the transaction of its change.

let t: TestDatabase;
let projectId: string;
let otherProjectId: string;
let owner: Actor;
let marketer: Actor;
let operator: Actor;
let viewer: Actor;
let outsider: Actor;

beforeAll(async () => {
  // Stuck means "past its due time" at once, so tests need not wait out a grace period.
  process.env.STUCK_GRACE_SECONDS = '0';
  t = await freshDatabase();
  projectId = (await createProject(t.db)).id;
  otherProjectId = (await createProject(t.db)).id;
  owner = actorFor(projectId, 'OWNER');
  marketer = actorFor(projectId, 'MARKETER');
  operator = actorFor(projectId, 'OPERATOR');
  viewer = actorFor(projectId, 'VIEWER');
  outsider = actorFor(otherProjectId, 'OWNER');
});
afterAll(async () => t?.drop());

const as = (actor: Actor | null) => callerFor(t.db, actor);

async function rejection(promise: Promise<unknown>): Promise<TRPCError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(TRPCError);
    return error as TRPCError;
  }
  throw new Error('expected the call to fail');
}

async function expectCode(promise: Promise<unknown>, code: TRPCError['code']): Promise<TRPCError> {
  const error = await rejection(promise);
  expect(error.code, error.message).toBe(code);
  return error;
}

/** What the error formatter hands clients as data.conflict. */
function conflictOf(error: TRPCError): Record<string, unknown> | null {
  return error.cause instanceof ConflictError ? error.cause.conflict : null;
}

async function auditOf(targetId: string) {
  return t.db.auditEntry.findMany({ where: { targetId }, orderBy: [{ at: 'asc' }, { id: 'asc' }] });
}

async function runWorkers() {
  await runWorkerOnce(createEngineContext(t.db));
}

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

describe('enrollments.enroll', () => {
  it('enrolls by email or contact id, audits the execution, and a duplicate is CONFLICT ACTIVE_EXECUTION naming it', async () => {
    const wf = await workflowFrom(t.db, projectId, delayWorkflow(3600));
    const { executionId } = await as(marketer).enrollments.enroll({ workflowId: wf.id, email: 'enroll@example.com', context: { campaign: 'spring' } });
    const execution = await t.db.workflowExecution.findUniqueOrThrow({ where: { id: executionId } });
    expect(execution).toMatchObject({ projectId, workflowId: wf.id, status: 'RUNNING', context: { campaign: 'spring' } });
    expect((await auditOf(executionId)).map((e) => [e.action, e.outcome])).toEqual([['enrollments.enroll', 'APPLIED']]);

    const error = await expectCode(as(marketer).enrollments.enroll({ workflowId: wf.id, contactId: execution.contactId }), 'CONFLICT');
    expect(conflictOf(error)).toEqual({ reason: 'ACTIVE_EXECUTION', executionId });
    expect(await t.db.workflowExecution.count({ where: { workflowId: wf.id } })).toBe(1);
    const rejected = await t.db.auditEntry.findMany({ where: { targetId: wf.id, action: 'enrollments.enroll' } });
    expect(rejected).toMatchObject([{ outcome: 'REJECTED', after: { reason: 'ACTIVE_EXECUTION', executionId } }]);
  });

  it('a finished execution blocks re-entry when the workflow forbids it: CONFLICT REENTRY_BLOCKED', async () => {
    const wf = await workflowFrom(t.db, projectId, delayWorkflow(3600, { allowReentry: false }));
    const { executionId } = await as(marketer).enrollments.enroll({ workflowId: wf.id, email: 'once@example.com' });
    const preview = await as(operator).repair.preview({ executionId, action: 'CANCEL' });
    await as(operator).repair.applyOne({ executionId, action: 'CANCEL', expectedVersion: preview.expectedVersion, reason: 'test: end it' });
    const error = await expectCode(as(marketer).enrollments.enroll({ workflowId: wf.id, email: 'once@example.com' }), 'CONFLICT');
    expect(conflictOf(error)).toEqual({ reason: 'REENTRY_BLOCKED', executionId });
  });

  it('a disabled workflow is PRECONDITION_FAILED WORKFLOW_DISABLED: audited as REJECTED, no execution and no contact created', async () => {
    const wf = await workflowFrom(t.db, projectId, delayWorkflow(3600, { enabled: false }));
    const error = await expectCode(as(marketer).enrollments.enroll({ workflowId: wf.id, email: 'disabled@example.com' }), 'PRECONDITION_FAILED');
    expect(conflictOf(error)).toEqual({ reason: 'WORKFLOW_DISABLED' });
    expect(await t.db.workflowExecution.count({ where: { workflowId: wf.id } })).toBe(0);
    expect(await t.db.contact.count({ where: { email: 'disabled@example.com' } })).toBe(0);
    expect(await auditOf(wf.id)).toMatchObject([{ action: 'enrollments.enroll', outcome: 'REJECTED', actor: marketer.id }]);
  });

  it("another project's workflow or contact is NOT_FOUND; contactId and email together are BAD_REQUEST", async () => {
    const mine = await workflowFrom(t.db, projectId, delayWorkflow(3600));
    const theirs = await workflowFrom(t.db, otherProjectId, delayWorkflow(3600));
    const theirContact = await createContact(t.db, otherProjectId, 'theirs@example.com');
    await expectCode(as(marketer).enrollments.enroll({ workflowId: theirs.id, email: 'n@example.com' }), 'NOT_FOUND');
    await expectCode(as(marketer).enrollments.enroll({ workflowId: mine.id, contactId: theirContact.id }), 'NOT_FOUND');
    const both = await expectCode(
      as(marketer).enrollments.enroll({ workflowId: mine.id, contactId: theirContact.id, email: 'n@example.com' }),
      'BAD_REQUEST',
    );
    expect(both.message).toMatch(/exactly one/);
    await expectCode(as(viewer).enrollments.enroll({ workflowId: mine.id, email: 'n@example.com' }), 'FORBIDDEN');
    await expectCode(as(null).enrollments.enroll({ workflowId: mine.id, email: 'n@example.com' }), 'UNAUTHORIZED');
    expect(await t.db.workflowExecution.count({ where: { workflowId: { in: [mine.id, theirs.id] } } })).toBe(0);
  });

  it('the audit entry shares the transaction of its change: when the audit write fails, the enrollment is rolled back', async () => {
    const wf = await workflowFrom(t.db, projectId, delayWorkflow(3600));
    // A database-side fault only for this actor's audit entries.
    await t.query(`
      CREATE FUNCTION refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.actor = 'user:audit-refused' THEN RAISE EXCEPTION 'audit refused (test fault)'; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER refuse_audit BEFORE INSERT ON "AuditEntry" FOR EACH ROW EXECUTE FUNCTION refuse_audit();`);
    try {
      const doomed: Actor = { ...marketer, id: 'user:audit-refused' };
      await expectCode(as(doomed).enrollments.enroll({ workflowId: wf.id, email: 'rolled-back@example.com' }), 'INTERNAL_SERVER_ERROR');
      expect(await t.db.workflowExecution.count({ where: { workflowId: wf.id } })).toBe(0);
      expect(await t.db.contact.count({ where: { email: 'rolled-back@example.com' } })).toBe(0);
    } finally {
      await t.query(`DROP TRIGGER refuse_audit ON "AuditEntry"; DROP FUNCTION refuse_audit();`);
    }
  });
});

describe('enrollments.enrollMany and importCsv', () => {
  it('answers each row on its own: bad rows fail alone, good ones are enrolled, one audit entry counts them all', async () => {
    const wf = await workflowFrom(t.db, projectId, delayWorkflow(3600));
    await as(marketer).enrollments.enroll({ workflowId: wf.id, email: 'already@example.com' });
    const { results, summary } = await as(marketer).enrollments.enrollMany({
      workflowId: wf.id,
      contacts: [
        { email: 'one@example.com', data: { plan: 'pro' } },
        { email: 'not an email' },
        { email: 'already@example.com' },
        { email: 'two@example.com', data: JSON.parse('{"__proto__": {"admin": true}}') },
        42 as unknown as { email: string },
        { email: 'ONE@example.com' },
        { email: 'three@example.com', data: { deep: { a: { b: { c: { d: { e: 1 } } } } } } },
        { email: 'four@example.com' },
      ],
    });
    expect(results.map((r) => [r.row, r.executionId ? 'enrolled' : r.error!.reason])).toEqual([
      [1, 'enrolled'],
      [2, 'INVALID'],
      [3, 'ACTIVE_EXECUTION'],
      [4, 'INVALID'],
      [5, 'INVALID'],
      [6, 'ACTIVE_EXECUTION'],
      [7, 'INVALID'],
      [8, 'enrolled'],
    ]);
    expect(results[1]).toMatchObject({ email: 'not an email', error: { message: expect.stringMatching(/email/i) } });
    expect(results[3]!.error!.message).toMatch(/__proto__/);
    expect(results[4]!.email).toBeNull();
    expect(results[5]!.error!.executionId).toBe(results[0]!.executionId);
    expect(summary).toEqual({ rows: 8, enrolled: 2, failed: 6, reasons: { INVALID: 4, ACTIVE_EXECUTION: 2 } });
    expect(({} as Record<string, unknown>).admin).toBeUndefined();

    expect(await t.db.workflowExecution.count({ where: { workflowId: wf.id } })).toBe(3);
    const entries = await t.db.auditEntry.findMany({ where: { targetId: wf.id, action: 'enrollments.enrollMany' } });
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ outcome: 'APPLIED', actor: marketer.id, after: { ...summary, source: 'rows', complete: true } });
  });

  it('a call over 10,000 rows is BAD_REQUEST before anything is written; a disabled workflow is refused before any row', async () => {
    const wf = await workflowFrom(t.db, projectId, delayWorkflow(3600));
    const rows = Array.from({ length: 10_001 }, (_, i) => ({ email: `over${i}@example.com` }));
    await expectCode(as(marketer).enrollments.enrollMany({ workflowId: wf.id, contacts: rows }), 'BAD_REQUEST');
    await expectCode(as(marketer).enrollments.enrollMany({ workflowId: wf.id, contacts: [] }), 'BAD_REQUEST');
    expect(await t.db.contact.count({ where: { email: 'over0@example.com' } })).toBe(0);

    await as(marketer).workflows.setEnabled({ id: wf.id, enabled: false });
    const error = await expectCode(as(marketer).enrollments.enrollMany({ workflowId: wf.id, contacts: [{ email: 'z@example.com' }] }), 'PRECONDITION_FAILED');
    expect(conflictOf(error)).toEqual({ reason: 'WORKFLOW_DISABLED' });
    expect(await t.db.contact.count({ where: { email: 'z@example.com' } })).toBe(0);
  });

  it('importCsv reads the header, puts the other columns into contact data, and reports bad rows by number', async () => {
    const wf = await workflowFrom(t.db, projectId, delayWorkflow(3600));
    const csv = [
      'Email,first_name,plan',
      'csv1@example.com,Ada,pro',
      'broken,Bob,free',
      '"csv2@example.com","Lovelace, Ada",',
      'csv3@example.com,Too,many,cells',
      '',
      'csv4@example.com',
    ].join('\n');
    const { results, summary } = await as(marketer).enrollments.importCsv({ workflowId: wf.id, csv });
    expect(results.map((r) => [r.row, r.email, r.executionId ? 'enrolled' : r.error!.reason])).toEqual([
      [1, 'csv1@example.com', 'enrolled'],
      [2, 'broken', 'INVALID'],
      [3, 'csv2@example.com', 'enrolled'],
      [4, 'csv3@example.com', 'INVALID'],
      [5, 'csv4@example.com', 'enrolled'],
    ]);
    expect(summary).toMatchObject({ rows: 5, enrolled: 3, failed: 2 });
    const contacts = await t.db.contact.findMany({ where: { projectId, email: { in: ['csv1@example.com', 'csv2@example.com', 'csv4@example.com'] } }, orderBy: { email: 'asc' } });
    expect(contacts.map((c) => c.data)).toEqual([{ first_name: 'Ada', plan: 'pro' }, { first_name: 'Lovelace, Ada' }, {}]);
    expect(await t.db.auditEntry.count({ where: { targetId: wf.id, action: 'enrollments.importCsv' } })).toBe(1);

    const noEmail = await expectCode(as(marketer).enrollments.importCsv({ workflowId: wf.id, csv: 'name,plan\nAda,pro\n' }), 'BAD_REQUEST');
    expect(noEmail.message).toMatch(/email/);
    await expectCode(as(marketer).enrollments.importCsv({ workflowId: wf.id, csv: 'email\n' }), 'BAD_REQUEST');
    await expectCode(as(marketer).enrollments.importCsv({ workflowId: wf.id, csv: 'email,__proto__\na@example.com,x\n' }), 'BAD_REQUEST');
  });
});

describe('events.track', () => {
  it('an idempotency key makes a retry answer with the first event and store nothing more', async () => {
    const first = await as(marketer).events.track({ name: 'signup', email: 'idem@example.com', idempotencyKey: 'order-1' });
    const again = await as(marketer).events.track({ name: 'signup', email: 'idem@example.com', idempotencyKey: 'order-1', data: { other: true } });
    expect(again).toEqual({ eventId: first.eventId, duplicate: true });
    expect(first.duplicate).toBe(false);
    expect(await t.db.event.count({ where: { projectId, idempotencyKey: 'order-1' } })).toBe(1);
    // Keys are per project: another project's same key is its own event.
    const theirs = await as(outsider).events.track({ name: 'signup', idempotencyKey: 'order-1' });
    expect(theirs.eventId).not.toBe(first.eventId);
  });

  it("resolves the contact's wait for it: the execution takes the EVENT branch", async () => {
    const wf = await workflowFrom(t.db, projectId, waitWorkflow());
    const { executionId } = await as(marketer).enrollments.enroll({ workflowId: wf.id, email: 'buyer@example.com' });
    await runWorkers();
    expect((await t.db.workflowExecution.findUniqueOrThrow({ where: { id: executionId } })).status).toBe('WAITING');
    const { eventId } = await as(marketer).events.track({ name: 'purchase', email: 'BUYER@example.com', data: { total: 42 } });
    const wait = await t.db.stepExecution.findFirstOrThrow({ where: { executionId, status: { not: 'PENDING' }, resolvedBy: { not: null } } });
    expect(wait).toMatchObject({ resolvedBy: 'EVENT', resolvedBranch: 'EVENT', resumeEventId: eventId });
    expect(await t.db.auditEntry.count({ where: { targetId: eventId, action: 'events.track', outcome: 'APPLIED' } })).toBe(1);
  });

  it("another project's contact is NOT_FOUND (audited), and nothing is stored", async () => {
    const theirs = await createContact(t.db, otherProjectId, 'their-contact@example.com');
    const before = await t.db.event.count();
    await expectCode(as(marketer).events.track({ name: 'click', contactId: theirs.id }), 'NOT_FOUND');
    expect(await t.db.event.count()).toBe(before);
    expect(await t.db.auditEntry.count({ where: { targetId: theirs.id, action: 'events.track', outcome: 'REJECTED', projectId } })).toBe(1);
    await expectCode(as(marketer).events.track({ name: 'has spaces' }), 'BAD_REQUEST');
  });
});

describe('waits.resolve', () => {
  async function parkedWait(timeoutSeconds = 3600) {
    const wf = await workflowFrom(t.db, projectId, waitWorkflow({}, timeoutSeconds));
    const { executionId } = await as(marketer).enrollments.enroll({ workflowId: wf.id, email: `wait-${Math.random()}@example.com` });
    await runWorkers();
    const execution = await t.db.workflowExecution.findUniqueOrThrow({ where: { id: executionId } });
    const step = await t.db.stepExecution.findFirstOrThrow({ where: { executionId, status: 'WAITING' } });
    return { executionId, version: execution.version, stepExecutionId: step.id };
  }

  it('TIMEOUT before the wait is due is forced by an operator: resolvedBy OPERATOR, audited so I8 holds', async () => {
    const w = await parkedWait();
    const result = await as(operator).waits.resolve({ stepExecutionId: w.stepExecutionId, outcome: 'TIMEOUT', expectedVersion: w.version });
    expect(result).toEqual({ executionId: w.executionId, branch: 'TIMEOUT' });
    expect(await t.db.stepExecution.findUniqueOrThrow({ where: { id: w.stepExecutionId } })).toMatchObject({ resolvedBy: 'OPERATOR', resolvedBranch: 'TIMEOUT' });
    expect(await auditOf(w.executionId)).toEqual(
      expect.arrayContaining([expect.objectContaining({ action: 'waits.resolve', outcome: 'APPLIED', actor: operator.id })]),
    );
    expect((await checkInvariants(t.db)).find((i) => i.id === 'I8')!.violations).toBe(0);

    // The same wait again: CONFLICT WAIT_RESOLVED saying who won and when, audited as LOST.
    const error = await expectCode(
      as(operator).waits.resolve({ stepExecutionId: w.stepExecutionId, outcome: 'EVENT', expectedVersion: w.version + 1 }),
      'CONFLICT',
    );
    expect(conflictOf(error)).toEqual({ reason: 'WAIT_RESOLVED', resolvedBy: 'OPERATOR', at: expect.any(Date) });
    expect((await auditOf(w.executionId)).filter((e) => e.outcome === 'LOST')).toHaveLength(1);
  });

  it('TIMEOUT once the wait is due is the timeout itself: resolvedBy TIMEOUT', async () => {
    const w = await parkedWait();
    await t.db.stepExecution.update({ where: { id: w.stepExecutionId }, data: { dueAt: new Date(Date.now() - 1000) } });
    await as(operator).waits.resolve({ stepExecutionId: w.stepExecutionId, outcome: 'TIMEOUT', expectedVersion: w.version });
    expect((await t.db.stepExecution.findUniqueOrThrow({ where: { id: w.stepExecutionId } })).resolvedBy).toBe('TIMEOUT');
  });

  it('a stale expectedVersion loses: CONFLICT STALE_VERSION with the current version and status, nothing resolved', async () => {
    const w = await parkedWait();
    const error = await expectCode(
      as(operator).waits.resolve({ stepExecutionId: w.stepExecutionId, outcome: 'EVENT', expectedVersion: w.version - 1 }),
      'CONFLICT',
    );
    expect(conflictOf(error)).toEqual({ reason: 'STALE_VERSION', currentVersion: w.version, status: 'WAITING' });
    expect((await t.db.stepExecution.findUniqueOrThrow({ where: { id: w.stepExecutionId } })).resolvedBy).toBeNull();
  });

  it("EVENT with the contact's event resumes on the EVENT branch; another project's wait is NOT_FOUND; viewers may not", async () => {
    const w = await parkedWait();
    const execution = await t.db.workflowExecution.findUniqueOrThrow({ where: { id: w.executionId }, include: { contact: true } });
    // Stored without dispatch, as an operator would find it: it did not resume the wait.
    const event = await t.db.event.create({ data: { projectId, contactId: execution.contactId, name: 'purchase', data: { sku: 'X' }, processedAt: new Date() } });
    await expectCode(as(outsider).waits.resolve({ stepExecutionId: w.stepExecutionId, outcome: 'EVENT', expectedVersion: w.version }), 'NOT_FOUND');
    await expectCode(as(viewer).waits.resolve({ stepExecutionId: w.stepExecutionId, outcome: 'EVENT', expectedVersion: w.version }), 'FORBIDDEN');
    await expectCode(
      as(operator).waits.resolve({ stepExecutionId: w.stepExecutionId, outcome: 'TIMEOUT', eventId: event.id, expectedVersion: w.version }),
      'BAD_REQUEST',
    );
    const result = await as(operator).waits.resolve({ stepExecutionId: w.stepExecutionId, outcome: 'EVENT', eventId: event.id, expectedVersion: w.version });
    expect(result.branch).toBe('EVENT');
    expect(await t.db.stepExecution.findUniqueOrThrow({ where: { id: w.stepExecutionId } })).toMatchObject({ resolvedBy: 'EVENT', resumeEventId: event.id });
  });
});

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
    // Ten executions a second apart, alternating workflows; the newest last.
    for (let i = 0; i < 10; i++) {
      const contact = await createContact(t.db, project, `person${i}@example.com`);
      const { id } = await t.db.workflowExecution.create({
        data: {
          projectId: project,
          workflowId: i % 2 === 0 ? workflowA : workflowB,
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

describe('repair', () => {
  /** Executions waiting past their timeout, which no timer has processed (WAIT_OVERDUE). */
  async function overdueMany(n: number) {
    const parked = [];
    for (let i = 0; i < n; i++) {
      const wf = await workflowFrom(t.db, projectId, waitWorkflow());
      const { executionId } = await as(marketer).enrollments.enroll({ workflowId: wf.id, email: `stuck-${Math.random()}@example.com` });
      parked.push({ workflowId: wf.id, executionId });
    }
    await runWorkers();
    // After the workers ran: they would have timed the waits out themselves.
    await t.db.stepExecution.updateMany({
      where: { executionId: { in: parked.map((p) => p.executionId) }, status: 'WAITING' },
      data: { dueAt: new Date(Date.now() - 60_000) },
    });
    return parked;
  }
  const overdue = async () => (await overdueMany(1))[0]!;

  it('preview, then apply with the previewed version; a stale version is CONFLICT naming the winner, audited as LOST', async () => {
    const { executionId } = await overdue();
    const preview = await as(operator).repair.preview({ executionId, action: 'FORCE_TIMEOUT' });
    expect(preview.plan).toMatchObject({ allowed: true, branch: 'TIMEOUT' });

    const stale = await expectCode(
      as(operator).repair.applyOne({ executionId, action: 'FORCE_TIMEOUT', expectedVersion: preview.expectedVersion - 1, reason: 'stale look' }),
      'CONFLICT',
    );
    expect(conflictOf(stale)).toMatchObject({ reason: 'STALE_VERSION', currentVersion: preview.expectedVersion, winner: { kind: expect.any(String) } });

    const applied = await as(operator).repair.applyOne({
      executionId,
      action: 'FORCE_TIMEOUT',
      expectedVersion: preview.expectedVersion,
      reason: 'customer asked for the reminder now',
    });
    expect(applied).toMatchObject({ ok: true, action: 'FORCE_TIMEOUT', executionId });
    const entries = (await auditOf(executionId)).filter((e) => e.action === 'repair.FORCE_TIMEOUT');
    expect(entries.map((e) => [e.outcome, e.actor, e.reason])).toEqual([
      ['LOST', operator.id, 'stale look'],
      ['APPLIED', operator.id, 'customer asked for the reminder now'],
    ]);

    // The same action again, with the old version: it was already resolved.
    const again = await expectCode(
      as(operator).repair.applyOne({ executionId, action: 'FORCE_TIMEOUT', expectedVersion: preview.expectedVersion, reason: 'double click' }),
      'CONFLICT',
    );
    expect(conflictOf(again)).toMatchObject({ reason: 'WAIT_RESOLVED', resolvedBy: 'OPERATOR', winner: { kind: 'operator', actor: operator.id } });
  });

  it('an action the state does not allow is PRECONDITION_FAILED with the refusal; foreign ids are NOT_FOUND and audited', async () => {
    const { executionId } = await overdue();
    const preview = await as(operator).repair.preview({ executionId, action: 'RESUME_CONTINUATION' });
    expect(preview.plan.allowed).toBe(false);
    const refused = await expectCode(
      as(operator).repair.applyOne({ executionId, action: 'RESUME_CONTINUATION', expectedVersion: preview.expectedVersion, reason: 'try it' }),
      'PRECONDITION_FAILED',
    );
    expect(conflictOf(refused)).toMatchObject({ reason: 'NOT_ALLOWED', refusal: preview.plan.refusal, status: 'WAITING' });

    await expectCode(as(outsider).repair.preview({ executionId, action: 'CANCEL' }), 'NOT_FOUND');
    const theirEvent = await as(outsider).events.track({ name: 'purchase', email: 'their-buyer@example.com' });
    await expectCode(as(operator).repair.preview({ executionId, action: 'DELIVER_EVENT', eventId: theirEvent.eventId }), 'NOT_FOUND');
    await expectCode(as(outsider).repair.applyOne({ executionId, action: 'CANCEL', expectedVersion: 1, reason: 'not mine' }), 'NOT_FOUND');
    expect(await t.db.auditEntry.count({ where: { projectId: otherProjectId, targetId: executionId, outcome: 'REJECTED' } })).toBe(1);
    expect((await t.db.workflowExecution.findUniqueOrThrow({ where: { id: executionId } })).status).toBe('WAITING');
  });

  it('inputs: a reason is mandatory (3..500), REDRIVE_EVENT needs an eventId and only it may omit executionId; marketers may not repair', async () => {
    const { executionId } = await overdue();
    await expectCode(as(operator).repair.applyOne({ executionId, action: 'CANCEL', expectedVersion: 1, reason: 'no' }), 'BAD_REQUEST');
    await expectCode(as(operator).repair.applyOne({ executionId, action: 'CANCEL', expectedVersion: 1, reason: 'x'.repeat(501) }), 'BAD_REQUEST');
    const missing = await expectCode(as(operator).repair.applyOne({ action: 'REDRIVE_EVENT', expectedVersion: 0, reason: 'redrive it' }), 'BAD_REQUEST');
    expect((missing.cause as unknown as { issues: { path: string[] }[] }).issues[0]!.path).toEqual(['eventId']);
    await expectCode(as(operator).repair.preview({ action: 'CANCEL' }), 'BAD_REQUEST');
    await expectCode(as(marketer).repair.stuck(), 'FORBIDDEN');
    await expectCode(as(marketer).repair.preview({ executionId, action: 'CANCEL' }), 'FORBIDDEN');
  });

  it('REDRIVE_EVENT targets an event by id alone', async () => {
    const { eventId } = await as(marketer).events.track({ name: 'late', email: 'redrive@example.com' });
    // As if its dispatch had been dead-lettered.
    await t.db.event.update({ where: { id: eventId }, data: { processedAt: null, deadAt: new Date(), dispatchAttempts: 8, lastError: 'poison' } });
    const preview = await as(operator).repair.preview({ action: 'REDRIVE_EVENT', eventId });
    expect(preview.target).toMatchObject({ kind: 'event', id: eventId });
    const applied = await as(operator).repair.applyOne({ action: 'REDRIVE_EVENT', eventId, expectedVersion: preview.expectedVersion, reason: 'cause fixed' });
    expect(applied).toMatchObject({ ok: true, eventId });
    expect((await t.db.event.findUniqueOrThrow({ where: { id: eventId } })).deadAt).toBeNull();
  });

  it('applyMany counts on a dry run, then reports each execution; one summary entry besides each repair\'s own', async () => {
    const [first, second] = (await overdueMany(2)) as [Awaited<ReturnType<typeof overdue>>, Awaited<ReturnType<typeof overdue>>];
    const filter = { reason: 'WAIT_OVERDUE' as const, workflowId: first.workflowId };
    const dry = await as(operator).repair.applyMany({ filter, action: 'FORCE_TIMEOUT', reason: 'bulk timeout', dryRun: true });
    expect(dry).toMatchObject({ matched: 1, dryRun: true, items: [] });
    const run = await as(operator).repair.applyMany({ filter: { executionIds: [first.executionId, second.executionId] }, action: 'FORCE_TIMEOUT', reason: 'bulk timeout' });
    expect(run.matched).toBe(2);
    expect(run.items.map((i) => i.outcome)).toEqual(['APPLIED', 'APPLIED']);
    expect(await t.db.auditEntry.count({ where: { action: 'repair.applyMany', actor: operator.id } })).toBe(1);
    await expectCode(as(operator).repair.applyMany({ filter: {}, action: 'CANCEL', reason: 'everything' }), 'BAD_REQUEST');
    expect((await checkInvariants(t.db)).filter((i) => i.violations > 0)).toEqual([]);
  });
});

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

describe('the error contract over HTTP (formatter output)', () => {
  async function post(actor: Actor, path: string, input: unknown) {
    const response = await fetchRequestHandler({
      endpoint: '/api/trpc',
      router: appRouter,
      createContext: () => contextFor(t.db, actor),
      req: new Request(`http://localhost/api/trpc/${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(superjson.serialize(input)),
      }),
    });
    const body = (await response.json()) as { error?: { json: unknown; meta?: unknown } };
    return { status: response.status, error: body.error ? (superjson.deserialize(body.error as never) as { data: Record<string, unknown> }) : null };
  }

  it('CONFLICT carries data.conflict; BAD_REQUEST carries zod paths; a foreign id is 404', async () => {
    const wf = await workflowFrom(t.db, projectId, delayWorkflow(3600));
    const { executionId } = await as(marketer).enrollments.enroll({ workflowId: wf.id, email: 'http-dup@example.com' });
    const duplicate = await post(marketer, 'enrollments.enroll', { workflowId: wf.id, email: 'http-dup@example.com' });
    expect(duplicate.status).toBe(409);
    expect(duplicate.error!.data.conflict).toEqual({ reason: 'ACTIVE_EXECUTION', executionId });

    const bad = await post(marketer, 'enrollments.enrollMany', { workflowId: 'nope', contacts: [] });
    expect(bad.status).toBe(400);
    expect((bad.error!.data.zodError as { issues: { path: string }[] }).issues.map((i) => i.path).sort()).toEqual(['contacts', 'workflowId']);

    expect((await post(outsider, 'enrollments.enroll', { workflowId: wf.id, email: 'x@example.com' })).status).toBe(404);
  });
});
