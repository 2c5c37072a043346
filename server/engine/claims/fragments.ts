import { Prisma } from '../../db';
import { ACTIVE_STATUSES } from '../../common/execution-status';
import { executionFrom, NO_ROW, stepFrom, TRANSITIONS, type ClaimName, type Transition } from '../transitions';

// The pieces of SQL that more than one claim's statement is made of, each written once:
// a fence or guard changed here changes every claim that relies on it. Each piece names
// the table alias it expects (`e` an execution, `s` a step row, `m` a message, `ev` an
// event). A piece is a Prisma.sql fragment, so its values stay bound parameters.

/** `n` seconds (fractions allowed) as an SQL interval. */
export function seconds(n: number): Prisma.Sql {
  return Prisma.sql`${n}::float8 * interval '1 second'`;
}

/** The time `n` seconds from the statement's start: leases, wake-ups, timers. */
export function secondsFromNow(n: number): Prisma.Sql {
  return Prisma.sql`now() + ${seconds(n)}`;
}

/**
 * The SET of a move along a transition: to `nextStepId`, RUNNING and due now (or at
 * `readyAt`: the lease of a claim of the next step made in the same statement); or, at
 * the end of the journey (COMPLETED, EXITED), finished where it stands. Status and step are
 * values (one execution) or a batch's columns.
 */
export function moveTo(status: string | Prisma.Sql, nextStepId: string | Prisma.Sql, readyAt: Prisma.Sql = Prisma.sql`now()`): Prisma.Sql {
  const to = typeof status === 'string' ? Prisma.sql`${status}` : status;
  const at = typeof nextStepId === 'string' ? Prisma.sql`${nextStepId}::uuid` : nextStepId;
  return Prisma.sql`status = ${to}::"ExecutionStatus",
             "currentStepId" = ${at},
             "readyAt" = CASE WHEN ${to} = 'RUNNING' THEN ${readyAt} END,
             "finishedAt" = CASE WHEN ${to} = 'RUNNING' THEN NULL ELSE now() END`;
}

// ---------------------------------------------------------------------------
// Claiming a step row

/**
 * The second half of every step claim, after an `exec` CTE has claimed executions (those
 * for which `only` holds): the step row of each (I2: unique per execution and step) is
 * created, or re-claimed as a new attempt when its last attempt failed, an operator
 * reset it (PENDING) or its lease ran out. A step a live worker holds is never taken: the DO UPDATE's WHERE leaves it, and
 * the claim comes back without a step row (unclaimable). A re-claim keeps the row's
 * startedAt: a step (a wait, say) began at its first claim, whatever its attempts.
 */
export function stepRowClaim(leaseSeconds: number, owner: string | null, only: Prisma.Sql = Prisma.sql`TRUE`): Prisma.Sql {
  return Prisma.sql`-- stepRowClaim
    INSERT INTO "StepExecution" AS s
             (id, "executionId", "stepId", status, attempt, "claimToken", "leaseOwner", "leaseExpiresAt", "startedAt")
      SELECT gen_random_uuid(), exec.id, exec."currentStepId", 'RUNNING', 1, gen_random_uuid(), ${owner}::text,
             ${secondsFromNow(leaseSeconds)}, now()
        FROM exec
       WHERE ${only}
      ON CONFLICT ("executionId", "stepId") DO UPDATE
         SET status = 'RUNNING', attempt = s.attempt + 1, "claimToken" = EXCLUDED."claimToken",
             "leaseOwner" = EXCLUDED."leaseOwner", "leaseExpiresAt" = EXCLUDED."leaseExpiresAt", error = NULL
       WHERE s.status IN ('PENDING', 'FAILED') OR (s.status = 'RUNNING' AND s."leaseExpiresAt" < now())
      RETURNING s.id, s."executionId", s."claimToken", s.attempt`;
}

// ---------------------------------------------------------------------------
// The completion fence (I6): what every write of a claimed step checks.

/**
 * Where a statement reads a claim from: its bound values (one claim, claimValues) or the
 * columns of a batch's input rows (batchClaimColumns), so that one fence serves both.
 */
export interface ClaimRef {
  executionId: Prisma.Sql;
  version: Prisma.Sql;
  stepId: Prisma.Sql;
  stepExecutionId: Prisma.Sql;
  claimToken: Prisma.Sql;
}

