import http from 'node:http';
import https from 'node:https';
import { Webhook } from 'standardwebhooks';
import { refusedWebhookUrl, webhookAgent } from './address-policy';

// One HTTP delivery of a webhook message, signed as Standard Webhooks says: the headers
// webhook-id (the message's, the same on every attempt), webhook-timestamp (this
// attempt's, in seconds) and webhook-signature (v1, HMAC-SHA256 of "id.timestamp.body"
// with the endpoint's whsec_ secret). It connects through the address policy's agent (the
// connect-time check), follows no redirect, and is bounded as a whole by timeoutMs. It
// holds no database connection: the dispatcher claims before and records after.

/** The first bytes of a response body kept in the delivery log. */
export const RESPONSE_EXCERPT_BYTES = 1024;

export interface DeliveryRequest {
  url: string;
  secret: string;
  webhookId: string;
  /** The body, exactly as signed and sent. */
  body: string;
  timeoutMs: number;
  allowedHosts: readonly string[];
}

export interface DeliveryOutcome {
  ok: boolean;
  /** The HTTP status answered, or null when there was no answer (refused, timed out, network). */
  status: number | null;
  latencyMs: number;
  excerpt: string | null;
  error: string | null;
}

/** The three signature headers and the content type of one attempt. */
export function signedHeaders(secret: string, webhookId: string, body: string, at: Date = new Date()): Record<string, string> {
  return {
    'content-type': 'application/json',
    'webhook-id': webhookId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(webhookId, at, body),
  };
}

/** Deliver once; never throws: every failure is an outcome. */
export function deliver(req: DeliveryRequest): Promise<DeliveryOutcome> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  return new Promise<DeliveryOutcome>((resolve) => {
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (o: Omit<DeliveryOutcome, 'latencyMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...o, latencyMs: elapsed() });
    };
    let url: URL;
    try {
      url = new URL(req.url);
    } catch {
      finish({ ok: false, status: null, excerpt: null, error: 'the endpoint URL is not a URL' });
      return;
    }
    // The policy as the endpoint was saved under, judged again (the allow-list may have changed).
    const refused = refusedWebhookUrl(req.url, req.allowedHosts);
    if (refused) {
      finish({ ok: false, status: null, excerpt: null, error: `refused by the address policy: the URL ${refused}` });
      return;
    }
    timer = setTimeout(() => {
      finish({ ok: false, status: null, excerpt: null, error: `timed out after ${req.timeoutMs} ms` });
      request.destroy();
    }, req.timeoutMs);
    const send = url.protocol === 'https:' ? https.request : http.request;
    const body = Buffer.from(req.body);
    const request = send(url, {
      method: 'POST',
      agent: webhookAgent(url, req.allowedHosts),
      headers: { ...signedHeaders(req.secret, req.webhookId, req.body), 'content-length': String(body.length), 'user-agent': 'Waypost-Webhooks/1' },
    });
    request.on('error', (error) => finish({ ok: false, status: null, excerpt: null, error: error.message }));
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      let kept = 0;
      response.on('data', (chunk: Buffer) => {
        if (kept < RESPONSE_EXCERPT_BYTES) {
          chunks.push(chunk.subarray(0, RESPONSE_EXCERPT_BYTES - kept));
          kept += Math.min(chunk.length, RESPONSE_EXCERPT_BYTES - kept);
        }
      });
      response.on('error', (error) => finish({ ok: false, status: response.statusCode ?? null, excerpt: null, error: error.message }));
      response.on('end', () => {
        const status = response.statusCode ?? 0;
        const excerpt = chunks.length ? Buffer.concat(chunks).toString('utf8') : null;
        const ok = status >= 200 && status < 300;
        const error = ok
          ? null
          : status >= 300 && status < 400
            ? `answered ${status} (a redirect, not followed${response.headers.location ? `: to ${String(response.headers.location).slice(0, 200)}` : ''})`
            : `answered ${status}`;
        finish({ ok, status, excerpt, error });
      });
    });
    request.end(body);
  });
}
