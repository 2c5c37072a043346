import { TRPCError } from '@trpc/server';
import { consoleOrigins } from '../auth/auth';
import { MAX_BATCH_SIZE } from '../common/batch';
import { safeDecode } from '../url';
import { apiRateLimits, rateLimitMessage, rateLimitSubject } from './rate-limits';
import { undecodableAddress } from './request-target';

// What the API's handlers (endpoints.ts, and the sign-in route) do with a request before
// tRPC sees it: refuse it (an undecodable address, a rate limit, a cross-site change),
// bound its body, serve `repair.apply` by its router name, drop /api/v1's cookies.
//
// Limits of the HTTP endpoints (app/api/trpc, app/api/v1). Next.js route handlers read a
// request body of any size; these endpoints read at most MAX_BODY_BYTES and answer 413
// beyond it, so a client cannot make the server buffer an unbounded body. The biggest
// legitimate body is a bulk enrollment: 10,000 rows or a 10 MB CSV plus JSON escaping.

export const MAX_BODY_BYTES = 12 * 1024 * 1024;
/**
 * The most a caller without credentials may send: enough for any sign-in or error report,
 * far from what it would take to fill memory. The web server refuses more before reading.
 */
export const ANONYMOUS_BODY_BYTES = 16 * 1024;
export { MAX_BATCH_SIZE };

/** The 413's body, here and at the web server's socket (body-limit.ts). */
export function tooLargeBody(maxBytes: number): { error: { message: string; code: 'PAYLOAD_TOO_LARGE' } } {
  const size = maxBytes >= 1024 * 1024 ? `${maxBytes / 1024 / 1024} MB` : `${maxBytes / 1024} KB`;
  const anonymous = maxBytes === ANONYMOUS_BODY_BYTES ? ' (the limit without a session or API key)' : '';
  return { error: { message: `Request body larger than ${size}${anonymous}.`, code: 'PAYLOAD_TOO_LARGE' } };
}

function tooLarge(maxBytes: number): Response {
  return Response.json(tooLargeBody(maxBytes), { status: 413 });
}

/**
 * A 400 for a request whose path or query is not valid percent-encoding: routers and
 * libraries behind this decode them, and a decode that throws would answer 500.
 */
export function malformedRequest(req: Request): Response | null {
  const url = new URL(req.url);
  const undecodable = undecodableAddress(url.pathname, url.search);
  return undecodable && new Response(undecodable.body, { status: undecodable.status, headers: { 'content-type': undecodable.contentType } });
}

/**
 * The request with its body read into memory, or a 413 response once it passes the limit
 * (by Content-Length before reading, or while reading a body sent without one). Its
 * address has been checked first (malformedRequest).
 */
export async function boundedRequest(req: Request, maxBytes = MAX_BODY_BYTES): Promise<Request | Response> {
  if (!req.body) return req;
  const declared = Number(req.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > maxBytes) return tooLarge(maxBytes);
  const reader = req.body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => {});
      return tooLarge(maxBytes);
    }
    parts.push(value);
  }
  return new Request(req.url, { method: req.method, headers: req.headers, body: Buffer.concat(parts), signal: req.signal });
}

/**
 * The API's contract (docs/api.md) names the repair procedure `repair.apply`, but tRPC reserves `apply` (its client
 * proxies would read it as Function.prototype.apply), so the router calls it
 * `repair.applyOne`. Programs that speak HTTP keep the documented name: a request for
 * `repair.apply` (alone or in a batch) is served by `repair.applyOne`.
 */
export function withDocumentedProcedureNames(req: Request): Request {
  const url = new URL(req.url);
  const marker = '/api/trpc/';
  const at = url.pathname.indexOf(marker);
  if (at === -1) return req;
  // malformedRequest has already refused a path that does not decode.
  const paths = (safeDecode(url.pathname.slice(at + marker.length)) ?? '').split(',');
  if (!paths.includes('repair.apply')) return req;
  url.pathname = url.pathname.slice(0, at + marker.length) + paths.map((p) => (p === 'repair.apply' ? 'repair.applyOne' : p)).join(',');
  return new Request(url, req);
}

/** Why an API request is refused before any procedure runs, in the route's own error shape. */
export interface ApiRefusal {
  error: TRPCError;
  /** For 429: the Retry-After header. */
  retryAfterSeconds: number | null;
}

/** The calls a request makes: a batched tRPC request (`?batch=1`, paths joined by commas) counts each. */
function callsOf(req: Request): number {
  const url = new URL(req.url);
  if (url.searchParams.get('batch') !== '1') return 1;
  const marker = '/api/trpc/';
  const at = url.pathname.indexOf(marker);
  if (at === -1) return 1;
  // More than MAX_BATCH_SIZE is refused (400) without running any: charged as the largest batch.
  return Math.min(url.pathname.slice(at + marker.length).split(',').length, MAX_BATCH_SIZE + 1);
}

/**
 * Signed-in mutations must come from the console's own pages (defence
 * in depth behind SameSite=Lax): a POST carrying the session cookie and no API key is
 * refused when the browser says it was sent from another site (Sec-Fetch-Site anything but
 * same-origin) or from another origin (Origin not one of consoleOrigins). A request with
 * neither header was not made by a browser page on someone else's behalf: a browser always
 * sends Origin on a cross-origin POST. API keys are never sent by browsers on their own, so
 * requests with one are not checked.
 */
