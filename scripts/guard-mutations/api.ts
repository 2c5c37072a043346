import type { Mutation } from './mutation';

// The guards of /api/v1 (docs/api.md, "Idempotency"): the Idempotency-Key claim.

export const API_MUTATIONS: Mutation[] = [
  {
    guard: "an Idempotency-Key is claimed by exactly one request (the claim's INSERT ... ON CONFLICT)",
    edits: [
      {
        file: 'server/http/idempotency.ts',
        find: `    ON CONFLICT ("projectId", "apiKeyId", "key") DO UPDATE
       SET "method" = EXCLUDED."method", "path" = EXCLUDED."path", "bodyHash" = EXCLUDED."bodyHash",
           "claimToken" = EXCLUDED."claimToken", "status" = NULL, "contentType" = NULL, "responseBody" = NULL,
           "createdAt" = EXCLUDED."createdAt", "expiresAt" = EXCLUDED."expiresAt"
     WHERE k."expiresAt" <= now()
        -- A claim whose holder never answered (its process died mid-request) is over too.
        OR (k."status" IS NULL AND k."createdAt" < now() - make_interval(mins => \${ABANDONED_CLAIM_MINUTES}::int))
`,
        replace: '',
      },
    ],
    test: 'test/race/api-idempotency.test.ts',
    scenario: 'parallel identical enrollments with one key',
    rounds: 3,
  },
];
