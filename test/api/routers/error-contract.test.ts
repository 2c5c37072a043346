import { describe, expect, it } from 'vitest';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import superjson from 'superjson';
import { appRouter } from '../../../server/trpc/root';
import type { Actor } from '../../../server/auth/actor';
import { contextFor } from '../../support/callers';
import { delayWorkflow, workflowFrom } from '../../support/fixtures';
import { t, projectId, marketer, outsider, as, setUpRouterTests } from './support';

setUpRouterTests();

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
