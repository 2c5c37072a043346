import type { IncomingMessage, ServerResponse } from 'node:http';
import { createURL, incomingMessageToRequest } from '@trpc/server/adapters/node-http';
import { log } from '../log';
import { restEndpoint, REST_METHODS, trpcEndpoint, TRPC_METHODS } from './endpoints';
import { apiSecurityHeaders } from './security-headers';

// /api/trpc and /api/v1 served by the web server itself (web-server.ts), before Next.js: the very handlers
// of the Next.js routes (server/http/endpoints.ts), fed a fetch Request made from Node's
// request by tRPC's own node-http adapter, and their Response written back to the socket.
// Next.js's request pipeline (routing, the request proxy, copying the body for it) cost
// about half of an enrollment's web-server CPU. What Next.js added to these answers is
// added here: the security headers of an API answer (security-headers.ts). Everything
// else a request meets before this point is web-server.ts's own, the same for both paths
// (refused methods and targets, undecodable addresses, the client's address, the body
// bound at the socket). Any request these routes do not answer exactly as the Next.js
// route would (HEAD, OPTIONS, other methods, a path Next.js would redirect or normalise,
// a Host header that makes no URL, /api/v1/openapi.json) goes on to Next.js as before.

export type FetchEndpoint = (req: Request) => Promise<Response>;

/** One segment of a route's path, as Next.js matches it: not empty, not a dot segment (which URL parsing would resolve away). */
const SEGMENT = String.raw`(?!(?:\.|%2e){1,2}(?:/|$))[^/]+`;
const TRPC_PATH = new RegExp(`^/api/trpc/${SEGMENT}$`, 'i');
const REST_PATH = new RegExp(`^/api/v1(?:/${SEGMENT})+$`, 'i');
/** Served by its own Next.js route (app/api/v1/openapi.json), not the REST handler. */
const OPENAPI_DOCUMENT = '/api/v1/openapi.json';

/** The handler that serves this request before Next.js, or null to hand it to Next.js. */
export function apiEndpointOf(req: Pick<IncomingMessage, 'method' | 'url'>): FetchEndpoint | null {
  const url = req.url ?? '';
  const at = url.indexOf('?');
  const pathname = at === -1 ? url : url.slice(0, at);
  const method = req.method ?? '';
  if (TRPC_PATH.test(pathname)) return (TRPC_METHODS as readonly string[]).includes(method) ? trpcEndpoint : null;
  if (REST_PATH.test(pathname) && pathname !== OPENAPI_DOCUMENT) return (REST_METHODS as readonly string[]).includes(method) ? restEndpoint : null;
  return null;
}

/** Whether Node's request makes a URL (its Host header): if not, Next.js answers it as it always did. */
export function hasUrl(req: IncomingMessage): boolean {
  try {
    createURL(req);
    return true;
  } catch {
    return false;
  }
}

/**
 * Answer the request with `endpoint`: a Response, streamed to the socket as it is produced
 * (tRPC subscriptions are server-sent events), stopped when the client goes away.
 */
export async function serveApi(req: IncomingMessage, res: ServerResponse, endpoint: FetchEndpoint): Promise<void> {
  let response: Response;
  try {
    // No byte bound here: the endpoints bound the body themselves (boundedRequest), and
    // the web server has already refused an oversized one from a caller without credentials.
    response = await endpoint(incomingMessageToRequest(req, res, { maxBodySize: null }));
  } catch (error) {
    // The endpoints answer every failure themselves; this is a bug. Next.js answered an
    // exception from a route handler with an empty 500.
    log.error(`${req.method} ${req.url?.split('?')[0]} failed:`, { err: error });
    if (!res.headersSent) res.writeHead(500, apiSecurityHeaders());
    res.end();
    return;
  }
  // The headers Next.js gave every API answer: proxy.ts's (security headers, API policy) and
  // next.config.ts's (a subset of them).
  const headers: Record<string, string | string[]> = apiSecurityHeaders();
  for (const [name, value] of response.headers) if (name !== 'set-cookie') headers[name] = value;
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) headers['set-cookie'] = cookies;
  res.writeHead(response.status, headers);
  if (!response.body) {
    res.end();
    return;
  }
  const reader = response.body.getReader();
  const gone = () => void reader.cancel().catch(() => {});
  res.once('close', gone);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!res.write(value)) await new Promise<void>((resume) => {
        const go = () => {
          res.off('drain', go);
          res.off('close', go);
          resume();
        };
        res.once('drain', go);
        res.once('close', go);
      });
      if (res.destroyed) break;
    }
  } catch (error) {
    if (!res.destroyed) log.error(`${req.method} ${req.url?.split('?')[0]}: writing the answer failed:`, { err: error });
  } finally {
    res.off('close', gone);
    res.end();
  }
}
