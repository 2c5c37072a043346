import type { Mutation } from './mutation';

// The guards of outgoing webhooks (docs/webhooks.md): the dispatcher's claim (a lease,
// SKIP LOCKED), the lease guard of an attempt's outcome, and the stuck notifier's
// compare-and-swap on WebhookStuckNotice.

export const WEBHOOKS_MUTATIONS: Mutation[] = [
  {
    guard: "an attempt's outcome is recorded only under the dispatcher's own lease",
    edits: [
      {
        file: 'server/webhooks/dispatcher.ts',
        find: `WHERE id = \${opts.messageId}::uuid AND status = 'PENDING' AND "leaseOwner" = \${opts.owner}`,
        replace: `WHERE id = \${opts.messageId}::uuid AND status = 'PENDING'`,
      },
    ],
    test: 'test/webhooks/delivery.test.ts',
    scenario: "the outcome is recorded only under the dispatcher's own lease",
    rounds: 1,
  },
  {
    guard: 'a dispatcher claims only messages no live lease holds, skipping rows another claim has locked',
    edits: [
      {
        file: 'server/webhooks/dispatcher.ts',
        find: `AND (q."leaseExpiresAt" IS NULL OR q."leaseExpiresAt" < now())`,
        replace: ``,
      },
      {
        file: 'server/webhooks/dispatcher.ts',
        find: `FOR UPDATE OF q SKIP LOCKED)`,
        replace: `)`,
      },
    ],
    test: 'test/webhooks/delivery.test.ts',
    scenario: 'share the queue',
    rounds: 5,
  },
  {
    guard: 'a stuck notice is sent only for a new group, or one that grew after the interval (the notice CAS)',
    edits: [
      {
        file: 'server/webhooks/stuck-notices.ts',
        find: `       WHERE EXCLUDED."lastCount" > n."lastCount"
         AND n."lastNotifiedAt" < now() - (SELECT "stuckIntervalSeconds" FROM subscribed WHERE id = n."endpointId") * interval '1 second'
`,
        replace: ``,
      },
    ],
    test: 'test/webhooks/stuck-notices.test.ts',
    scenario: 'notifiers running at once send one notice per group',
    rounds: 5,
  },
];
