import { healthResponse } from '@/server/http/health';

// Liveness as a Next.js route (`next dev`); scripts/web.ts answers it before Next.js
// (server/http/web-server.ts), the same answer.

export const dynamic = 'force-dynamic';

export function GET(): Promise<Response> {
  return healthResponse('/healthz');
}
