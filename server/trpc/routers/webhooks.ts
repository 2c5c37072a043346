import { TRPCError } from '@trpc/server';
import { ZodRealError } from 'zod';
import { WEBHOOK_EVENT_DESCRIPTIONS, WEBHOOK_EVENT_TYPES } from '../../common/webhook-events';
import {
  createEndpoint,
  deleteEndpoint,
  getDelivery,
  listDeliveries,
  listEndpoints,
  redeliver,
  rotateSecret,
  sendTestEvent,
  updateEndpoint,
  type Refusal,
} from '../../webhooks/endpoints';
import { acting } from '../audit';
import { page } from '../keyset';
import type { OpenApiMeta } from 'trpc-to-openapi';
import { ConflictError, conflictError, ownerProcedure, router } from '../trpc';
import {
  createdEndpointOutput,
  createWebhookInput,
  deliveriesOutput,
  deliveryDetailOutput,
  deliveryOutput,
  endpointListOutput,
  endpointOutput,
  eventTypesOutput,
  listDeliveriesInput,
  rotatedSecretOutput,
  updateWebhookInput,
  webhookIdInput,
} from './webhooks.schema';
import { nextLink } from '../rest';

// A project's outgoing webhooks (OWNER only): its endpoints, their delivery logs, redeliver
// and a test event. Also /api/v1/webhooks/... for programs with an OWNER key. Every change
// is audited (server/webhooks/endpoints.ts); the secret is answered by create and
// rotateSecret only.

/** The procedure's answer to a refusal of server/webhooks/endpoints.ts. */
function refusalError(refusal: Refusal, what: 'endpoint' | 'delivery' = 'endpoint'): TRPCError {
  switch (refusal.reason) {
    case 'NOT_FOUND':
      return new TRPCError({ code: 'NOT_FOUND', message: what === 'endpoint' ? 'No such webhook endpoint in this project.' : 'No such webhook delivery in this project.' });
    case 'INVALID_URL':
      // The field's error, in the shape schema failures have (data.zodError), so forms show it at the URL.
      return new TRPCError({
        code: 'BAD_REQUEST',
        message: `url: ${refusal.message}`,
        cause: new ZodRealError([{ code: 'custom', path: ['url'], message: refusal.message, input: undefined }]),
      });
    case 'STALE_VERSION':
      return conflictError({ reason: 'STALE_VERSION', currentVersion: refusal.currentVersion }, 'The endpoint was changed since you read it: reload it and apply your change again.');
    case 'ALREADY_PENDING':
      return conflictError(
        { reason: 'ALREADY_PENDING', attempts: refusal.attempts, nextAttemptAt: refusal.nextAttemptAt },
        'This delivery is pending already: it is being tried, or due to be.',
      );
    case 'ENDPOINT_DISABLED':
      return new TRPCError({
        code: 'PRECONDITION_FAILED',
        message: 'The endpoint is disabled: enable it to send it a test event.',
        cause: new ConflictError({ reason: 'ENDPOINT_DISABLED' }),
      });
  }
}

const openapi = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: `/webhooks/${string}`, operationId: string, summary: string, errorResponses: number[], description: string) => ({
  openapi: { method, path, tags: ['webhooks'], operationId, summary, description, protect: true, errorResponses: [401, 403, ...errorResponses] },
}) satisfies OpenApiMeta;

