import type { Mutation } from './mutation';

// The guards of retention (server/retention/, docs/deploy.md "Retention"): what a sweep
// must keep, and the claim that lets one worker sweep at a time.

const BATCHES = 'server/retention/batches.ts';

export const RETENTION_MUTATIONS: Mutation[] = [
  {
    guard: 'a finished execution the stuck predicates list (an email failed or unconfirmed) is kept',
    edits: [{ file: BATCHES, find: '           AND NOT EXISTS (${stuckOfExecution(STUCK_REASONS, scope, Prisma.sql`c.id`)})\n', replace: '' }],
    test: 'test/retention/sweep.test.ts',
    scenario: 'removes exactly the finished executions nobody must look at',
  },
  {
    guard: 'a finished execution with an email still queued or being sent is kept',
    edits: [{ file: BATCHES, find: `           AND NOT EXISTS (SELECT 1 FROM "Message" m WHERE m."executionId" = c.id AND m.status IN ('QUEUED', 'SENDING'))\n`, replace: '' }],
    test: 'test/race/retention.test.ts',
    scenario: 'removes only what is done',
    rounds: 5,
  },
  {
    guard: 'an old event stays while a wait of its contact may still take it',
    edits: [
      {
        file: BATCHES,
        find: `           AND NOT EXISTS (
                 SELECT 1 FROM "WorkflowExecution" x
                  WHERE x."contactId" = c."contactId" AND x.status NOT IN (\${finished}) AND x."startedAt" <= c."createdAt")
`,
        replace: '',
      },
    ],
    test: 'test/retention/sweep.test.ts',
    scenario: 'stays while its contact has an execution',
  },
  {
    guard: "an old event stays while a kept step row names it as its wait's resumer (I4)",
    edits: [{ file: BATCHES, find: '           AND NOT EXISTS (SELECT 1 FROM "StepExecution" st WHERE st."resumeEventId" = c.id)\n', replace: '' }],
    test: 'test/retention/sweep.test.ts',
    scenario: 'stays as long as that execution does',
  },
  {
    guard: 'an audit entry about an execution still kept stays (I8)',
    edits: [{ file: BATCHES, find: '           AND NOT EXISTS (SELECT 1 FROM "WorkflowExecution" x WHERE x.id = ${auditTarget})\n', replace: '' }],
    test: 'test/retention/audit-and-claims.test.ts',
    scenario: 'keeps every entry about an execution',
  },
  {
    guard: 'one worker at a time sweeps a kind (the claim compare-and-swap on RetentionSweep)',
    edits: [
      {
        file: 'server/retention/sweep.ts',
        find: `       AND ((owner IS NULL AND ("lastFinishedAt" IS NULL OR "lastFinishedAt" <= now() - \${t.everyMs}::int * interval '1 millisecond'))
            OR "heartbeatAt" < now() - \${t.staleAfterSeconds}::int * interval '1 second')
`,
        replace: '',
      },
    ],
    test: 'test/retention/audit-and-claims.test.ts',
    scenario: 'of several workers asking at once, one sweeps',
  },
];
