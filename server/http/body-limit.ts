import type { IncomingMessage } from 'node:http';
import { SESSION_COOKIE_NAMES } from '../common/cookies';
import { ANONYMOUS_BODY_BYTES, MAX_BODY_BYTES, tooLargeBody } from './api-request';
import { problem, PROBLEM_CONTENT_TYPE } from './problem';
import { apiSecurityHeaders } from './security-headers';

// Request bodies at the socket for the web server (web-server.ts): a caller who is
// not signed in and holds no API key may send ANONYMOUS_BODY_BYTES, anyone else
// MAX_BODY_BYTES; more is 413 before the body is read. This has to happen before Next.js
// sees the request: with a request proxy (proxy.ts) in front of the API, Next.js copies
// every body (up to 10 MB, twice) so that proxy and route could both read it, long before
// a route handler could count bytes. The route handlers keep their own bound
// (server/http/api-request.ts boundedRequest) for `next dev`, which does not run the web server.
//
// A body declared (Content-Length) within the small bound passes at once. A larger or
// chunked one from a caller who presents credentials costs one lookup of those
// credentials here first: a made-up cookie or key must not buy the large bound. A chunked
// body from anyone else is counted as it arrives and held back from Next.js until it
// ends: the first byte past the bound answers 413, with at most the bound in memory.

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function presentsCredentials(req: IncomingMessage): boolean {
  if (header(req, 'authorization') !== undefined) return true;
  // /api/v1 never reads cookies: a session is not a credential there.
  if (req.url?.startsWith('/api/v1')) return false;
  return (header(req, 'cookie') ?? '').split(';').some((part) => SESSION_COOKIE_NAMES.includes(part.split('=')[0]!.trim()));
}

async function authenticated(req: IncomingMessage): Promise<boolean> {
  // Loaded on first use: most requests never need it, and the web server starts without it.
  const [{ resolveActor }, { db }] = await Promise.all([import('../auth/actor'), import('../db')]);
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (name === 'cookie' && req.url?.startsWith('/api/v1')) continue;
    for (const v of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, v);
  }
  try {
    return (await resolveActor(db(), headers)) !== null;
  } catch {
    // A credential that cannot be checked (a malformed cookie, the database away) earns no more than none.
    return false;
  }
}

/** How long a refused client has to read its 413 before the connection is dropped. */
const LINGER_MS = 5_000;

/**
 * 413 at once, while the client is still sending, and the rest of the body is never read:
 * the socket stays paused. Written to the socket itself, because Node.js's response would,
 * once finished, read the rest of the body to drop it, then close the socket; a client
 * whose unsent body meets a closed socket gets a reset, which destroys the answer before
 * it is read. Here the answer says Connection: close and the server stops writing (FIN),
 * the client reads it and goes, and a client that does not is dropped after LINGER_MS.
 */
function tooLarge(req: IncomingMessage, limit: number): void {
  // /api/v1 answers problem details (problem.ts), the other APIs their own shape.
  const rest = req.url?.startsWith('/api/v1/') ?? false;
  const refusal = tooLargeBody(limit);
  const body = JSON.stringify(rest ? problem('PAYLOAD_TOO_LARGE', refusal.error.message) : refusal);
  const headers = { ...apiSecurityHeaders(), 'Content-Type': rest ? PROBLEM_CONTENT_TYPE : 'application/json', 'Content-Length': Buffer.byteLength(body), Connection: 'close' };
  const socket = req.socket;
  socket.end(`HTTP/1.1 413 Payload Too Large\r\n${Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n${body}`);
  const drop = setTimeout(() => socket.destroy(), LINGER_MS);
  drop.unref();
  socket.once('close', () => clearTimeout(drop));
}

/**
 * Whether the request may go on to Next.js; when not, a 413 has been sent. A chunked body
 * within the small bound is handed on whole, as if it had just arrived.
 */
export async function admitBody(req: IncomingMessage): Promise<boolean> {
  const chunked = header(req, 'transfer-encoding') !== undefined;
  const declared = chunked ? null : Number(header(req, 'content-length') ?? 0);
  if (declared !== null && (!Number.isFinite(declared) || declared <= ANONYMOUS_BODY_BYTES)) return true;
  // Held from the first byte: the body arrives while the credentials are looked up.
  const held = chunked ? holdBody(req) : null;
  const limit = presentsCredentials(req) && (await authenticated(req)) ? MAX_BODY_BYTES : ANONYMOUS_BODY_BYTES;
  if (!held) {
    if (declared! <= limit) return true;
    tooLarge(req, limit);
    return false;
  }
  // Chunked, with credentials: the route handler counts it (boundedRequest), and Next.js
  // copies at most its proxyClientMaxBodySize (next.config.js), just past MAX_BODY_BYTES.
  if (limit === MAX_BODY_BYTES) {
    held.release();
    return true;
  }
  return held.untilEnd();
}

interface HeldBody {
  /** Give back what is held and let the rest flow. */
  release(): void;
  /** true once the whole body is held (then given back), false once it passed the bound (413 sent). */
  untilEnd(): Promise<boolean>;
}

/**
 * The body's chunks, taken as the HTTP parser delivers them (IncomingMessage.push) and kept
 * out of the stream, up to ANONYMOUS_BODY_BYTES: past that the socket is paused (a false
 * from push stops the parser reading) until the caller decides. Given back in order, so
 * Next.js reads them as usual.
 */
function holdBody(req: IncomingMessage): HeldBody {
  const deliver = req.push.bind(req);
  const held: Buffer[] = [];
  let size = 0;
  let ended = false;
  let deciding: ((admitted: boolean) => void) | null = null;
  let decided = false;

  const giveBack = () => {
    req.push = deliver;
    for (const part of held.splice(0)) deliver(part);
    if (ended) deliver(null);
  };
  const refuse = () => {
    decided = true;
    held.length = 0;
    tooLarge(req, ANONYMOUS_BODY_BYTES);
    deciding?.(false);
  };
  const aborted = () => deciding?.(false);
  req.socket.once('close', aborted);

  req.push = (chunk: unknown, encoding?: BufferEncoding): boolean => {
    if (decided) return false;
    if (chunk === null) {
      ended = true;
      if (deciding) {
        decided = true;
        giveBack();
        deciding(true);
      }
      return false;
    }
    const part = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string, encoding);
    size += part.byteLength;
    held.push(part);
    if (size <= ANONYMOUS_BODY_BYTES) return true;
    if (deciding) refuse();
    return false;
  };

  return {
    release() {
      decided = true;
      req.socket.off('close', aborted);
      giveBack();
    },
    untilEnd() {
      return new Promise<boolean>((settle) => {
        deciding = (admitted) => {
          req.socket.off('close', aborted);
          deciding = null;
          settle(admitted);
        };
        if (ended) {
          decided = true;
          giveBack();
          deciding(true);
        } else if (size > ANONYMOUS_BODY_BYTES) refuse();
      });
    },
  };
}
