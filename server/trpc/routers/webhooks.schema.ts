import { z } from 'zod';
import { id, label, limit, version } from '../../common/inputs';
import { WEBHOOK_EVENT_TYPES } from '../../common/webhook-events';
import { cursor } from '../keyset';
import { idOutput, pageOutput } from '../rest';

// webhooks.*'s inputs and outputs (outputs too: the procedures are also /api/v1 endpoints,
// whose OpenAPI document describes what they answer).

/** The address only as a URL; whether it may be called is the address policy's (server/webhooks/address-policy.ts). */
export const webhookUrl = label(2048).refine((value) => URL.canParse(value), 'must be an absolute URL, e.g. https://example.com/hooks/waypost');

export const webhookEventTypes = z
  .array(z.enum(WEBHOOK_EVENT_TYPES))
  .min(1, 'choose at least one event')
  .max(WEBHOOK_EVENT_TYPES.length)
  .refine((types) => new Set(types).size === types.length, 'each event at most once');

/** Notify when a stuck group's count reaches this. */
export const stuckThreshold = z.number().int().min(1).max(1_000_000);
/** At most one execution.stuck per group per this many seconds (a minute to a week). */
export const stuckIntervalSeconds = z.number().int().min(60).max(7 * 86_400);
export const webhookDescription = label(500);

export const createWebhookInput = z.object({
  url: webhookUrl,
  eventTypes: webhookEventTypes,
  description: webhookDescription.optional(),
  stuckThreshold: stuckThreshold.optional(),
  stuckIntervalSeconds: stuckIntervalSeconds.optional(),
});

export const updateWebhookInput = z.object({
  id,
  /** The version the caller read: a newer one is CONFLICT STALE_VERSION and nothing is written. */
  expectedVersion: version,
  url: webhookUrl.optional(),
  eventTypes: webhookEventTypes.optional(),
  /** null clears it. */
  description: webhookDescription.nullable().optional(),
  enabled: z.boolean().optional(),
  stuckThreshold: stuckThreshold.optional(),
  stuckIntervalSeconds: stuckIntervalSeconds.optional(),
});

export const webhookIdInput = z.object({ id });

export const DELIVERY_STATUSES = ['PENDING', 'DELIVERED', 'DEAD'] as const;

export const listDeliveriesInput = z.object({
  endpointId: id,
  status: z.enum(DELIVERY_STATUSES).optional(),
  /** The next (older) page: a nextCursor this list returned. */
  cursor: cursor.optional(),
  limit,
});

// ---------------------------------------------------------------------------
// Outputs

export const eventTypesOutput = z.array(z.object({ type: z.string().meta({ example: 'execution.failed' }), description: z.string().meta({ example: 'an execution failed (a step failed on its last attempt)' }) }));

export const endpointOutput = z.object({
  id: idOutput,
  url: z.string().meta({ example: 'https://hooks.example.com/waypost' }),
  description: z.string().nullable(),
  eventTypes: z.array(z.string()),
  enabled: z.boolean(),
  stuckThreshold: z.number(),
  stuckIntervalSeconds: z.number(),
  /** The secret's last 4 characters. */
  secretHint: z.string(),
  createdAt: z.date(),
  createdById: z.string().nullable(),
  updatedAt: z.date(),
  version: z.number(),
});

export const endpointListOutput = z.array(
  endpointOutput.extend({
    last24h: z.object({ delivered: z.number(), pending: z.number(), dead: z.number() }),
    lastDelivery: z.object({ messageId: z.string(), status: z.enum(DELIVERY_STATUSES), at: z.date(), responseStatus: z.number().nullable() }).nullable(),
  }),
);

export const createdEndpointOutput = z.object({
  endpoint: endpointOutput,
  /** Shown this once: sign-verifying receivers need it, and it is never answered again. */
  secret: z.string(),
});

export const rotatedSecretOutput = z.object({ secret: z.string(), endpoint: endpointOutput });

export const deliveryOutput = z.object({
  id: idOutput,
  /** The webhook-id header: the same on every attempt and redelivery. */
  webhookId: z.string(),
  endpointId: z.string(),
  eventType: z.string(),
  status: z.enum(DELIVERY_STATUSES),
  attempts: z.number(),
  nextAttemptAt: z.date(),
  lastResponseStatus: z.number().nullable(),
  lastLatencyMs: z.number().nullable(),
  lastError: z.string().nullable(),
  deliveredAt: z.date().nullable(),
  createdAt: z.date(),
});

/** A page of the log: `next` is the REST link to the next page (as every /api/v1 list has), `nextCursor` its cursor for the console. */
export const deliveriesOutput = pageOutput(deliveryOutput).extend({ nextCursor: z.string().nullable() });

export const deliveryDetailOutput = deliveryOutput.extend({
  payload: z.unknown(),
  endpointUrl: z.string(),
  attemptLog: z.array(
    z.object({
      id: z.string(),
      at: z.date(),
      responseStatus: z.number().nullable(),
      latencyMs: z.number(),
      responseExcerpt: z.string().nullable(),
      error: z.string().nullable(),
      dispatcher: z.string(),
    }),
  ),
});
