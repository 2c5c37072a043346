// The outgoing webhooks' event types (docs/webhooks.md), with no server dependencies, so
// the console's components can name them too. Every message body is
// `{ type, timestamp, data }` (WebhookBody); `data` is the shape given here per type. Ids
// and names only: a contact's email or data never leaves the product (contactId does).
// The PostgreSQL triggers of migration 20261207200000_webhooks write these shapes; the
// stuck notifier (server/webhooks/stuck-notices.ts) and the console's test send the rest.

export const WEBHOOK_EVENT_TYPES = [
  'execution.failed',
  'execution.stuck',
  'message.failed',
  'event.dead',
  'repair.applied',
  'workflow.published',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** Sent by the console's "send test" to one endpoint only; no endpoint subscribes to it. */
export const WEBHOOK_TEST_TYPE = 'webhook.test';

export const WEBHOOK_EVENT_DESCRIPTIONS: Record<WebhookEventType, string> = {
  'execution.failed': 'an execution failed (a step failed on its last attempt)',
  'execution.stuck': "a stuck group (reason, workflow, step) appeared or grew to the endpoint's threshold; at most once per group per interval",
  'message.failed': 'sending an email failed (an email is never resent by itself)',
  'event.dead': 'a tracked event was dead-lettered after its last dispatch attempt',
  'repair.applied': 'an operator repair was applied (audit log outcome APPLIED)',
  'workflow.published': 'a new version of a workflow was published (version 2 and later)',
};

export function isWebhookEventType(value: string): value is WebhookEventType {
  return (WEBHOOK_EVENT_TYPES as readonly string[]).includes(value);
}

/** The `data` of each event type. */
export interface WebhookEventData {
  'execution.failed': {
    executionId: string;
    workflowId: string;
    workflowName: string;
    workflowVersion: number | null;
    contactId: string;
    /** The key of the step it failed at (null if it had none). */
    stepKey: string | null;
    error: string | null;
  };
  'execution.stuck': {
    /** A stuck reason of server/common/stuck-reasons.ts. */
    reason: string;
    workflowId: string | null;
    workflowName: string | null;
    stepKey: string | null;
    /** How many executions (or events) the group holds now. */
    count: number;
    /** The endpoint's threshold that this count reached. */
    threshold: number;
    /** The console's stuck list filtered to the group: a path to append to the console's address. */
    link: string;
  };
  'message.failed': {
    messageId: string;
    executionId: string;
    workflowId: string;
    workflowName: string;
    contactId: string;
    stepKey: string | null;
    error: string | null;
  };
  'event.dead': {
    eventId: string;
    eventName: string;
    contactId: string | null;
    attempts: number;
    error: string | null;
  };
  'repair.applied': {
    auditId: string;
    /** The audit action, e.g. "repair.RETRY_STEP". */
    action: string;
    targetType: string;
    targetId: string;
    /** The audit actor: "user:<id>", "apikey:<id>". */
    actor: string;
    reason: string | null;
  };
  'workflow.published': {
    auditId: string;
    workflowId: string;
    workflowName: string;
    /** The version published. */
    version: number | null;
    actor: string;
  };
}

/** The `data` of a `webhook.test` message. */
export interface WebhookTestData {
  endpointId: string;
  message: string;
}

/** A message body as sent (and stored in WebhookMessage.payload). */
export interface WebhookBody<T extends WebhookEventType = WebhookEventType> {
  type: T;
  /** ISO 8601, when the change happened. */
  timestamp: string;
  data: WebhookEventData[T];
}

/** The `webhook-id` header of a message: "msg_" + its id without dashes (the same on every redelivery). */
export function webhookIdOf(messageId: string): string {
  return `msg_${messageId.replace(/-/g, '')}`;
}
