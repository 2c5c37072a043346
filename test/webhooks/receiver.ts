import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { Db } from '../../server/db';
import type { DispatcherOptions } from '../../server/webhooks/dispatcher';
import { dispatchOnce } from '../../server/webhooks/dispatcher';

// The webhooks tests' receiver: a real node:http server on 127.0.0.1 that checks every
// delivery's signature with the standardwebhooks package (never the product's own code),
// keyed by the endpoint's path, and answers as the test says (200, an error status, a
// redirect, a sleep, or holding the request without an answer).

export interface Delivery {
  path: string;
  webhookId: string;
  timestamp: number;
  body: { type: string; timestamp: string; data: Record<string, unknown> };
  at: number;
}

export type Answer = { status: number; location?: string } | { sleepMs: number; status?: number } | 'hold';

export interface Receiver {
  port: number;
  /** The URL of an endpoint path on this receiver, with the secret it verifies. */
  endpoint(path: string, host?: string): { url: string; secret: string };
  /** Verified deliveries, in arrival order. */
  deliveries: Delivery[];
  /** Requests that failed verification (a wrong or missing signature). */
  rejected: { path: string; reason: string }[];
  /** Requests that reached the receiver at all, verified or not. */
  requests: number;
  answer: (d: Delivery) => Answer;
  /** Requests held open right now ('hold'). */
  held(): number;
  /** Drop every held request's connection (as a receiver that gave up). */
  dropHeld(): void;
  close(): Promise<void>;
}

/** A secret as Standard Webhooks makes them: whsec_ and the base64 of 24 random bytes. */
export function testSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

export async function startReceiver(): Promise<Receiver> {
  const secrets = new Map<string, string>();
  const heldResponses = new Set<http.ServerResponse>();
  const receiver: Receiver = {
    port: 0,
    deliveries: [],
    rejected: [],
    requests: 0,
    answer: () => ({ status: 200 }),
    endpoint(path, host = '127.0.0.1') {
      const secret = secrets.get(path) ?? testSecret();
      secrets.set(path, secret);
      return { url: `http://${host}:${receiver.port}${path}`, secret };
    },
    held: () => heldResponses.size,
    dropHeld() {
      for (const res of heldResponses) res.socket?.destroy();
      heldResponses.clear();
    },
    close: () =>
      new Promise<void>((resolve) => {
        receiver.dropHeld();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server = http.createServer((req, res) => {
    receiver.requests++;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const path = req.url ?? '/';
      const secret = secrets.get(path);
      let delivery: Delivery;
      try {
        if (!secret) throw new Error(`no endpoint at ${path}`);
        const headers = {
          'webhook-id': String(req.headers['webhook-id'] ?? ''),
          'webhook-timestamp': String(req.headers['webhook-timestamp'] ?? ''),
          'webhook-signature': String(req.headers['webhook-signature'] ?? ''),
        };
        const body = new Webhook(secret).verify(raw, headers) as Delivery['body'];
        if (req.headers['content-type'] !== 'application/json') throw new Error(`content-type ${req.headers['content-type']}`);
        delivery = { path, webhookId: headers['webhook-id'], timestamp: Number(headers['webhook-timestamp']), body, at: Date.now() };
      } catch (error) {
        receiver.rejected.push({ path, reason: String(error) });
        res.writeHead(400).end('bad signature');
        return;
      }
      receiver.deliveries.push(delivery);
      const answer = receiver.answer(delivery);
      if (answer === 'hold') {
        heldResponses.add(res);
        res.on('close', () => heldResponses.delete(res));
      } else if ('sleepMs' in answer) {
        const timer = setTimeout(() => res.writeHead(answer.status ?? 200).end('late'), answer.sleepMs);
        res.on('close', () => clearTimeout(timer));
      } else {
        res.writeHead(answer.status, answer.location ? { location: answer.location } : {}).end(`answer ${answer.status}`);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.port = (server.address() as AddressInfo).port;
  return receiver;
}

/** An endpoint row as an owner's settings make it (the console's path is CONSOLE's, tested there). */
export async function createTestEndpoint(
  db: Db,
  projectId: string,
  e: { url: string; secret: string; eventTypes: string[]; stuckThreshold?: number; stuckIntervalSeconds?: number; enabled?: boolean },
): Promise<string> {
  const row = await db.webhookEndpoint.create({
    data: {
      projectId,
      url: e.url,
      secret: e.secret,
      eventTypes: e.eventTypes,
      enabled: e.enabled ?? true,
      stuckThreshold: e.stuckThreshold ?? 1,
      stuckIntervalSeconds: e.stuckIntervalSeconds ?? 3600,
      createdById: 'user:test-owner',
    },
  });
  return row.id;
}

/** Dispatch until nothing is due now (deliveries of one pass run at once). */
export async function dispatchAllDue(db: Db, opts: DispatcherOptions): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await dispatchOnce(db, opts);
    if (n === 0) return total;
    total += n;
  }
}

export function dispatcherFor(overrides: Partial<DispatcherOptions> = {}): DispatcherOptions {
  return {
    owner: `test-dispatcher:${process.pid}`,
    concurrency: 8,
    timeoutMs: 2000,
    retrySchedule: [1, 1, 1],
    allowedHosts: ['127.0.0.1'],
    ...overrides,
  };
}