export function crossSiteRefusal(req: Request): string | null {
  if (req.method !== 'POST' || req.headers.has('authorization')) return null;
  if (!rateLimitSubject(req.headers, { cookies: true }).session) return null;
  const site = req.headers.get('sec-fetch-site');
  const origin = req.headers.get('origin');
  if (site !== null && site !== 'same-origin') return `Refused a signed-in change sent from another site (Sec-Fetch-Site: ${site.slice(0, 20)}): changes must come from the console's own pages; programs use an API key.`;
  if (origin !== null && !consoleOrigins().includes(origin)) return `Refused a signed-in change sent from another origin: changes must come from the console's own pages (${consoleOrigins().join(' or ')}); programs use an API key.`;
  return null;
}

/**
 * The refusal of an API request before its body is read: over a rate limit (429), or a
 * cross-site signed-in mutation (403, /api/trpc only: /api/v1 never reads cookies).
 */
export async function apiRefusal(req: Request, options: { cookies: boolean }): Promise<ApiRefusal | null> {
  const limited = await apiRateLimits().take(rateLimitSubject(req.headers, options), options.cookies ? callsOf(req) : 1);
  if (limited) return { error: new TRPCError({ code: 'TOO_MANY_REQUESTS', message: rateLimitMessage(limited) }), retryAfterSeconds: limited.retryAfterSeconds };
  const crossSite = options.cookies ? crossSiteRefusal(req) : null;
  if (crossSite) return { error: new TRPCError({ code: 'FORBIDDEN', message: crossSite }), retryAfterSeconds: null };
  return null;
}

/**
 * The request a refusal is answered from: its method, address and headers, with an empty
 * JSON body in place of the one sent, so a refused caller's body is never read or parsed.
 */
export function refusedRequest(req: Request): Request {
  if (req.method === 'GET' || req.method === 'HEAD') return new Request(req.url, { method: req.method, headers: req.headers });
  const headers = new Headers(req.headers);
  headers.set('content-type', 'application/json');
  headers.delete('content-length');
  return new Request(req.url, { method: req.method, headers, body: '{}' });
}

/** The response to a refused request, with its Retry-After. */
export function withRefusalHeaders(response: Response, refusal: ApiRefusal): Response {
  if (refusal.retryAfterSeconds !== null) response.headers.set('Retry-After', String(refusal.retryAfterSeconds));
  return response;
}

/**
 * The body bound of an API request: MAX_BODY_BYTES for one that presents a key (or, where
 * cookies count, a session), ANONYMOUS_BODY_BYTES otherwise. The web server (body-limit.ts) has already
 * applied it before Next.js read anything; this is the same rule under `next dev`.
 */
export function bodyLimitOf(req: Request, options: { cookies: boolean }): number {
  const subject = rateLimitSubject(req.headers, options);
  return subject.apiKey !== null || subject.session !== null ? MAX_BODY_BYTES : ANONYMOUS_BODY_BYTES;
}

/** /api/v1 takes API keys only: the headers its procedures' context is made from, without cookies. */
export function withoutCookies(headers: Headers): Headers {
  if (!headers.has('cookie')) return headers;
  const copy = new Headers(headers);
  copy.delete('cookie');
  return copy;
}

/**
 * trpc-to-openapi matches /api/v1 paths and takes path parameters from the raw path,
 * without decoding them, and clients (openapi-fetch, curl users) percent-encode what they
 * put there: `/contacts/by-email/ada%40example.com`. The escapes of characters a path
 * segment may hold as they are (RFC 3986 pchar: letters, digits, `-._~`, `!$&'()*+,;=`,
 * `:` and `@`) are decoded first, so the parameter is the address sent; `/`, `%`, `?`,
 * `#` and anything else stay encoded.
 */
export function withDecodedPathParams(req: Request): Request {
  const url = new URL(req.url);
  const decoded = url.pathname.replace(/%([0-9A-Fa-f]{2})/g, (escape, hex: string) => {
    const char = String.fromCharCode(parseInt(hex, 16));
    return /^[A-Za-z0-9\-._~!$&'()*+,;=:@]$/.test(char) ? char : escape;
  });
  if (decoded === url.pathname) return req;
  url.pathname = decoded;
  return new Request(url, req);
}

/**
 * A change with no body at all (`POST /executions/{id}/cancel`-style operations whose input
 * is all in the path, sent by a client that sends nothing) is read as the empty JSON object
 * `{}`, as every operation's document says, not refused as an unsupported media type.
 */
export async function withEmptyBodyAsJson(req: Request): Promise<Request> {
  if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'DELETE' || req.headers.has('content-type')) return req;
  if (req.body && (await req.clone().arrayBuffer()).byteLength > 0) return req;
  const headers = new Headers(req.headers);
  headers.set('content-type', 'application/json');
  headers.delete('content-length');
  return new Request(req.url, { method: req.method, headers, body: '{}', signal: req.signal });
}
