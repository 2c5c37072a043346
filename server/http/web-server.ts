import http from 'node:http';
import { admitBody } from './body-limit';
import { clientAddress, trustOf } from './client-address';
import { log, withRequest } from '../log';
import { healthAnswer, healthHeaders, isHealthPath, type HealthAnswer } from './health';
import { METRICS_PATH, metricsAnswer, writeMetricsAnswer } from './metrics';
import { observeRequest } from './request-metrics';
import { REQUEST_ID_HEADER, requestIdOf } from './request-id';
import { apiEndpointOf, hasUrl, serveApi } from './node-endpoints';
import { undecodableAddress } from './request-target';
import { apiSecurityHeaders } from './security-headers';

// The console's web server (scripts/web.ts runs it): Next.js's request handler behind a
// plain Node HTTP server, so that the client's address comes from the socket
// (client-address.ts). Before a request reaches Next.js, X-Forwarded-For is replaced by
// that one address: better-auth's per-address sign-in limit, and everything else, see who
// really asked; a client that sends the header itself changes nothing unless it is a
// trusted proxy (TRUSTED_PROXIES). `next start` would keep a client's forged header. A
// body too large for who is sending it is refused here with 413, before Next.js reads any
// of it (body-limit.ts). The API (/api/trpc, /api/v1) is then answered here, by the
// handlers of its Next.js routes, without Next.js's request pipeline (node-endpoints.ts);
// everything else, and any API request those routes would not answer themselves, goes to
// Next.js. /healthz and /readyz (health.ts) are answered here too, before anything else
// can refuse them: no rate limit, no credentials. Draining (SIGTERM) turns /readyz to 503
// at once, stops accepting, lets in-flight requests finish (up to SHUTDOWN_SECONDS),
// closes each keep-alive connection once it is idle, then says it is done. Every request
// gets an id (request-id.ts: X-Request-Id, echoed, on each line logged meanwhile) and,
// with METRICS_TOKEN set, its duration in /metrics (metrics.ts, answered here too).

/**
 * Methods that fetch's Request refuses to carry (TRACE, CONNECT; Node's parser refuses
 * TRACK itself): Next.js builds a Request for every request and answered TRACE with a 500
 * (TypeError "'TRACE' HTTP method is unsupported"). CONNECT reaches the handler only when
 * it names a path; naming host:port it is Node's 'connect' event, which, with no
 * listener, closed the connection without a word.
 */
const UNSERVED_METHODS = new Set(['TRACE', 'CONNECT']);
const ALLOW = 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS';
const methodNotAllowed = (method: string | undefined) => `The ${method ?? ''} method is not served here.\n`;


