import { createHash, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import { log } from '../log';
import { metrics } from '../metrics/registry';
import { METRICS_PATH } from './metrics-path';
import { problem, PROBLEM_CONTENT_TYPE } from './problem';
import { apiSecurityHeaders } from './security-headers';

export { METRICS_PATH };

// /metrics (docs/deploy.md, "Metrics and logs"): this process's Prometheus registry
// (server/metrics/registry.ts) in the text exposition format, for a Bearer token only.
// The web server answers it before Next.js (web-server.ts), on its own port; each worker
// on a listener of its own (metricsListener, WORKER_METRICS_PORT on METRICS_HOST).
// - METRICS_TOKEN unset: 404, as if there were no such path (the web server; a worker
//   then opens no listener at all);
// - no token, or another one: 401 problem details, with WWW-Authenticate;
// - GET or HEAD only (405 otherwise); never cached.
// The token is compared in constant time, as digests of equal length.

export interface MetricsAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/** Whether an Authorization header carries exactly this Bearer token. */
export function bearerMatches(authorization: string | undefined, token: string): boolean {
  const match = /^Bearer +(\S+) *$/i.exec(authorization ?? '');
  // Compared even when absent, so a missing header costs what a wrong one does.
  return timingSafeEqual(digest(match?.[1] ?? ''), digest(token)) && match !== null;
}

const plain = (status: number, body: string, extra: Record<string, string> = {}): MetricsAnswer => ({
  status,
  headers: { ...apiSecurityHeaders(), 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store', ...extra },
  body,
});

export async function metricsAnswer(req: Pick<http.IncomingMessage, 'method' | 'headers'>, token: string | undefined): Promise<MetricsAnswer> {
  if (!token) return plain(404, 'Not found: set METRICS_TOKEN to serve /metrics.\n');
  if (req.method !== 'GET' && req.method !== 'HEAD') return plain(405, `The ${req.method ?? ''} method is not served here.\n`, { Allow: 'GET, HEAD' });
  if (!bearerMatches(req.headers.authorization, token)) {
    const body = problem('UNAUTHORIZED', 'Send Authorization: Bearer <METRICS_TOKEN>.', { title: 'No valid metrics token' });
    return {
      status: 401,
      headers: { ...apiSecurityHeaders(), 'Content-Type': PROBLEM_CONTENT_TYPE, 'Cache-Control': 'no-store', 'WWW-Authenticate': 'Bearer realm="metrics"' },
      body: JSON.stringify(body),
    };
  }
  const { registry } = metrics();
  try {
    const text = await registry.metrics();
    return { status: 200, headers: { ...apiSecurityHeaders(), 'Content-Type': registry.contentType, 'Cache-Control': 'no-store' }, body: text };
  } catch (err) {
    log.error('metrics: collecting failed', { err });
    return plain(503, 'The metrics could not be collected; the log says why.\n');
  }
}

/** Write an answer to Node's response (HEAD: the headers only). */
export function writeMetricsAnswer(req: http.IncomingMessage, res: http.ServerResponse, answer: MetricsAnswer): void {
  res.writeHead(answer.status, answer.headers).end(req.method === 'HEAD' ? undefined : answer.body);
}

/**
 * A worker's metrics listener: /metrics and nothing else (404), on `host`:`port`. Resolves
 * once listening; rejects with a sentence when the port cannot be had.
 */
export function metricsListener(o: { port: number; host: string; token: string }): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    const pathname = (req.url ?? '').split('?')[0];
    if (pathname !== METRICS_PATH) {
      writeMetricsAnswer(req, res, plain(404, 'Not found: this listener serves /metrics only.\n'));
      return;
    }
    void metricsAnswer(req, o.token).then((answer) => writeMetricsAnswer(req, res, answer));
  });
  return new Promise((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      reject(new Error(`the metrics listener cannot listen on ${o.host}:${o.port} (${error.code ?? error.message}): set WORKER_METRICS_PORT to a free port`));
    });
    server.listen(o.port, o.host, () => resolve(server));
  });
}
