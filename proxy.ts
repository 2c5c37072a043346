import { NextResponse, type NextRequest } from 'next/server';
import { REQUEST_PATH_HEADER, SESSION_COOKIE_NAMES } from './server/common/cookies';
import { apiSecurityHeaders, pageSecurityHeaders } from './server/http/security-headers';
import { isHealthPath } from './server/http/health-paths';
import { undecodableAddress } from './server/http/request-target';

// Next.js 16's request proxy (formerly middleware), in front of every console page. A
// visitor without a session cookie is sent to the sign-in page, remembering where they
// were going. Whether the cookie is still valid is decided by the layout, which reads the
// session from the database; this check only spares signed-out visitors that round trip.
// The API passes through (it answers 401 JSON to a missing session, it never redirects);
// only an address that is not valid percent-encoding is stopped here, for pages and API
// alike, with a 400: Next.js would throw decoding it into the route's parameters (a 500).

const SIGN_IN = '/sign-in';
/** An invitation link: opened by people who may have no account yet (its page offers one). */
const INVITATION_LINK = /^\/invitations\/[^/]+$/;

export function proxy(request: NextRequest) {
  const { pathname, search } = request.nextUrl;
  // /healthz and /readyz (server/http/health.ts) answer without a session, as the API does.
  const api = pathname.startsWith('/api/') || isHealthPath(pathname);
  const secured = (response: NextResponse, headers: Record<string, string>) => {
    for (const [name, value] of Object.entries(headers)) response.headers.set(name, value);
    return response;
  };
  const undecodable = undecodableAddress(pathname, search);
  if (undecodable) {
    const answer = new NextResponse(undecodable.body, { status: undecodable.status, headers: { 'content-type': undecodable.contentType } });
    return secured(answer, apiSecurityHeaders());
  }
  if (api) return secured(NextResponse.next(), apiSecurityHeaders());
  const security = pageSecurityHeaders(Buffer.from(crypto.randomUUID()).toString('base64'));
  const policy = security['Content-Security-Policy']!;
  const hasSession = SESSION_COOKIE_NAMES.some((name) => request.cookies.has(name));
  if (!hasSession && pathname !== SIGN_IN && !INVITATION_LINK.test(pathname)) {
    const signIn = new URL(SIGN_IN, request.url);
    if (pathname !== '/' || search) signIn.searchParams.set('next', `${pathname}${search}`);
    return secured(NextResponse.redirect(signIn), security);
  }
  // The layout needs the path to send an expired session back here after signing in; the
  // policy on the request is how Next.js learns the nonce to put on its scripts.
  const headers = new Headers(request.headers);
  headers.set(REQUEST_PATH_HEADER, `${pathname}${search}`);
  headers.set('Content-Security-Policy', policy);
  return secured(NextResponse.next({ request: { headers } }), security);
}

export const config = {
  // The whole API (whose procedure names look like file names: /api/trpc/health.invariants),
  // and pages: not Next's own assets, or public files such as /waypost.svg.
  matcher: ['/api/:path*', '/((?!api/|_next/|.*\\.[a-zA-Z0-9]+$).*)'],
};
