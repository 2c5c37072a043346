import next from 'next';
import { parseEnv } from '../server/env';
import { createWebServer } from '../server/http/web-server';
import { ROOT } from './database';

// The web process: its configuration, Next.js prepared from the production build, the
// console's web server (server/http/web-server.ts: what it answers itself and what it
// hands to Next.js) listening on PORT, and a drain on SIGTERM or SIGINT (in-flight
// requests finish, up to 25 s) before it exits 0.

const env = parseEnv();
const hostname = process.env.HOSTNAME || undefined;
const app = next({ dev: false, dir: ROOT, port: env.PORT, hostname });
const handle = app.getRequestHandler();
await app.prepare();
const web = createWebServer({ handle, trustedProxies: env.TRUSTED_PROXIES, apiThroughNext: process.env.WAYPOST_API_THROUGH_NEXT === '1' });
web.server.listen(env.PORT, hostname, () => {
  process.stdout.write(`web server listening on ${env.PORT}${env.TRUSTED_PROXIES ? ` (trusting X-Forwarded-For from ${env.TRUSTED_PROXIES})` : ''}\n`);
});

for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => web.drain(() => process.exit(0)));