export interface WebServerOptions {
  /** Next.js's request handler: everything this server does not answer itself. */
  handle: (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void>;
  /** TRUSTED_PROXIES (client-address.ts). */
  trustedProxies: string | undefined;
  /** WAYPOST_API_THROUGH_NEXT=1: hand the API to Next.js's routes too, as before (to compare the two in tests). */
  apiThroughNext: boolean;
  /** The migrations this build ships (server/migrator.ts readMigrations): /readyz is 503 until each is applied. */
  migrations: readonly string[];
  /** How long a drain waits for the requests in flight before it closes every connection (SHUTDOWN_SECONDS). */
  drainMs: number;
  /** METRICS_TOKEN: /metrics answers with it only; unset, /metrics is 404 and no request is measured. */
  metricsToken?: string;
}

export interface WebServer {
  server: http.Server;
  /** Stop accepting and finish what is in flight; `done` runs once, when every connection is closed or after drainMs. */
  drain(done: () => void): void;
}

export function createWebServer(options: WebServerOptions): WebServer {
  const { handle } = options;
  const trust = trustOf(options.trustedProxies);
  /** The headers of the answers this server gives itself, before Next.js (and proxy.ts) would. */
  const refusal = { ...apiSecurityHeaders(), 'Content-Type': 'text/plain; charset=utf-8' };
  let stopping = false;

  // Every request: its id (echoed, and on every line logged while it is handled), its
  // duration in the metrics, and a debug line when it is answered.
  const server = http.createServer((req, res) => {
    const requestId = requestIdOf(req);
    req.headers['x-request-id'] = requestId;
    res.setHeader(REQUEST_ID_HEADER, requestId);
    const started = performance.now();
    res.once('close', () => {
      const seconds = (performance.now() - started) / 1000;
      const route = options.metricsToken ? observeRequest(req, res.statusCode, seconds) : null;
      log.debug('request answered', { requestId, method: req.method, ...(route ? { route } : {}), status: res.statusCode, ms: Math.round(seconds * 1000) });
    });
    withRequest(requestId, () => answer(req, res));
  });

  const answer = (req: http.IncomingMessage, res: http.ServerResponse) => {
    // Draining: a request that came on a kept-alive connection is answered, and that
    // connection is then closed, so the client's next request opens a new one (refused).
    if (stopping) res.setHeader('Connection', 'close');
    if (UNSERVED_METHODS.has(req.method ?? '')) {
      res.writeHead(405, { ...refusal, Allow: ALLOW }).end(methodNotAllowed(req.method));
      return;
    }
    // The asterisk form (`OPTIONS * HTTP/1.1`) asks about the server itself; Next.js cannot
    // make a URL of it and answered 500.
    if (req.url === '*') {
      res.writeHead(req.method === 'OPTIONS' ? 204 : 400, { ...refusal, Allow: ALLOW }).end();
      return;
    }
    // The absolute form (`GET http://elsewhere.example/ HTTP/1.1`) is for proxies; browsers
    // never send it to an origin server, and Next.js answered it with a 308 to that other host.
    if (!(req.url ?? '').startsWith('/')) {
      res.writeHead(400, refusal).end('The request target must be a path (origin form), not an absolute URL.\n');
      return;
    }
    // proxy.ts answers 400 to an address that does not decode, but its matcher skips paths
    // that look like files, so /executions/%ZZ.js reached the page's dynamic segment, whose
    // decode threw (a 500). Every request passes here.
    const [pathname = '', ...query] = (req.url ?? '').split('?');
    const undecodable = undecodableAddress(pathname, query.join('?'));
    if (undecodable) {
      res.writeHead(undecodable.status, { ...refusal, 'Content-Type': undecodable.contentType }).end(undecodable.body);
      return;
    }
    if (pathname === METRICS_PATH) {
      void metricsAnswer(req, options.metricsToken).then((answer) => writeMetricsAnswer(req, res, answer));
      return;
    }
    if (isHealthPath(pathname)) {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { ...refusal, Allow: 'GET, HEAD' }).end(methodNotAllowed(req.method));
        return;
      }
      void healthAnswer(pathname, { draining: stopping, shipped: () => options.migrations })
        .catch((): HealthAnswer => ({ status: 503, body: { status: 'unavailable', reason: 'the readiness check failed' } }))
        .then((answer) => {
        res.writeHead(answer.status, healthHeaders()).end(req.method === 'HEAD' ? undefined : JSON.stringify(answer.body));
      });
      return;
    }
    req.headers['x-forwarded-for'] = clientAddress(req, trust);
    const api = options.apiThroughNext ? null : apiEndpointOf(req);
    const endpoint = api && hasUrl(req) ? api : null;
    void admitBody(req).then((admitted) => {
      if (!admitted) return;
      if (endpoint) void serveApi(req, res, endpoint);
      else void handle(req, res);
    });
  };
  server.on('connect', (req, socket) => {
    const body = methodNotAllowed(req.method);
    const headers = Object.entries({ ...refusal, Allow: ALLOW, 'Content-Length': Buffer.byteLength(body), Connection: 'close' }).map(([name, value]) => `${name}: ${value}\r\n`);
    socket.end(`HTTP/1.1 405 Method Not Allowed\r\n${headers.join('')}\r\n${body}`);
  });

  return {
    server,
    drain(whenDone) {
      if (stopping) return;
      stopping = true;
      let finished = false;
      const done = () => {
        if (finished) return;
        finished = true;
        whenDone();
      };
      server.close(() => done());
      // A keep-alive connection goes idle once its request is answered: close it then, so
      // the process exits as soon as the last request in flight is done, and the client
      // opens a new connection, which is refused (and goes to another instance).
      server.closeIdleConnections();
      setInterval(() => server.closeIdleConnections(), 100).unref();
      setTimeout(() => {
        server.closeAllConnections();
        done();
      }, options.drainMs).unref();
    },
  };
}
