import next from 'next';
import { parseEnv } from '../server/env';
import { readMigrations } from '../server/migrator';
import { createWebServer } from '../server/http/web-server';
import { db } from '../server/db';
import { captureConsole, configureLogging, log } from '../server/log';
import { reportStuckFigures } from '../server/metrics/registry';
import { stuckFiguresSource } from '../server/read/stuck-figures';
import { ROOT } from './database';

// The web process: its configuration, Next.js prepared from the production build, the
// console's web server (server/http/web-server.ts: what it answers itself and what it
// hands to Next.js) listening on PORT, and a drain on SIGTERM or SIGINT before it exits 0:
// /readyz answers 503 at once, new connections are refused, requests in flight finish, up
// to SHUTDOWN_SECONDS (then every connection is closed).

const env = parseEnv();
configureLogging({ role: 'web' });
captureConsole();
const hostname = process.env.HOSTNAME || undefined;
const app = next({ dev: false, dir: ROOT, port: env.PORT, hostname });
const handle = app.getRequestHandler();
await app.prepare();
const web = createWebServer({
  handle,
  trustedProxies: env.TRUSTED_PROXIES,
  apiThroughNext: process.env.WAYPOST_API_THROUGH_NEXT === '1',
  drainMs: env.SHUTDOWN_SECONDS * 1000,
  migrations: readMigrations().map((m) => m.name),
  metricsToken: env.METRICS_TOKEN,
});
// /metrics' stuck items: the console's figures, summed at most every 15 s (server/read/stuck-figures.ts).
if (env.METRICS_TOKEN) reportStuckFigures(stuckFiguresSource(db(), { graceSeconds: env.STUCK_GRACE_SECONDS }));
web.server.listen(env.PORT, hostname, () => {
  log.info(`web server listening on ${env.PORT}${env.TRUSTED_PROXIES ? ` (trusting X-Forwarded-For from ${env.TRUSTED_PROXIES})` : ''}${env.METRICS_TOKEN ? ', /metrics with METRICS_TOKEN' : ''}`);
});

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    log.info(`${signal}: draining (at most ${env.SHUTDOWN_SECONDS} s)`);
    web.drain(() => process.exit(0));
  });
}