/** One claim, as bound values (what the fence reads of execution.ts's StepClaim). */
export function claimValues(claim: { executionId: string; version: number; stepId: string; stepExecutionId: string; claimToken: string }): ClaimRef {
  return {
    executionId: Prisma.sql`${claim.executionId}::uuid`,
    version: Prisma.sql`${claim.version}`,
    stepId: Prisma.sql`${claim.stepId}::uuid`,
    stepExecutionId: Prisma.sql`${claim.stepExecutionId}::uuid`,
    claimToken: Prisma.sql`${claim.claimToken}::uuid`,
  };
}

/** A batch's claims, as the columns of its input rows `v` (one row per claim, from unnest). */
export const batchClaimColumns: ClaimRef = {
  executionId: Prisma.sql`v."executionId"`,
  version: Prisma.sql`v.version`,
  stepId: Prisma.sql`v."stepId"`,
  stepExecutionId: Prisma.sql`v."stepExecutionId"`,
  claimToken: Prisma.sql`v."claimToken"`,
};

/**
 * Step row `s` is the claimed attempt: the same row, the same claim token, still RUNNING.
 * With `liveLease`, its lease has not run out either (a lease that ran out belongs to
 * whoever takes the step next).
 */
export function stepStillClaimed(claim: ClaimRef, opts: { liveLease?: boolean } = {}): Prisma.Sql {
  const lease = opts.liveLease ? Prisma.sql` AND s."leaseExpiresAt" >= now()` : Prisma.empty;
  return Prisma.sql`s.id = ${claim.stepExecutionId} AND s."claimToken" = ${claim.claimToken} AND s.status = 'RUNNING'${lease}`;
}

/**
 * Execution `e` is as the claim left it: the claim's version (bumped by every claim, so a
 * re-claim after lease expiry or any other writer fences this one out), RUNNING at the
 * claimed step, and its step row still held with the claim token.
 */
export function executionStillClaimed(claim: ClaimRef, opts: { liveLease?: boolean } = {}): Prisma.Sql {
  return Prisma.sql`e.id = ${claim.executionId} AND e.version = ${claim.version}
         AND e.status = 'RUNNING' AND e."currentStepId" = ${claim.stepId}
         AND EXISTS (SELECT 1 FROM "StepExecution" s WHERE ${stepStillClaimed(claim, opts)})`;
}

/**
 * The CTE after a wait resolution's `w` (the step rows it resolved): each execution still
 * WAITING at its resolved step gets a new version, since resolving is a state change that
 * fences out whoever looked before.
 */
export const bumpExecutionsOfResolvedWaits = Prisma.sql`exec AS (
      UPDATE "WorkflowExecution" e
         SET version = e.version + 1, "updatedAt" = now()
        FROM w
       WHERE e.id = w."executionId" AND e.status = 'WAITING' AND e."currentStepId" = w."stepId"
      RETURNING e.id, e.version, e."workflowId", e."workflowVersionId"
    )`;

// ---------------------------------------------------------------------------
// Event time decides (docs/event-time.md): an event accepted inside a wait's window
// [startedAt, dueAt) resumes it by EVENT, however late its dispatch runs or however early
// the timer fires; one accepted at or after dueAt never does. Three parties meet on that
// rule: the event's dispatch (claimWaitsForEvent), the wait parking (parkExecution looks
// back) and the timer (claimDueWaits looks back). They serialise on one lock per
// (contact, event name), the event channel: insertEvent takes it while inserting an event
// and stamps createdAt after it, a parking wait and the timer take it before the
// statement that looks back, so a look-back can never miss an event accepted before it.

/** The event channel's advisory-lock key: one per (contact, event name). */
export function eventChannelKey(contactId: Prisma.Sql, eventName: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`hashtextextended((${contactId})::text || '/' || (${eventName})::text, 7)`;
}

/** Event `ev` is not yet consumed (as resumeEventId) by any wait of execution `executionId`. */
export function notConsumedBy(executionId: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`NOT EXISTS (SELECT 1 FROM "StepExecution" c
                     WHERE c."executionId" = ${executionId} AND c."resumeEventId" = ev.id)`;
}

/** A wait as the rule "event time decides" reads it: whose, for which event, and its window. */
export interface WaitWindow {
  executionId: Prisma.Sql;
  contactId: Prisma.Sql;
  projectId: Prisma.Sql;
  eventName: Prisma.Sql;
  /** The window [startedAt, dueAt): the wait's first claim, and its deadline. */
  startedAt: Prisma.Sql;
  dueAt: Prisma.Sql;
}

