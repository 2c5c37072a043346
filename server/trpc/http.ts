// Limits of the HTTP endpoints (app/api/trpc, app/api/v1). Next.js route handlers read a
// request body of any size; these endpoints read at most MAX_BODY_BYTES and answer 413
// beyond it, so a client cannot make the server buffer an unbounded body. The biggest
// legitimate body is a bulk enrollment: 10,000 rows or a 10 MB CSV plus JSON escaping.

export const MAX_BODY_BYTES = 12 * 1024 * 1024;

function tooLarge(): Response {
  return Response.json(
    { error: { message: `Request body larger than ${MAX_BODY_BYTES / 1024 / 1024} MB.`, code: 'PAYLOAD_TOO_LARGE' } },
    { status: 413 },
  );
}

/**
 * The request with its body read into memory, or a 413 response once it passes the limit
 * (by Content-Length before reading, or while reading a body sent without one).
 */
export async function boundedRequest(req: Request, maxBytes = MAX_BODY_BYTES): Promise<Request | Response> {
  if (!req.body) return req;
  const declared = Number(req.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > maxBytes) return tooLarge();
  const reader = req.body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => {});
      return tooLarge();
    }
    parts.push(value);
  }
  return new Request(req.url, { method: req.method, headers: req.headers, body: Buffer.concat(parts), signal: req.signal });
}

/**
 * API.md names the repair procedure `repair.apply`, but tRPC reserves `apply` (its client
 * proxies would read it as Function.prototype.apply), so the router calls it
 * `repair.applyOne`. Programs that speak HTTP keep the documented name: a request for
 * `repair.apply` (alone or in a batch) is served by `repair.applyOne`.
 */
export function withDocumentedProcedureNames(req: Request): Request {
  const url = new URL(req.url);
  const marker = '/api/trpc/';
  const at = url.pathname.indexOf(marker);
  if (at === -1) return req;
  const paths = decodeURIComponent(url.pathname.slice(at + marker.length)).split(',');
  if (!paths.includes('repair.apply')) return req;
  url.pathname = url.pathname.slice(0, at + marker.length) + paths.map((p) => (p === 'repair.apply' ? 'repair.applyOne' : p)).join(',');
  return new Request(url, req);
}
