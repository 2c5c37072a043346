import { expect } from 'vitest';
import superjson from 'superjson';
import { checkInvariants } from '../../server/engine/invariants';
import type { TestDatabase } from './database';
import { waitFor } from './processes';

// What the reliability tests (test/reliability/) share: calls to the real server as a
// backend makes them (an API key, over /api/trpc and /api/v1), the workflow they drive,
// and the check that everything accepted was run exactly once and no invariant broke.

export interface Answer {
  status: number;
  headers: Headers;
  body: any;
}

/** A response's status, headers and body (parsed when it is JSON). */
export async function answer(response: Response): Promise<Answer> {
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, headers: response.headers, body };
}

/** A backend's calls with one API key; each answers its status, headers and parsed body. */
export function apiClient(base: string, key: string) {
  const auth = { authorization: `Bearer ${key}` };
  const post = async (path: string, body: unknown) =>
    answer(await fetch(`${base}${path}`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify(body) }));
  return {
    /** POST /api/v1/enrollments */
    enrollRest: (workflowId: string, email: string) => post('/api/v1/enrollments', { workflowId, email }),
    /** POST /api/v1/events */
    trackRest: (name: string, email: string, idempotencyKey?: string) => post('/api/v1/events', { name, email, idempotencyKey }),
    /** A tRPC mutation (superjson, unbatched). */
    mutation: (path: string, input: unknown) => post(`/api/trpc/${path}`, superjson.serialize(input)),
    /** A tRPC query (GET). */
    query: async (path: string, input: unknown) =>
      answer(await fetch(`${base}/api/trpc/${path}?input=${encodeURIComponent(JSON.stringify(superjson.serialize(input)))}`, { headers: auth })),
    /** A batched tRPC request of queries. */
    batch: async (calls: { path: string; input: unknown }[]) => {
      const input = Object.fromEntries(calls.map((c, i) => [i, superjson.serialize(c.input)]));
      return answer(
        await fetch(`${base}/api/trpc/${calls.map((c) => c.path).join(',')}?batch=1&input=${encodeURIComponent(JSON.stringify(input))}`, { headers: auth }),
      );
    },
  };
}

/** The executionId a successful enrollment answered, over either endpoint. */
export function executionIdOf(a: Answer): string {
  const data = a.body?.result?.data;
  return (data ? superjson.deserialize<{ executionId: string }>(data) : a.body).executionId;
}

/**
 * After the faults: every execution of the workflow finished (COMPLETED) within
 * `timeoutMs`, each with exactly one SENT message per email step (nothing sent twice,
 * nothing lost), no step left RUNNING, every execution a client was told about exists,
 * and every invariant holds.
 */
export async function expectAllRunOnce(
  t: TestDatabase,
  workflowId: string,
  accepted: readonly string[],
  timeoutMs = 90_000,
): Promise<void> {
  const settled = waitFor(
    'every execution to complete',
    async () => {
      const [row] = await t.query(`SELECT count(*) FILTER (WHERE status <> 'COMPLETED')::int AS open FROM "WorkflowExecution" WHERE "workflowId" = $1`, [workflowId]);
      const [queued] = await t.query(`SELECT count(*)::int AS n FROM "Message" m JOIN "WorkflowExecution" e ON e.id = m."executionId" WHERE e."workflowId" = $1 AND m.status <> 'SENT'`, [workflowId]);
      return row.open === 0 && queued.n === 0;
    },
    timeoutMs,
    200,
  );
  await settled.catch(async (error) => {
    // Say where they are: it is the first thing anyone debugging this needs.
    const executions = await t.query(
      `SELECT e.status, ws.key, se.status AS "stepStatus", count(*)::int AS n FROM "WorkflowExecution" e
         LEFT JOIN "WorkflowStep" ws ON ws.id = e."currentStepId"
         LEFT JOIN "StepExecution" se ON se."executionId" = e.id AND se."stepId" = e."currentStepId"
        WHERE e."workflowId" = $1 GROUP BY 1, 2, 3`,
      [workflowId],
    );
    const messages = await t.query(`SELECT status, count(*)::int AS n FROM "Message" GROUP BY 1`);
    throw new Error(`${(error as Error).message}: executions ${JSON.stringify(executions)}, messages ${JSON.stringify(messages)}`);
  });
  const [emails] = await t.query(
    `SELECT count(*) FILTER (WHERE n <> 1)::int AS wrong, count(*)::int AS steps FROM (
       SELECT se.id, count(m.id) FILTER (WHERE m.status = 'SENT') AS n
         FROM "StepExecution" se
         JOIN "WorkflowStep" ws ON ws.id = se."stepId" AND ws.type = 'SEND_EMAIL'
         JOIN "WorkflowExecution" e ON e.id = se."executionId" AND e."workflowId" = $1
         LEFT JOIN "Message" m ON m."stepExecutionId" = se.id
        GROUP BY se.id) v`,
    [workflowId],
  );
  const [executions] = await t.query(`SELECT count(*)::int AS n FROM "WorkflowExecution" WHERE "workflowId" = $1`, [workflowId]);
  expect(emails.wrong, 'email steps without exactly one sent message').toBe(0);
  expect(emails.steps, 'two email steps per execution').toBe(executions.n * 2);
  const [running] = await t.query(`SELECT count(*)::int AS n FROM "StepExecution" WHERE status = 'RUNNING'`);
  expect(running.n, 'steps left RUNNING').toBe(0);
  const found = await t.query(`SELECT id FROM "WorkflowExecution" WHERE id = ANY($1::uuid[])`, [accepted]);
  expect(found.length, 'accepted enrollments present').toBe(new Set(accepted).size);
  const bad = (await checkInvariants(t.db)).filter((r) => r.violations > 0);
  expect(bad).toEqual([]);
}
