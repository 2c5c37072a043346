import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { describe, expect, it, vi } from 'vitest';
import { errorId } from '../../server/trpc/errors';
import { publicProcedure, router } from '../../server/trpc/trpc';

// An unexpected error reaches the client as a generic sentence with a
// request id, never its message or stack (in any NODE_ENV); the log line has the same id.

const leaky = router({
  boom: publicProcedure.query(() => {
    throw new Error('relation "secret_table" does not exist at /srv/waypost/server/x.ts:12');
  }),
});

async function call(nodeEnv: string) {
  vi.stubEnv('NODE_ENV', nodeEnv);
  const logged: string[] = [];
  const res = await fetchRequestHandler({
    endpoint: '/api/trpc',
    req: new Request('http://localhost/api/trpc/boom'),
    router: leaky,
    createContext: () => ({ db: null as never, headers: new Headers(), actor: null }),
    onError: ({ error }) => logged.push(`failed (request ${errorId(error)}): ${String(error.cause ?? error)}`),
  });
  vi.unstubAllEnvs();
  return { status: res.status, body: await res.text(), logged };
}

describe('an internal error', () => {
  it.each(['development', 'production', 'test'])('answers a generic message with a request id in %s', async (nodeEnv) => {
    const { status, body, logged } = await call(nodeEnv);
    expect(status).toBe(500);
    expect(body).not.toContain('secret_table');
    expect(body).not.toContain('/srv/waypost');
    expect(body).not.toContain('stack');
    const id = body.match(/Internal error \(request ([0-9a-f]{8})\)/)?.[1];
    expect(id).toBeTruthy();
    // The log line carries the same id, and the real error.
    expect(logged).toEqual([expect.stringContaining(`request ${id}`)]);
    expect(logged[0]).toContain('secret_table');
  });
});
