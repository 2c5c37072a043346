import { authEndpoint } from '@/server/http/auth-endpoint';

// better-auth's endpoints (sign-in, sign-out, session) as a Next.js route; the handler,
// with its body bound, per-account sign-in limit and outage answer, is server/http/auth-endpoint.ts.

export { authEndpoint as GET, authEndpoint as POST };
