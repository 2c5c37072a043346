import { expect } from 'vitest';
import { WEBHOOK_EVENT_TYPES } from '../../server/common/webhook-events';
import { type MatrixRow, unique, ok, refused, FIRST_OWNER, UUID, type Row } from './authorization-cells';

// The matrix's rows for outgoing webhooks (webhooks.*: OWNER only). Answers are read from
// tRPC (superjson: Dates) and from /api/v1 (JSON: ISO strings) alike, so none checks a type
// of time. No secret is ever answered but by create and rotateSecret.
export const WEBHOOK_ROWS: Record<string, MatrixRow> = {
  'webhooks.eventTypes': {
    minimum: 'OWNER',
    input: () => undefined,
    answer: (reply, _own, _input, cell) => expect(ok<Row[]>(reply, cell).map((e) => e.type), cell).toEqual([...WEBHOOK_EVENT_TYPES]),
  },
  'webhooks.list': {
    minimum: 'OWNER',
    input: () => undefined,
    answer: (reply, own, _input, cell) => {
      const endpoints = ok<Row[]>(reply, cell);
      expect(endpoints.map((e) => e.id), cell).toContain(own.webhookEndpointId);
      expect(JSON.stringify(endpoints), cell).not.toContain('other.hooks.example.com');
      expect(JSON.stringify(endpoints), cell).not.toMatch(/whsec_|"secret"/);
    },
  },
  'webhooks.create': {
    minimum: 'OWNER',
    input: () => ({ url: `https://${unique('matrix')}.hooks.example.com/in`, eventTypes: ['event.dead'] }),
    answer: (reply, _own, input, cell) => {
      const created = ok(reply, cell);
      expect(created.secret, cell).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
      expect(created.endpoint, cell).toMatchObject({ id: expect.stringMatching(UUID), url: (input as Row).url, secretHint: created.secret.slice(-4), version: 1 });
    },
  },
  'webhooks.update': {
    minimum: 'OWNER',
    // Version 0 is never current (endpoints start at 1): a CONFLICT past authorization, nothing changed.
    input: (own) => ({ id: own.webhookEndpointId, expectedVersion: 0, enabled: false }),
    foreign: (other) => [{ id: other.webhookEndpointId, expectedVersion: 1, enabled: false }],
    answer: (reply, _own, _input, cell) => {
      refused(reply, cell, 409, 'CONFLICT', 'STALE_VERSION');
      expect(reply.conflict, cell).toMatchObject({ currentVersion: expect.any(Number) });
    },
  },
  'webhooks.rotateSecret': {
    minimum: 'OWNER',
    input: (own) => ({ id: own.webhookEndpointId }),
    foreign: (other) => [{ id: other.webhookEndpointId }],
    answer: (reply, own, _input, cell) => {
      const rotated = ok(reply, cell);
      expect(rotated.secret, cell).toMatch(/^whsec_/);
      expect(rotated.endpoint, cell).toMatchObject({ id: own.webhookEndpointId, secretHint: rotated.secret.slice(-4) });
    },
  },
  'webhooks.delete': {
    minimum: 'OWNER',
    input: (own) => ({ id: own.spareWebhookEndpointId }),
    foreign: (other) => [{ id: other.spareWebhookEndpointId }],
    // The first owner deletes it; for the next one it is gone.
    answer: (reply, own, _input, cell) => {
      if (cell !== FIRST_OWNER && reply.code === 'NOT_FOUND') return refused(reply, cell, 404, 'NOT_FOUND');
      expect(ok(reply, cell), cell).toMatchObject({ id: own.spareWebhookEndpointId });
    },
  },
  'webhooks.deliveries': {
    minimum: 'OWNER',
    input: (own) => ({ endpointId: own.webhookEndpointId }),
    foreign: (other) => [{ endpointId: other.webhookEndpointId }],
    answer: (reply, own, _input, cell) => {
      const page = ok(reply, cell);
      expect((page.items as Row[]).map((d) => d.id), cell).toContain(own.webhookMessageId);
      expect((page.items as Row[]).filter((d) => d.endpointId !== own.webhookEndpointId), cell).toEqual([]);
    },
  },
  'webhooks.delivery': {
    minimum: 'OWNER',
    input: (own) => ({ id: own.webhookMessageId }),
    foreign: (other) => [{ id: other.webhookMessageId }],
    answer: (reply, own, _input, cell) => {
      expect(ok(reply, cell), cell).toMatchObject({ id: own.webhookMessageId, endpointId: own.webhookEndpointId, eventType: 'webhook.test', payload: { type: 'webhook.test' } });
    },
  },
  'webhooks.redeliver': {
    minimum: 'OWNER',
    // The fixture's test message is PENDING (no dispatcher runs here): a CONFLICT past authorization.
    input: (own) => ({ id: own.webhookMessageId }),
    foreign: (other) => [{ id: other.webhookMessageId }],
    answer: (reply, _own, _input, cell) => refused(reply, cell, 409, 'CONFLICT', 'ALREADY_PENDING'),
  },
  'webhooks.sendTest': {
    minimum: 'OWNER',
    input: (own) => ({ id: own.webhookEndpointId }),
    foreign: (other) => [{ id: other.webhookEndpointId }],
    answer: (reply, own, _input, cell) => {
      expect(ok(reply, cell), cell).toMatchObject({ endpointId: own.webhookEndpointId, eventType: 'webhook.test', status: 'PENDING', attempts: 0 });
    },
  },
};
