import type { Mutation } from './mutation';

// The guards of workflow versions (docs/versions.md): the version a worker's claim
// names, the publish compare-and-swap, and MIGRATE's fence, unresolved-wait check and
// event-channel look-back.

export const VERSIONS_MUTATIONS: Mutation[] = [
  {
    guard: 'a worker runs the step graph of the version its claim names (docs/versions.md)',
    edits: [
      {
        file: 'server/engine/run-steps.ts',
        find: `const graph = await loadVersionGraph(ctx.db, claim.workflowVersionId);`,
        replace: `const graph = await loadVersionGraph(ctx.db, (await versionIdOf(ctx.db, claim.workflowId))!);`,
      },
      {
        file: 'server/engine/run-steps.ts',
        find: `import { loadVersionGraph } from './graphs';`,
        replace: `import { loadVersionGraph, versionIdOf } from './graphs';`,
      },
    ],
    test: 'test/race/versions.test.ts',
    scenario: 'an execution keeps the version it was enrolled on',
    rounds: 1,
  },
  {
    guard: 'publish is a compare-and-swap on the workflow\'s latestVersion',
    edits: [
      {
        file: 'server/engine/versions.ts',
        find: `WHERE id = \${head.id}::uuid AND "latestVersion" = \${input.basedOnVersion}`,
        replace: `WHERE id = \${head.id}::uuid`,
      },
    ],
    test: 'test/race/versions.test.ts',
    scenario: 'two publishes based on the same version at once',
    rounds: 5,
  },
  {
    guard: 'migrateExecution is fenced by the version the operator saw and the step it planned from',
    edits: [
      {
        file: 'server/engine/claims/migration.ts',
        find: `       WHERE e.id = \${m.executionId}::uuid AND e.version = \${m.expectedVersion}
         AND e."workflowVersionId" = \${m.fromVersionId}::uuid AND e."currentStepId" = \${m.fromStepId}::uuid`,
        replace: `       WHERE e.id = \${m.executionId}::uuid`,
      },
    ],
    test: 'test/race/migrate.test.ts',
    scenario: "against a worker's claim",
  },
  // The timer race through a repair cannot show these two: the repair re-plans under its
  // lock and its planner refuses a resolved wait first. The scenario calls the move itself
  // in the window between the timer's claim and its advance, planned before the claim (the
  // version fence) and after it (the unresolved-wait check).
  {
    guard: 'migrateExecution moves a WAITING execution only while its wait is unresolved (I4)',
    edits: [
      {
        file: 'server/engine/claims/migration.ts',
        find: `w.status = 'WAITING' AND w."resolvedBy" IS NULL))`,
        replace: `w.status = 'WAITING'))`,
      },
    ],
    test: 'test/race/migrate.test.ts',
    scenario: 'resolved but has not advanced past',
    rounds: 1,
  },
  {
    // The fence alone is not seen here (the unresolved-wait check still stops the move); the
    // fence with the step it planned from is the worker race's, above.
    guard: 'migrateExecution moves a WAITING execution only while its wait is unresolved (I4), fenced by version',
    edits: [
      {
        file: 'server/engine/claims/migration.ts',
        find: `AND e.version = \${m.expectedVersion}`,
        replace: ``,
      },
      {
        file: 'server/engine/claims/migration.ts',
        find: `w.status = 'WAITING' AND w."resolvedBy" IS NULL))`,
        replace: `w.status = 'WAITING'))`,
      },
    ],
    test: 'test/race/migrate.test.ts',
    scenario: 'resolved but has not advanced past',
    rounds: 1,
  },
  {
    guard: 'MIGRATE moves a wait on an event under its channel lock and looks back for events accepted in its window (I7)',
    edits: [
      {
        file: 'server/repair/apply.ts',
        find: `  if (typeof eventName === 'string') await lockEventChannel(tx, { contactId: execution.contactId, eventName });`,
        replace: ``,
      },
      {
        file: 'server/repair/apply.ts',
        find: `    const [event] = await readEventsResumingWait(tx, { stepExecutionId: execution.stepRow!.id, limit: 1 });`,
        replace: `    const event = undefined as Awaited<ReturnType<typeof readEventsResumingWait>>[number] | undefined;`,
      },
    ],
    test: 'test/race/migrate.test.ts',
    // The race alone catches it only sometimes (the event must land inside the move's
    // window); the look-back test catches the look-back's removal every time.
    scenario: 'against an event|the move looks back',
  },
];
