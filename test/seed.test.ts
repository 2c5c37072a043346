import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkInvariants } from '../server/engine/invariants';
import { countStuck } from '../server/stuck/counts';
import { seedDemo, DEMO_USERS } from '../prisma/seed';
import { freshDatabase, type TestDatabase } from './support/database';

let t: TestDatabase;
beforeAll(async () => {
  t = await freshDatabase();
});
afterAll(async () => t?.drop());

describe('demo seed', () => {
  it('creates the demo project with one user per role, workflows and executions in several states', async () => {
    const result = await seedDemo(t.db);
    expect(result.created).toBe(true);
    expect(result.logins.map((l) => l.role).sort()).toEqual(['MARKETER', 'OPERATOR', 'OWNER', 'VIEWER']);
    const project = await t.db.project.findUniqueOrThrow({ where: { name: 'demo' } });
    const memberships = await t.db.membership.findMany({ where: { projectId: project.id }, include: { user: true } });
    expect(memberships.map((m) => m.user.email).sort()).toEqual(DEMO_USERS.map((u) => u.email).sort());
    // Passwords are stored hashed, never as given.
    const accounts = await t.db.account.findMany();
    expect(accounts.every((a) => a.password && !a.password.includes('waypost-demo'))).toBe(true);

    const workflows = await t.db.workflow.findMany({ where: { projectId: project.id } });
    expect(workflows.map((w) => w.name)).toEqual(
      expect.arrayContaining(['Welcome series', 'Abandoned cart recovery', 'Order confirmation']),
    );
    const byStatus = await t.db.workflowExecution.groupBy({ by: ['status'], _count: true });
    const counts = Object.fromEntries(byStatus.map((s) => [s.status, s._count]));
    expect(counts.WAITING).toBeGreaterThanOrEqual(5);
    expect(counts.COMPLETED).toBeGreaterThanOrEqual(3);
    expect(counts.EXITED).toBeGreaterThanOrEqual(1);
    expect(counts.FAILED).toBeGreaterThanOrEqual(1);
    expect(await t.db.event.count({ where: { deadAt: { not: null } } })).toBe(1);
    // The incident the console opens on: stuck cases that wait for an operator even
    // while workers run (the self-healing reasons are healed by the workers in seconds).
    const stuck = await countStuck(t.db, { projectId: project.id, graceSeconds: 0 });
    expect(stuck).toMatchObject({ FAILED: 1, EVENT_DEAD: 1, LEASE_EXPIRED: 1 });
    const dead = await t.db.event.findFirstOrThrow({ where: { deadAt: { not: null } } });
    expect(dead).toMatchObject({ name: 'purchase', dispatchAttempts: 8, lastError: expect.stringMatching(/worker process was killed/) });
    expect(await t.db.message.count({ where: { status: 'SENT' } })).toBeGreaterThanOrEqual(10);
    for (const inv of await checkInvariants(t.db)) expect(inv, inv.id).toMatchObject({ violations: 0 });
  });

  it('is idempotent: a second run changes nothing', async () => {
    const before = await t.db.workflowExecution.count();
    const again = await seedDemo(t.db);
    expect(again.created).toBe(false);
    expect(await t.db.workflowExecution.count()).toBe(before);
    expect(await t.db.project.count()).toBe(1);
  });
});