/** The window of a parked wait: step row `s` of execution `e`, at WAIT_FOR_EVENT step `ws`. */
export const parkedWaitWindow: WaitWindow = {
  executionId: Prisma.sql`e.id`,
  contactId: Prisma.sql`e."contactId"`,
  projectId: Prisma.sql`e."projectId"`,
  eventName: Prisma.sql`ws.config->>'eventName'`,
  startedAt: Prisma.sql`s."startedAt"`,
  dueAt: Prisma.sql`s."dueAt"`,
};

/**
 * Event time decides, as one predicate: event `ev` resumes the wait by EVENT. It is the
 * contact's, in the project, has the name the wait expects, was accepted inside the
 * window [startedAt, dueAt), and no wait of the execution has consumed it yet. The
 * event's dispatch, the parking wait's look-back, the timer, an operator's FORCE_TIMEOUT
 * and waits.resolve all ask this, and only this.
 */
export function eventResumesWait(w: WaitWindow): Prisma.Sql {
  return Prisma.sql`ev."contactId" = ${w.contactId} AND ev."projectId" = ${w.projectId} AND ev.name = ${w.eventName}
         AND ev."createdAt" >= ${w.startedAt} AND ev."createdAt" < ${w.dueAt}
         AND ${notConsumedBy(w.executionId)}`;
}

// ---------------------------------------------------------------------------
// The operators' guards (server/repair). Their from-statuses come from the transitions
// table (server/engine/transitions.ts), which the repair planner reads too.

const executionStatuses = (list: readonly string[]) => Prisma.join(list.map((s) => Prisma.sql`${s}::"ExecutionStatus"`));
export const stepStatuses = (list: readonly string[]) => Prisma.join(list.map((s) => Prisma.sql`${s}::"StepStatus"`));

/** Execution `e` is in one of the statuses `claim` moves from. */
export function executionMayMove(claim: ClaimName): Prisma.Sql {
  return Prisma.sql`e.status IN (${executionStatuses(executionFrom(claim))})`;
}

/** Execution `e`'s current step row is one `claim` may move (or absent, where the table lists NONE). */
export function stepRowMayMove(claim: ClaimName): Prisma.Sql {
  const gate = (TRANSITIONS[claim] as Transition).step;
  if (!gate?.gate) return Prisma.sql`TRUE`;
  const row = Prisma.sql`-- stepRowMayMove
    SELECT 1 FROM "StepExecution" g WHERE g."executionId" = e.id AND g."stepId" = e."currentStepId"`;
  return (gate.from as readonly string[]).includes(NO_ROW)
    ? Prisma.sql`NOT EXISTS (${row} AND g.status NOT IN (${stepStatuses(stepFrom(claim))}))`
    : Prisma.sql`EXISTS (${row} AND g.status IN (${stepStatuses(stepFrom(claim))}))`;
}

/**
 * Execution `e`'s current step is not held by a live worker (a RUNNING step row whose
 * lease has not run out). An operator taking such a step would race the worker finishing it.
 */
export const noLiveWorkerHoldsStep = Prisma.sql`NOT EXISTS (
  SELECT 1 FROM "StepExecution" h
   WHERE h."executionId" = e.id AND h."stepId" = e."currentStepId"
     AND h.status = 'RUNNING' AND h."leaseExpiresAt" >= now())`;

/**
 * `status` (an execution's status column) is active (server/common/execution-status.ts).
 * Written as literals, not bound values: the planner must see that the statement implies
 * the partial indexes' `status IN ('RUNNING', 'WAITING')` to use them.
 */
export function executionIsActive(status: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`${status} IN (${Prisma.raw(ACTIVE_STATUSES.map((s) => `'${s}'`).join(', '))})`;
}

/** I1: another execution of `e`'s (workflow, contact) is active (a subquery of their ids). */
export const activeSiblingOf = (e: Prisma.Sql) => Prisma.sql`-- activeSiblingOf
  SELECT o.id FROM "WorkflowExecution" o
   WHERE o."workflowId" = ${e}."workflowId" AND o."contactId" = ${e}."contactId" AND o.id <> ${e}.id
     AND ${executionIsActive(Prisma.sql`o.status`)}`;

/**
 * The message repairs' guard: message `m`'s fate is for an operator to decide. It FAILED,
 * or it is SENDING and its sender's lease ran out (the sender died mid-send). A SENDING
 * message whose lease is live belongs to the sender working on it.
 */
export const messageAwaitsOperator = Prisma.sql`(m.status = 'FAILED' OR (m.status = 'SENDING' AND m."leaseExpiresAt" < now()))`;
