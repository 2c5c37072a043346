import pg from 'pg';
import {
  advanceExecutions,
  advanceFromWaits,
  claimDueEvents,
  claimDueWaits,
  claimQueuedMessages,
  claimReadySteps,
  lockDueWaits,
  parkExecution,
  recordDeliveries,
  type Completion,
  type DueWaitClaim,
  type StepClaim,
} from '../server/engine/claims';
import { runStep } from '../server/engine/steps';
import { IDLE_QUEUE_POLL_MS, WAIT_BATCH } from '../server/engine/worker';
import { nextStepId, type WorkflowGraph } from '../server/engine/workflow-graph';
import type { StepType } from '../server/common/workflow-definition';
import { prepared, recordStatement, type Statement } from './support';

// The raw baseline's worker process: the same passes as scripts/worker.ts runs, the same
// statements (recorded from server/engine/claims/, so they cannot drift from the engine's) and the
// same transactions, sent over plain pg as named prepared statements: no Prisma, no
// lease renewal timers, no logging. What is left is what PostgreSQL needs for a step.

const url = process.env.DATABASE_URL!;
const concurrency = Number(process.argv[process.argv.indexOf('--concurrency') + 1] || 4);
/** The workflow whose executions this run drains: the process exits once none is active. */
const workflowId = process.argv[process.argv.indexOf('--workflow') + 1]!;
const LEASE = 30;
const owner = `raw:${process.pid}`;
const pool = new pg.Pool({ connectionString: url, max: concurrency + 2, application_name: 'waypost-bench-raw' });

let statements = 0;
async function q<T extends pg.QueryResultRow>(s: Statement, client: pg.Pool | pg.PoolClient = pool): Promise<T[]> {
  statements++;
  return (await client.query<T>(prepared(s))).rows;
}

/** Graphs by version id, as the engine's graphs.ts keeps them (a published version never changes). */
const graphs = new Map<string, WorkflowGraph>();
async function graphOf(claim: { workflowId: string; workflowVersionId: string }): Promise<WorkflowGraph> {
  const hit = graphs.get(claim.workflowVersionId);
  if (hit) return hit;
  const steps = await pool.query(`SELECT id, key, type, name, config FROM "WorkflowStep" WHERE "versionId" = $1`, [claim.workflowVersionId]);
  const transitions = await pool.query(`SELECT "fromStepId", "toStepId", branch FROM "WorkflowTransition" WHERE "versionId" = $1`, [
    claim.workflowVersionId,
  ]);
  const graph = {
    id: claim.workflowId,
    versionId: claim.workflowVersionId,
    steps: new Map(steps.rows.map((s) => [s.id, { id: s.id, key: s.key, type: s.type as StepType, name: s.name, config: s.config }])),
    transitions: new Map(transitions.rows.map((t) => [`${t.fromStepId}:${t.branch ?? ''}`, t.toStepId])),
  } as unknown as WorkflowGraph;
  graphs.set(claim.workflowVersionId, graph);
  return graph;
}

/** A claimed step's completion, computed in memory as the engine's runner computes it; a park is recorded on its own. */
async function complete(claim: StepClaim): Promise<Completion | null> {
  const graph = await graphOf(claim);
  const step = graph.steps.get(claim.stepId)!;
  const outcome = runStep({
    type: step.type,
    config: step.config,
    contact: { email: claim.contactEmail, data: claim.contactData ?? {}, subscribed: claim.contactSubscribed },
    context: claim.context ?? {},
  });
  const claimNext = { leaseSeconds: LEASE, owner };
  if (outcome.kind === 'advance') {
    const next = nextStepId(graph, claim.stepId, outcome.branch);
    return {
      claim,
      advance: {
        nextStepId: next ?? claim.stepId,
        status: next ? 'RUNNING' : 'COMPLETED',
        output: outcome.branch === null ? outcome.output : { ...outcome.output, branch: outcome.branch },
        contactPatch: outcome.contactPatch ?? null,
        message: outcome.message ?? null,
        claimNext,
      },
    };
  }
  if (outcome.kind === 'park') {
    if (outcome.eventName) throw new Error('the raw baseline runs no WAIT_FOR_EVENT');
    if (outcome.dueInSeconds <= 0) {
      // DELAY 0 goes on at once, as the engine's runner does (no park/wake round trip).
      const next = nextStepId(graph, claim.stepId, null);
      return {
        claim,
        advance: {
          nextStepId: next ?? claim.stepId,
          status: next ? 'RUNNING' : 'COMPLETED',
          output: { ...outcome.output, resolvedBy: 'TIMEOUT', branch: null },
          elapsed: true,
          claimNext,
        },
      };
    }
    await q(recordStatement((db) => parkExecution(db, claim, { dueInSeconds: outcome.dueInSeconds, output: outcome.output })));
    return null;
  }
  if (outcome.kind === 'exit') {
    return { claim, advance: { nextStepId: claim.stepId, status: 'EXITED', exitReason: outcome.reason, output: { exitReason: outcome.reason } } };
  }
  throw new Error(`unexpected outcome ${outcome.kind}: ${'error' in outcome ? outcome.error : ''}`);
}

