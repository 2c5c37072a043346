import next from 'next';
import { parseEnv } from '../server/env';
import { readMigrations } from '../server/migrator';
import { createWebServer } from '../server/http/web-server';
import { ROOT } from './database';

// The web process: its configuration, Next.js prepared from the production build, the
// console's web server (server/http/web-server.ts: what it answers itself and what it
// hands to Next.js) listening on PORT, and a drain on SIGTERM or SIGINT before it exits 0:
// /readyz answers 503 at once, new connections are refused, requests in flight finish, up
// to SHUTDOWN_SECONDS (then every connection is closed).

const env = parseEnv();
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
});
web.server.listen(env.PORT, hostname, () => {
  process.stdout.write(`web server listening on ${env.PORT}${env.TRUSTED_PROXIES ? ` (trusting X-Forwarded-For from ${env.TRUSTED_PROXIES})` : ''}\n`);
});

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    process.stdout.write(`${signal}: draining (at most ${env.SHUTDOWN_SECONDS} s)\n`);
    web.drain(() => process.exit(0));
  });
}
