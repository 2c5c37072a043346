import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ExecutionStatus } from '../server/db';
import { createCaller } from '../server/trpc/root';
import { conflictError, publicProcedure, router, type Context } from '../server/trpc/trpc';
import { actorFor, contextFor } from './support/callers';
import { freshDatabase, type TestDatabase } from './support/database';
import { createContact, createProject, versionId, waitWorkflow, workflowFrom } from './support/fixtures';

let t: TestDatabase;
let ctx: Context;

beforeAll(async () => {
  t = await freshDatabase();
  ctx = contextFor(t.db, null);
});
afterAll(() => t.drop());

describe('health.invariants', () => {
  it('answers every invariant of docs/architecture.md (I1–I9), each with zero violations on a clean database', async () => {
    const project = await createProject(t.db);
    const results = await createCaller(contextFor(t.db, actorFor(project.id, 'VIEWER'))).health.invariants();
    expect(results.map((r) => r.id)).toEqual(['I1', 'I2', 'I3', 'I4', 'I5', 'I6', 'I7', 'I8', 'I9']);
    for (const result of results) {
      expect(result.title).not.toBe('');
      expect(result.violation).not.toBe('');
      expect(result.violations).toBe(0);
    }
  });
});

describe('workflows.list', () => {
  it("counts each workflow's executions by status, zeros included, and its steps", async () => {
    const project = await createProject(t.db);
    const busy = await workflowFrom(t.db, project.id, waitWorkflow({ name: 'busy' }));
    const idle = await workflowFrom(t.db, project.id, waitWorkflow({ name: 'idle', trigger: 'EVENT', triggerEvent: 'signup' }));
    const busyVersion = await versionId(t.db, busy.id);
    const statuses: ExecutionStatus[] = ['WAITING', 'WAITING', 'COMPLETED', 'FAILED'];
    for (const [i, status] of statuses.entries()) {
      // One contact each: I1 allows one active execution per (workflow, contact).
      const contact = await createContact(t.db, project.id, `c${i}@example.com`);
      await t.db.workflowExecution.create({
        data: { projectId: project.id, workflowId: busy.id, workflowVersionId: busyVersion, contactId: contact.id, status },
      });
    }

    const list = await createCaller(contextFor(t.db, actorFor(project.id, 'VIEWER'))).workflows.list();

    expect(list.map((w) => w.name)).toEqual(['busy', 'idle']);
    const [busyRow, idleRow] = list;
    expect(busyRow).toMatchObject({ id: busy.id, trigger: 'MANUAL', enabled: true, allowReentry: false, stepCount: 5 });
    expect(busyRow!.executions).toEqual({ RUNNING: 0, WAITING: 2, COMPLETED: 1, EXITED: 0, FAILED: 1, CANCELLED: 0 });
    expect(idleRow).toMatchObject({ id: idle.id, trigger: 'EVENT', triggerEvent: 'signup' });
    expect(Object.values(idleRow!.executions).every((n) => n === 0)).toBe(true);
  });
});

describe('error shape (docs/api.md, "Errors")', () => {
  // A router of its own, so the formatter is tested apart from any product procedure.
  const probe = router({
    rename: publicProcedure
      .input(z.object({ name: z.string().min(1), contacts: z.array(z.object({ email: z.email() })) }))
      .mutation(() => 'renamed'),
    resolveWait: publicProcedure.mutation(() => {
      throw conflictError({ reason: 'WAIT_RESOLVED', resolvedBy: 'TIMEOUT', at: '2026-12-01T00:00:00.000Z' });
    }),
  });

  async function call(path: string, json: unknown) {
    const response = await fetchRequestHandler({
      endpoint: '/api/trpc',
      router: probe,
      createContext: () => ctx,
      req: new Request(`http://localhost/api/trpc/${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ json }),
      }),
    });
    return { status: response.status, body: (await response.json()) as { error: { json: { data: Record<string, unknown> } } } };
  }

  it('invalid input is BAD_REQUEST with zod field errors and full paths, never a 500', async () => {
    const { status, body } = await call('rename', { name: '', contacts: [{ email: 'ok@example.com' }, { email: 'nope' }] });
    expect(status).toBe(400);
    const data = body.error.json.data;
    expect(data.code).toBe('BAD_REQUEST');
    expect(data.zodError).toMatchObject({
      fieldErrors: { name: [expect.any(String)], contacts: [expect.any(String)] },
      issues: expect.arrayContaining([
        { path: 'name', message: expect.any(String) },
        { path: 'contacts.1.email', message: expect.any(String) },
      ]),
    });
    expect(data.conflict).toBeNull();
  });

  it('a lost claim is CONFLICT whose data.conflict says what won', async () => {
    const { status, body } = await call('resolveWait', undefined);
    expect(status).toBe(409);
    const data = body.error.json.data;
    expect(data.code).toBe('CONFLICT');
    expect(data.conflict).toEqual({ reason: 'WAIT_RESOLVED', resolvedBy: 'TIMEOUT', at: '2026-12-01T00:00:00.000Z' });
    expect(data.zodError).toBeNull();
  });
});
