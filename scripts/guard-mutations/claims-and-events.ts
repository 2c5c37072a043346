import type { Mutation } from './mutation';

// The guards of the claims (I1, I4, I6: versions, tokens, leases, "active"), of the
// repairs' claims and of event time (I7: channels, look-backs, deadlines).

export const CLAIMS_AND_EVENTS_MUTATIONS: Mutation[] = [
  {
    guard: 'claimWait resolves only an unresolved WAITING row (I4)',
    edits: [
      {
        file: 'server/engine/claims/waits.ts',
        find: `WHERE s.id = \${opts.stepExecutionId}::uuid AND s.status = 'WAITING' AND s."resolvedBy" IS NULL`,
        replace: `WHERE s.id = \${opts.stepExecutionId}::uuid`,
      },
    ],
    test: 'test/race/races.test.ts',
    scenario: '2. event delivery and timeout',
  },
  {
    guard: 'claimStep is fenced by the expected version (I6)',
    edits: [
      {
        file: 'server/engine/claims/execution.ts',
        find: `WHERE e.id = \${opts.executionId}::uuid AND e.version = \${opts.expectedVersion} AND e.status = 'RUNNING'`,
        replace: `WHERE e.id = \${opts.executionId}::uuid AND e.status = 'RUNNING'`,
      },
    ],
    test: 'test/race/races.test.ts',
    scenario: '5. a stale next-step writer',
    // Two connections racing one claim: on a loaded 2-core machine the stale writer's
    // window opened as late as round 12 of 20, and twice not at all; 60 rounds leave room.
    rounds: 60,
  },
  {
    guard: 'advanceExecution is fenced by version and claim token (I6)',
    edits: [
      {
        file: 'server/engine/claims/completion.ts',
        find: `       WHERE \${executionStillClaimed(batchClaimColumns)}`,
        replace: `       WHERE e.id = v."executionId"`,
      },
      {
        file: 'server/engine/claims/completion.ts',
        find: `       WHERE \${executionStillClaimed(claimValues(claim))}
      RETURNING e.id, e.version, e."projectId", e."contactId"`,
        replace: `       WHERE e.id = \${claim.executionId}::uuid
      RETURNING e.id, e.version, e."projectId", e."contactId"`,
      },
    ],
    test: 'test/race/races.test.ts',
    scenario: '5. a stale next-step writer',
  },
  {
    guard: 'each row of a batch of completions is fenced on its own (I6)',
    edits: [
      {
        file: 'server/engine/claims/completion.ts',
        find: `       WHERE \${executionStillClaimed(batchClaimColumns)}`,
        replace: `       WHERE e.id = v."executionId"`,
      },
    ],
    test: 'test/race/batch-completion.test.ts',
    scenario: 'a stale worker batch racing a fresh one',
    rounds: 10,
  },
  {
    guard: 'a wake-up claims the wait before continuing (I4, I6): duplicate wake-ups',
    edits: [
      {
        file: 'server/engine/claims/waits.ts',
        find: `WHERE s.id = \${opts.stepExecutionId}::uuid AND s.status = 'WAITING' AND s."resolvedBy" IS NULL`,
        replace: `WHERE s.id = \${opts.stepExecutionId}::uuid`,
      },
      {
        file: 'server/engine/claims/execution.ts',
        find: `WHERE e.id = \${opts.executionId}::uuid AND e.version = \${opts.expectedVersion} AND e.status = 'RUNNING'`,
        replace: `WHERE e.id = \${opts.executionId}::uuid AND e.status = 'RUNNING'`,
      },
    ],
    test: 'test/race/races.test.ts',
    scenario: '3. eight duplicate wake-ups',
  },
  {
    guard: '"active" includes WAITING, in its one definition and the I1 index',
    edits: [
      {
        // The one definition of "active" (every statement asking it is built from it).
        file: 'server/common/execution-status.ts',
        find: `export const ACTIVE_STATUSES = [ExecutionStatus.RUNNING, ExecutionStatus.WAITING] as const`,
        replace: `export const ACTIVE_STATUSES = [ExecutionStatus.RUNNING] as const`,
      },
      {
        file: 'prisma/migrations/20261201000400_active_execution_unique/migration.sql',
        find: `WHERE "status" IN ('RUNNING', 'WAITING')`,
        replace: `WHERE "status" IN ('RUNNING')`,
      },
    ],
    test: 'test/race/races.test.ts',
    scenario: '4. re-entry while WAITING',
  },
  {
    guard: 'workers pick only executions whose step is due (readyAt), never one another holds',
    edits: [
      {
        file: 'server/engine/claims/execution.ts',
        find: `       WHERE status = 'RUNNING' AND "readyAt" <= now()
         AND NOT EXISTS`,
        replace: `       WHERE status = 'RUNNING'
         AND NOT EXISTS`,
      },
    ],
    test: 'test/race/workers.test.ts',
    scenario: '7. four worker processes',
    rounds: 5,
  },
  {
    guard: 'an expired lease can be re-claimed (a dead worker does not hold work forever)',
    edits: [
      {
        file: 'server/engine/claims/fragments.ts',
        find: `WHERE s.status IN ('PENDING', 'FAILED') OR (s.status = 'RUNNING' AND s."leaseExpiresAt" < now())`,
        replace: `WHERE s.status IN ('PENDING', 'FAILED')`,
      },
    ],
    test: 'test/race/workers.test.ts',
    scenario: 'its lease expires',
    rounds: 2,
  },
  {
    guard: 'renewLease renews only a live lease (a stalled worker cannot revive one an operator or worker took)',
    edits: [
      {
        file: 'server/engine/claims/fragments.ts',
        find: `  const lease = opts.liveLease ? Prisma.sql\` AND s."leaseExpiresAt" >= now()\` : Prisma.empty;`,
        replace: `  const lease = Prisma.empty;`,
      },
    ],
    test: 'test/engine/lease-renewal.test.ts',
    scenario: 'a stalled worker renewing while RETRY_STEP applies',
    rounds: 1,
  },
  {
    guard: "RESEND is a CAS on the message's status and version (two operators cannot both resend an email)",
    edits: [
      {
        file: 'server/engine/claims/operator.ts',
        find: `           "providerId" = NULL, error = NULL, "sentAt" = NULL
     WHERE m.id = \${opts.messageId}::uuid AND m.version = \${opts.expectedVersion} AND \${messageAwaitsOperator}`,
        replace: `           "providerId" = NULL, error = NULL, "sentAt" = NULL
     WHERE m.id = \${opts.messageId}::uuid`,
      },
    ],
    test: 'test/repair/messages.test.ts',
    scenario: 'two operators resending at once',
    rounds: 1,
  },
  {
    guard: "a repair's claim turns I1's unique violation into ACTIVE_EXECUTION, never an exception",
    edits: [
      {
        file: 'server/engine/claims/operator.ts',
        find: `    if (isActiveExecutionViolation(error)) return { refused: true };
`,
        replace: ``,
      },
    ],
    test: 'test/repair/active-execution.test.ts',
    scenario: 'while a re-enrollment of the contact is still committing',
    rounds: 3,
  },
  {
    guard: 'bulk repair applies each row at the version and step execution it was selected with',
    edits: [
      {
        file: 'server/repair/bulk.ts',
        find: `import { applyRepair } from './actions';`,
        replace: `import { applyRepair, previewRepair } from './actions';`,
      },
      {
        file: 'server/repair/bulk.ts',
        find: `        expectedVersion: target.version,
        ...(target.executionId ? { expectedStepExecutionId: target.stepExecutionId } : {}),
`,
        replace: `        expectedVersion: (await previewRepair(db, { projectId: req.projectId, action: req.action, executionId: target.executionId, eventId: target.eventId }, opts)).expectedVersion,
`,
      },
    ],
    test: 'test/repair/bulk-selection.test.ts',
    scenario: 'SKIPPED_CHANGED',
    rounds: 1,
  },
  {
    guard: 'a parking WAIT_FOR_EVENT holds its event channel before it looks back (I7)',
    edits: [
      {
        file: 'server/engine/run-steps.ts',
        find: `        await lockEventChannel(tx, { contactId: claim.contactId, eventName });
`,
        replace: ``,
      },
    ],
    test: 'test/race/event-delivery.test.ts',
    scenario: 'a wait being claimed or parked while its event is accepted',
    rounds: 10,
  },
  {
    guard: 'a parking WAIT_FOR_EVENT looks back for an event accepted since it began (I7)',
    edits: [
      {
        file: 'server/engine/claims/completion.ts',
        find: `       WHERE \${awaitEvent}::text IS NOT NULL
         AND \${eventResumesWait({`,
        replace: `       WHERE false
         AND \${eventResumesWait({`,
      },
    ],
    test: 'test/race/event-delivery.test.ts',
    scenario: 'a wait being claimed or parked while its event is accepted',
    rounds: 4,
  },
  {
    guard: 'the timer try-locks the event channel before it looks back (event time decides)',
    edits: [
      {
        file: 'server/engine/claims/waits.ts',
        find: `        OR pg_try_advisory_xact_lock(\${eventChannelKey(Prisma.sql\`locked."contactId"\`, Prisma.sql\`ws.config->>'eventName'\`)})\``,
        replace: `        OR true\``,
      },
    ],
    test: 'test/race/event-delivery.test.ts',
    scenario: 'the timer racing events accepted around the deadline',
  },
  {
    guard: 'an event holds its channel while it is accepted (event time decides)',
    edits: [
      {
        file: 'server/engine/claims/outbox.ts',
        find: `      SELECT pg_advisory_xact_lock(\${eventChannelKey(Prisma.sql\`\${e.contactId}::uuid\`, Prisma.sql\`\${e.name}::text\`)})
       WHERE`,
        replace: `      SELECT 1
       WHERE`,
      },
    ],
    test: 'test/race/event-delivery.test.ts',
    scenario: 'the timer racing events accepted around the deadline',
  },
  {
    guard: 'the timer takes an event accepted before the deadline (event time decides)',
    edits: [
      {
        file: 'server/engine/claims/waits.ts',
        find: `           WHERE ws.type = 'WAIT_FOR_EVENT' AND \${eventResumesWait(parkedWaitWindow)}`,
        replace: `           WHERE false AND \${eventResumesWait(parkedWaitWindow)}`,
      },
    ],
    test: 'test/race/event-delivery.test.ts',
    scenario: 'the timer fires before its dispatch',
    rounds: 1,
  },
  {
    guard: 'FORCE_TIMEOUT takes the event channel before it looks back (an event being accepted is waited for, not lost)',
    edits: [{ file: 'server/repair/apply.ts', find: `    await lockEventChannel(tx, { contactId: execution.contactId, eventName });`, replace: `` }],
    test: 'test/repair/in-window-events.test.ts',
    scenario: 'an event accepted while the operator times the wait out is never lost',
    rounds: 1,
  },
  {
    guard: 'FORCE_TIMEOUT follows the timer: an unconsumed in-window event resumes the wait by EVENT',
    edits: [
      {
        file: 'server/repair/planner.ts',
        find: `const resumeEvent = inWindow.length > 0 && !choices.ignoreInWindowEvents ? inWindow[0]! : null;`,
        replace: `const resumeEvent = null as InWindowEvent | null;`,
      },
    ],
    test: 'test/repair/in-window-events.test.ts',
    scenario: 'its dispatch late: the preview names it',
    rounds: 1,
  },
  {
    guard: 'waits.resolve records EVENT only with an event the wait takes (its name, inside its window, unconsumed)',
    edits: [{ file: 'server/repair/resolve-wait.ts', find: `    if (why === null) {`, replace: `    if (true) {` }],
    test: 'test/api/routers/waits.test.ts',
    scenario: 'an event of another name',
    rounds: 1,
  },
  {
    guard: 'an event accepted after the deadline never resumes the wait (event time decides)',
    edits: [
      {
        file: 'server/engine/claims/fragments.ts',
        find: `         AND ev."createdAt" >= \${w.startedAt} AND ev."createdAt" < \${w.dueAt}`,
        replace: `         AND ev."createdAt" >= \${w.startedAt}`,
      },
    ],
    test: 'test/race/event-delivery.test.ts',
    scenario: 'never resumes the wait, even while the timer lags',
    rounds: 1,
  },
  {
    guard: 'an enrollment that lost to an execution finished since inserts again (allowReentry, I1)',
    edits: [
      {
        file: 'server/engine/enrollment.ts',
        find: `export const ENROLL_INSERT_ATTEMPTS = 3;`,
        replace: `export const ENROLL_INSERT_ATTEMPTS = 1;`,
      },
    ],
    test: 'test/race/lost-enrollment.test.ts',
    scenario: 'a batch: the contact whose winner finished is enrolled on a retry',
    // The interleaving is forced (sessions held open, not timing): one round shows it.
    rounds: 1,
  },
  {
    guard: 'an enrollment that keeps losing is told ACTIVE_EXECUTION, not an exception (I1)',
    edits: [
      {
        file: 'server/engine/enrollment.ts',
        find: `results[i] = executionId ? { ok: false, reason: 'ACTIVE_EXECUTION', executionId } : { ok: false, reason: 'CONTACT_NOT_FOUND' };`,
        replace: `throw new Error('enrollment conflicted with an execution that no longer exists; retry');`,
      },
    ],
    test: 'test/race/lost-enrollment.test.ts',
    scenario: 'losing every attempt: ACTIVE_EXECUTION naming the last winner',
    rounds: 1,
  },
];
