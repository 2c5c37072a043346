import { TRPCError } from '@trpc/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngineContext } from '../../server/engine/context';
import { enroll } from '../../server/engine/enrollment';
import { trackEvent } from '../../server/engine/events';
import { actorFor, callerFor } from '../support/callers';
import { freshDatabase, type TestDatabase } from '../support/database';
import { driveFromStart } from '../support/drive';
import { createContact, createProject, waitWorkflow, workflowFrom } from '../support/fixtures';

// repair.options (the console's repair panel): every action's plan for one execution from
// one snapshot — the same planner preview and apply use, so the panel offers exactly what
// apply would allow — with the contact's events DELIVER_EVENT could take, and the emails
// whose fate waits for an operator.

let t: TestDatabase;
let projectId: string;

beforeAll(async () => {
  t = await freshDatabase();
  projectId = (await createProject(t.db)).id;
});
afterAll(async () => t?.drop());

async function parked(email: string) {
  const wf = await workflowFrom(t.db, projectId, waitWorkflow());
  const contact = await createContact(t.db, projectId, email);
  const enrolled = await enroll(t.db, { projectId, workflowId: wf.id, contactId: contact.id });
  if (!enrolled.ok) throw new Error('enroll failed');
  await driveFromStart(t.db, enrolled.executionId);
  return { executionId: enrolled.executionId, contactId: contact.id };
}

describe('repair.options', () => {
  it('a parked wait: the wait actions and cancel are allowed, retry and skip refused with why; the contact’s matching events are offered', async () => {
    const { executionId, contactId } = await parked('options-wait@example.com');
    // An event of another name is no candidate; one named as the wait expects is, even if it came before.
    const ctx = createEngineContext(t.db);
    await trackEvent(ctx, { projectId, name: 'signup', contactId }, { dispatch: false });
    const purchase = await trackEvent(ctx, { projectId, name: 'purchase', contactId }, { dispatch: false });
    if (!purchase.ok) throw new Error('track failed');
    const caller = callerFor(t.db, actorFor(projectId, 'OPERATOR'));
    const options = await caller.repair.options({ executionId });
    const preview = await caller.repair.preview({ executionId, action: 'FORCE_TIMEOUT' });
    expect(options.expectedVersion).toBe(preview.expectedVersion);
    expect(options.expectedStepExecutionId).toBe('expectedStepExecutionId' in preview ? preview.expectedStepExecutionId : 'missing');

    const allowed = Object.fromEntries(options.actions.map((a) => [a.action, a.plan.allowed]));
    expect(allowed).toEqual({
      RESUME_CONTINUATION: false,
      MIGRATE: false,
      FORCE_TIMEOUT: true,
      DELIVER_EVENT: true,
      RETRY_STEP: false,
      SKIP_STEP: false,
      CANCEL: true,
    });
    for (const a of options.actions.filter((x) => !x.plan.allowed)) expect(a.plan.refusal).toBeTruthy();
    expect(options.events.map((e) => [e.id, e.name])).toEqual([[purchase.eventId, 'purchase']]);
    expect(options.messages).toEqual([]);
  });

  it('an email that failed is listed with MARK_SENT, RESEND (which warns of a duplicate) and GIVE_UP', async () => {
    const { executionId } = await parked('options-mail@example.com');
    const [message] = await t.db.$queryRaw<{ id: string }[]>`
      UPDATE "Message" SET status = 'FAILED', error = '550 mailbox unavailable', version = version + 1
       WHERE "executionId" = ${executionId}::uuid RETURNING id`;
    const options = await callerFor(t.db, actorFor(projectId, 'OPERATOR')).repair.options({ executionId });
    expect(options.messages.map((m) => m.message.id)).toEqual([message!.id]);
    const plans = Object.fromEntries(options.messages[0]!.actions.map((a) => [a.action, a.plan]));
    expect(Object.keys(plans)).toEqual(['MARK_SENT', 'RESEND', 'GIVE_UP']);
    expect(plans.RESEND!.sideEffect.mayDuplicate).toBe(true);
  });

  it('is for operators, and an execution of another project is NOT_FOUND', async () => {
    const { executionId } = await parked('options-role@example.com');
    await expect(callerFor(t.db, actorFor(projectId, 'MARKETER')).repair.options({ executionId })).rejects.toMatchObject({ code: 'FORBIDDEN' });
    const other = (await createProject(t.db)).id;
    const error = await callerFor(t.db, actorFor(other, 'OWNER')).repair.options({ executionId }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TRPCError);
    expect((error as TRPCError).code).toBe('NOT_FOUND');
  });
});