/**
 * Drive claimed executions side by side, as the engine's worker does: each turn runs
 * every claim's step and records the turn's completions in one advanceExecutions
 * statement, which also claims each execution's next step.
 */
async function drive(first: StepClaim[]): Promise<number> {
  let claims = first;
  let steps = 0;
  while (claims.length > 0) {
    const completions = (await Promise.all(claims.map(complete))).filter((c): c is Completion => c !== null);
    steps += claims.length;
    if (completions.length === 0) break;
    const rows = await q<StepClaim & { stepExecutionId: string | null }>(recordStatement((db) => advanceExecutions(db, completions)));
    claims = rows.filter((r) => r.stepExecutionId);
  }
  return steps;
}

async function stepsQueue(): Promise<number> {
  const claims = await q<StepClaim>(recordStatement((db) => claimReadySteps(db, { limit: concurrency, leaseSeconds: LEASE, owner, maxAttempts: 3 })));
  await drive(claims.filter((c) => c.stepExecutionId));
  return claims.length;
}

async function waitsQueue(): Promise<number> {
  const client = await pool.connect();
  let waits: DueWaitClaim[] = [];
  try {
    await client.query('BEGIN');
    statements++;
    const locked = await q<{ id: string }>(recordStatement((db) => lockDueWaits(db, { limit: WAIT_BATCH })), client);
    if (locked.length > 0) {
      waits = await q<DueWaitClaim>(recordStatement((db) => claimDueWaits(db, { stepExecutionIds: locked.map((r) => r.id) })), client);
    }
    await client.query('COMMIT');
    statements++;
  } finally {
    client.release();
  }
  if (waits.length === 0) return 0;
  const advances = await Promise.all(
    waits.map(async (w, i) => {
      const next = nextStepId(await graphOf(w), w.stepId, w.branch);
      return {
        executionId: w.executionId,
        expectedVersion: w.version,
        stepExecutionId: w.stepExecutionId,
        waitStepId: w.stepId,
        nextStepId: next ?? w.stepId,
        status: next ? ('RUNNING' as const) : ('COMPLETED' as const),
        contextPatch: {},
        claimNext: i < concurrency,
      };
    }),
  );
  const rows = await q<StepClaim & { stepExecutionId: string | null }>(recordStatement((db) => advanceFromWaits(db, advances, { leaseSeconds: LEASE, owner })));
  const claims = rows.map((row) => (row.stepExecutionId ? row : null));
  await drive(claims.filter((c): c is StepClaim => c !== null));
  return waits.length;
}

async function eventsQueue(): Promise<number> {
  return (await q(recordStatement((db) => claimDueEvents(db, { owner, leaseSeconds: LEASE, limit: concurrency })))).length;
}

async function messagesQueue(): Promise<number> {
  const messages = await q<{ id: string; version: number }>(
    recordStatement((db) => claimQueuedMessages(db, { owner, leaseSeconds: LEASE, limit: concurrency })),
  );
  if (messages.length > 0) {
    await q(
      recordStatement((db) =>
        recordDeliveries(db, { owner, outcomes: messages.map((m) => ({ messageId: m.id, version: m.version, providerId: `log:${m.id}` })) }),
      ),
    );
  }
  return messages.length;
}

// The engine's pass (server/engine/worker.ts): the queues side by side; a worker busy with
// steps polls an idle timer or event queue at most every IDLE_QUEUE_POLL_MS.
let busy = false;
const polled = { waits: { at: 0, found: true }, events: { at: 0, found: true } };
async function pass(): Promise<{ work: number; full: boolean }> {
  const now = Date.now();
  const due = (queue: { at: number; found: boolean }) => !busy || queue.found || now - queue.at >= IDLE_QUEUE_POLL_MS;
  const plan = { waits: due(polled.waits), events: due(polled.events) };
  const [steps, waits, events, messages] = await Promise.all([
    stepsQueue(),
    plan.waits ? waitsQueue() : 0,
    plan.events ? eventsQueue() : 0,
    messagesQueue(),
  ]);
  if (plan.waits) polled.waits = { at: now, found: waits > 0 };
  if (plan.events) polled.events = { at: now, found: events > 0 };
  busy = steps > 0;
  return { work: steps + waits + events + messages, full: plan.waits && plan.events };
}

async function main(): Promise<void> {
  await pool.query('SELECT 1');
  process.stdout.write('ready\n');
  await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()));
  // stdin stays open otherwise, and would keep the process alive after its work is done.
  process.stdin.destroy();
  const cpuAtGo = process.cpuUsage();
  for (;;) {
    const { work, full } = await pass();
    // Work found, or a queue left out of this pass (the next one polls them all): go again.
    if (work > 0 || !full) continue;
    const { rows } = await pool.query<{ active: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM "WorkflowExecution" WHERE "workflowId" = $1 AND status IN ('RUNNING', 'WAITING')) AS active`,
      [workflowId],
    );
    if (!rows[0]!.active) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  const cpu = process.cpuUsage(cpuAtGo);
  process.stdout.write(`result ${JSON.stringify({ statements, cpuSeconds: (cpu.user + cpu.system) / 1e6 })}\n`);
  await pool.end();
}

main().catch((error) => {
  process.stderr.write(`raw worker failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
