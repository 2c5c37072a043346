import type { NextConfig } from 'next';
import { EVERY_RESPONSE_HEADERS } from './server/http/security-headers';

const nextConfig: NextConfig = {
  // Database drivers run as plain Node modules rather than bundled into the server build:
  // node-postgres probes optional native bindings at runtime, and the Prisma adapter must
  // share that very module instance.
  serverExternalPackages: ['pg', '@prisma/adapter-pg'],
  // This directory is the app's root even when a parent directory holds another lockfile.
  turbopack: { root: import.meta.dirname },
  poweredByHeader: false,
  experimental: {
    // Next.js copies a request's body for the request proxy (proxy.ts) and silently cuts it
    // at this size (10 MB by default). Just past the API's own limit (server/http/api-request.ts
    // MAX_BODY_BYTES, 12 MB), so a body over it is refused with 413 by the route, never
    // truncated into a confusing 400. Bodies from callers without credentials are refused
    // at 16 KB before Next.js sees them (server/http/body-limit.ts).
    proxyClientMaxBodySize: 12 * 1024 * 1024 + 1,
  },
  // Assets and public files, which proxy.ts does not see, get the headers that fit any
  // response (server/http/security-headers.ts, which imports nothing, so this config can load
  // it; pages and the API get the rest from proxy.ts).
  async headers() {
    return [{ source: '/:path*', headers: Object.entries(EVERY_RESPONSE_HEADERS).map(([key, value]) => ({ key, value })) }];
  },
};

export default nextConfig;