export const webhooksRouter = router({
  eventTypes: ownerProcedure
    .meta(openapi('GET', '/webhooks/event-types', 'listWebhookEventTypes', 'The event types an endpoint can subscribe to', [], 'Each type with what it means; an endpoint subscribes to any of them by name (docs/webhooks.md has every payload).'))
    .output(eventTypesOutput)
    .query(() => WEBHOOK_EVENT_TYPES.map((type) => ({ type, description: WEBHOOK_EVENT_DESCRIPTIONS[type] }))),

  list: ownerProcedure
    .meta(openapi('GET', '/webhooks/endpoints', 'listWebhookEndpoints', "The project's webhook endpoints", [], 'Each with its last 24 hours (delivered, pending, dead) and its last delivery. Secrets are never listed: secretHint is the last 4 characters.'))
    .output(endpointListOutput)
    .query(({ ctx }) => listEndpoints(ctx.db, ctx.actor.projectId)),

  create: ownerProcedure
    .meta(openapi('POST', '/webhooks/endpoints', 'createWebhookEndpoint', 'Add a webhook endpoint', [400], 'Answers the signing secret (whsec_...) this once. The URL must be https (http only for a host in WEBHOOK_ALLOWED_HOSTS) and not a loopback, private, link-local or metadata address.'))
    .input(createWebhookInput)
    .output(createdEndpointOutput)
    .mutation(async ({ ctx, input }) => {
      const result = await createEndpoint(ctx.db, acting(ctx.actor), input);
      if (!result.ok) throw refusalError(result);
      return { endpoint: result.endpoint, secret: result.secret };
    }),

  update: ownerProcedure
    .meta(openapi('PATCH', '/webhooks/endpoints/{id}', 'updateWebhookEndpoint', "Change an endpoint's settings", [400, 404, 409], 'A compare-and-swap on expectedVersion: 409 with conflict.reason STALE_VERSION and currentVersion when the endpoint changed since it was read.'))
    .input(updateWebhookInput)
    .output(endpointOutput)
    .mutation(async ({ ctx, input }) => {
      const result = await updateEndpoint(ctx.db, acting(ctx.actor), input);
      if (!result.ok) throw refusalError(result);
      return result.endpoint;
    }),

  rotateSecret: ownerProcedure
    .meta(openapi('POST', '/webhooks/endpoints/{id}/rotate-secret', 'rotateWebhookSecret', "Replace an endpoint's signing secret", [404], 'Answers the new secret this once; deliveries are signed with it from now on.'))
    .input(webhookIdInput)
    .output(rotatedSecretOutput)
    .mutation(async ({ ctx, input }) => {
      const result = await rotateSecret(ctx.db, acting(ctx.actor), input.id);
      if (!result.ok) throw refusalError(result);
      return { secret: result.secret, endpoint: result.endpoint };
    }),

  delete: ownerProcedure
    .meta(openapi('DELETE', '/webhooks/endpoints/{id}', 'deleteWebhookEndpoint', 'Delete an endpoint and its delivery log', [404], 'Its pending messages are never sent; answers the endpoint as it was. Audited.'))
    .input(webhookIdInput)
    .output(endpointOutput)
    .mutation(async ({ ctx, input }) => {
      const result = await deleteEndpoint(ctx.db, acting(ctx.actor), input.id);
      if (!result.ok) throw refusalError(result);
      return result.endpoint;
    }),

  deliveries: ownerProcedure
    .meta(openapi('GET', '/webhooks/endpoints/{endpointId}/deliveries', 'listWebhookDeliveries', "An endpoint's delivery log, newest first", [400, 404], 'Every message to the endpoint with its status, attempts and last answer; `status` filters (PENDING, DELIVERED, DEAD); pages through `next`.'))
    .input(listDeliveriesInput)
    .output(deliveriesOutput)
    .query(async ({ ctx, input }) => {
      const found = await listDeliveries(ctx.db, { ...input, projectId: ctx.actor.projectId });
      if (!found) throw refusalError({ ok: false, reason: 'NOT_FOUND' });
      const { items, nextCursor } = page(found.rows, input.limit, (row) => ({ at: row.createdAt, id: row.id }));
      return { items, nextCursor, next: nextLink(`/webhooks/endpoints/${input.endpointId}/deliveries`, { status: input.status, limit: input.limit }, nextCursor) };
    }),

  delivery: ownerProcedure
    .meta(openapi('GET', '/webhooks/deliveries/{id}', 'getWebhookDelivery', 'One delivery with its payload and attempts', [404], 'The message as signed (its payload and webhook-id) and every attempt: when, the HTTP status or error, the latency and the first 1 KB of the answer.'))
    .input(webhookIdInput)
    .output(deliveryDetailOutput)
    .query(async ({ ctx, input }) => {
      const delivery = await getDelivery(ctx.db, ctx.actor.projectId, input.id);
      if (!delivery) throw refusalError({ ok: false, reason: 'NOT_FOUND' }, 'delivery');
      return delivery;
    }),

  redeliver: ownerProcedure
    .meta(openapi('POST', '/webhooks/deliveries/{id}/redeliver', 'redeliverWebhook', 'Deliver a dead or delivered message again', [404, 409], 'Back to PENDING with its attempts reset, the same webhook-id (receivers dedupe). 409 with conflict.reason ALREADY_PENDING when it is pending already.'))
    .input(webhookIdInput)
    .output(deliveryOutput)
    .mutation(async ({ ctx, input }) => {
      const result = await redeliver(ctx.db, acting(ctx.actor), input.id);
      if (!result.ok) throw refusalError(result, 'delivery');
      return result.delivery;
    }),

  sendTest: ownerProcedure
    .meta(openapi('POST', '/webhooks/endpoints/{id}/test', 'sendWebhookTest', 'Send a webhook.test event to one endpoint', [404, 412], 'Queues a signed webhook.test message to this endpoint only, delivered like any other; 412 ENDPOINT_DISABLED when the endpoint is switched off.'))
    .input(webhookIdInput)
    .output(deliveryOutput)
    .mutation(async ({ ctx, input }) => {
      const result = await sendTestEvent(ctx.db, acting(ctx.actor), input.id);
      if (!result.ok) throw refusalError(result);
      return result.delivery;
    }),
});
