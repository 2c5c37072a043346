import { TRPCError } from '@trpc/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngineContext } from '../../server/engine/context';
import type { WorkflowInput } from '../../server/common/workflow-definition';
import { enroll } from '../../server/engine/enrollment';
import { trackEvent } from '../../server/engine/events';
import { applyRepair, previewRepair } from '../../server/repair/actions';
import type { ExecutionSnapshot } from '../../server/repair/snapshot';
import { ConflictError } from '../../server/trpc/trpc';
import { actorFor, callerFor } from '../support/callers';
import { freshDatabase, type TestDatabase } from '../support/database';
import { driveFromStart, runStepsOnly } from '../support/drive';
import { createProject, stepId, workflowFrom } from '../support/fixtures';

// A loser is told what became of the wait it targeted — the step
// execution in the snapshot it previewed — not the latest resolution of any wait of the
// execution.

let t: TestDatabase;
let projectId: string;
const GRACE = { graceSeconds: 0 };

beforeAll(async () => {
  t = await freshDatabase();
  projectId = (await createProject(t.db)).id;
});
afterAll(async () => t?.drop());

/** trigger -> wait for "open" -> wait for "purchase" -> mail (both waits an hour). */
function twoWaits(name: string): WorkflowInput {
  return {
    name,
    trigger: 'MANUAL',
    allowReentry: false,
    steps: [
      { key: 'start', type: 'TRIGGER', name: 'Start', config: {} },
      { key: 'first', type: 'WAIT_FOR_EVENT', name: 'Wait for open', config: { eventName: 'open', timeoutSeconds: 3600 } },
      { key: 'second', type: 'WAIT_FOR_EVENT', name: 'Wait for purchase', config: { eventName: 'purchase', timeoutSeconds: 3600 } },
      { key: 'mail', type: 'SEND_EMAIL', name: 'Mail', config: { subject: 'Hi', body: 'b' } },
    ],
    transitions: [
      { from: 'start', to: 'first', branch: null },
      { from: 'first', to: 'second', branch: 'EVENT' },
      { from: 'first', to: 'second', branch: 'TIMEOUT' },
      { from: 'second', to: 'mail', branch: 'EVENT' },
      { from: 'second', to: 'mail', branch: 'TIMEOUT' },
    ],
  };
}

async function parkedAtFirst(name: string, email: string) {
  const wf = await workflowFrom(t.db, projectId, twoWaits(name));
  const enrolled = await enroll(t.db, { projectId, workflowId: wf.id, email });
  if (!enrolled.ok) throw new Error(enrolled.reason);
  await driveFromStart(t.db, enrolled.executionId);
  const x = await t.db.workflowExecution.findUniqueOrThrow({ where: { id: enrolled.executionId } });
  expect(x.status).toBe('WAITING');
  return { wf, id: x.id, contactId: x.contactId, second: await stepId(t.db, wf.id, 'second') };
}

describe('the loser is told about the wait it targeted', () => {
  it('previewed the first wait; an event resolved it, then another operator forced the second: the answer is the EVENT on the first', async () => {
    const { id, contactId, second } = await parkedAtFirst('target-first', 'target-first@example.com');
    const preview = await previewRepair(t.db, { projectId, action: 'FORCE_TIMEOUT', executionId: id }, GRACE);
    expect(preview.plan.allowed).toBe(true);
    // The wait the operator looks at: the step execution of the snapshot they previewed.
    const targeted = (preview.target as ExecutionSnapshot).stepRow!.id;

    // The event arrives: the first wait resolves by EVENT and the execution parks at the second.
    await trackEvent(createEngineContext(t.db), { projectId, name: 'open', contactId });
    await runStepsOnly(t.db);
    const moved = await t.db.workflowExecution.findUniqueOrThrow({ where: { id } });
    expect(moved).toMatchObject({ status: 'WAITING', currentStepId: second });
    // A second operator then forces the second wait's timeout (a later resolution).
    const other = await previewRepair(t.db, { projectId, action: 'FORCE_TIMEOUT', executionId: id }, GRACE);
    expect(await applyRepair(t.db, { projectId, action: 'FORCE_TIMEOUT', executionId: id, actor: 'user:other', reason: 'second', expectedVersion: other.expectedVersion }, GRACE)).toMatchObject({ ok: true });

    const lost = await applyRepair(
      t.db,
      {
        projectId,
        action: 'FORCE_TIMEOUT',
        executionId: id,
        actor: 'user:late',
        reason: 'first',
        expectedVersion: preview.expectedVersion,
        expectedStepExecutionId: targeted,
      },
      GRACE,
    );
    expect(lost).toMatchObject({ ok: false, code: 'CONFLICT', conflict: { reason: 'WAIT_RESOLVED', resolvedBy: 'EVENT', winner: { kind: 'event' } } });
    expect(preview.expectedStepExecutionId).toBe(targeted);

    // Over tRPC, sending back what the preview showed: the same answer as data.conflict.
    const operator = actorFor(projectId, 'OPERATOR');
    const error = await callerFor(t.db, operator)
      .repair.applyOne({ executionId: id, action: 'FORCE_TIMEOUT', expectedVersion: preview.expectedVersion, expectedStepExecutionId: preview.expectedStepExecutionId, reason: 'first, again' })
      .then(() => null, (e: unknown) => e);
    expect(error).toBeInstanceOf(TRPCError);
    expect((error as TRPCError).code).toBe('CONFLICT');
    expect(((error as TRPCError).cause as ConflictError).conflict).toMatchObject({ reason: 'WAIT_RESOLVED', resolvedBy: 'EVENT', winner: { kind: 'event' } });
  });

  it('previewed the second wait (the first was resolved long before); another operator cancelled: STALE_VERSION won by that operator, not the first wait’s event', async () => {
    const { id, contactId, second } = await parkedAtFirst('target-second', 'target-second@example.com');
    await trackEvent(createEngineContext(t.db), { projectId, name: 'open', contactId });
    await runStepsOnly(t.db);
    expect(await t.db.workflowExecution.findUniqueOrThrow({ where: { id } })).toMatchObject({ status: 'WAITING', currentStepId: second });
    const preview = await previewRepair(t.db, { projectId, action: 'DELIVER_EVENT', executionId: id }, GRACE);
    expect(preview.plan.allowed).toBe(true);

    const cancel = await previewRepair(t.db, { projectId, action: 'CANCEL', executionId: id }, GRACE);
    expect(await applyRepair(t.db, { projectId, action: 'CANCEL', executionId: id, actor: 'user:canceller', reason: 'stop', expectedVersion: cancel.expectedVersion }, GRACE)).toMatchObject({ ok: true });

    for (const expectedStepExecutionId of [preview.expectedStepExecutionId, undefined]) {
      const lost = await applyRepair(
        t.db,
        { projectId, action: 'DELIVER_EVENT', executionId: id, actor: 'user:late', reason: 'deliver', expectedVersion: preview.expectedVersion, ...(expectedStepExecutionId !== undefined ? { expectedStepExecutionId } : {}) },
        GRACE,
      );
      expect(lost).toMatchObject({
        ok: false,
        code: 'CONFLICT',
        conflict: { reason: 'STALE_VERSION', status: 'CANCELLED', winner: { kind: 'operator', actor: 'user:canceller', action: 'repair.CANCEL' } },
      });
    }
  });
});
