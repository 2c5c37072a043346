import { authFor } from '@/server/auth/auth';
import { db } from '@/server/db';

// better-auth's endpoints (sign-in, sign-out, session) under /api/auth. The instance is
// made on first request, not at import, so `next build` needs neither a database nor a
// secret.

function handler(request: Request): Promise<Response> {
  return authFor(db()).handler(request);
}

export { handler as GET, handler as POST };
