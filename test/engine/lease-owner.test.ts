import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enroll } from '../../server/engine/enrollment';
import { claimReadySteps, claimStep } from '../../server/engine/claims';
import { listStuck } from '../../server/stuck/list';
import { executionDetail } from '../../server/read/executions';
import { freshDatabase, type TestDatabase } from '../support/database';
import { createContact, createProject, delayWorkflow, workflowFrom } from '../support/fixtures';

// An operator sees who holds a step's lease (the worker's name, as its log lines
// carry it), and, once the lease ran out, which worker died or stalled holding it.

let t: TestDatabase;
let projectId: string;
let workflowId: string;

beforeAll(async () => {
  t = await freshDatabase();
  projectId = (await createProject(t.db)).id;
  workflowId = (await workflowFrom(t.db, projectId, delayWorkflow(3600, { allowReentry: true }))).id;
});
afterAll(async () => t?.drop());

async function enrolled(email: string): Promise<string> {
  const contact = await createContact(t.db, projectId, email);
  const r = await enroll(t.db, { projectId, workflowId, contactId: contact.id });
  if (!r.ok) throw new Error('enrollment failed');
  return r.executionId;
}

const owner = async (executionId: string) =>
  (await t.query<{ leaseOwner: string | null }>(`SELECT "leaseOwner" FROM "StepExecution" WHERE "executionId" = $1`, [executionId]))[0]?.leaseOwner;

describe('the lease holder', () => {
  it('is recorded by both step claims, and a re-claim names the new holder', async () => {
    const a = await enrolled('holder-a@example.com');
    const c = await claimStep(t.db, { executionId: a, expectedVersion: 1, leaseSeconds: 0, owner: 'worker:host-1:101' });
    expect(c.won).toBe(true);
    expect(await owner(a)).toBe('worker:host-1:101');

    // The lease (0 s) ran out: the next worker's claim takes the step and is now its holder.
    await new Promise((r) => setTimeout(r, 20));
    const { claims } = await claimReadySteps(t.db, { limit: 10, leaseSeconds: 30, owner: 'worker:host-2:202' });
    expect(claims.map((x) => x.executionId)).toContain(a);
    expect(await owner(a)).toBe('worker:host-2:202');
  });

  it('is shown on the execution page and in the LEASE_EXPIRED listing', async () => {
    const b = await enrolled('holder-b@example.com');
    const c = await claimStep(t.db, { executionId: b, expectedVersion: 1, leaseSeconds: 0, owner: 'worker:dead-host:303' });
    expect(c.won).toBe(true);
    await new Promise((r) => setTimeout(r, 20));
    const detail = await executionDetail(t.db, { projectId, workflowId: null, graceSeconds: 0 }, b);
    expect(detail?.next).toMatchObject({ kind: 'lease', owner: 'worker:dead-host:303' });
    const stuck = await listStuck(t.db, { projectId, workflowId: null, graceSeconds: 0, reasons: ['LEASE_EXPIRED'], cursor: null, limit: 50 });
    const item = stuck.items.find((i) => i.executionId === b);
    expect(item?.detail).toMatchObject({ leaseOwner: 'worker:dead-host:303' });
  });
});
