import { NextResponse, type NextRequest } from 'next/server';
import { REQUEST_PATH_HEADER, SESSION_COOKIE_NAMES } from './server/auth/cookies';

// Next.js 16's request proxy (formerly middleware), in front of every console page. A
// visitor without a session cookie is sent to the sign-in page, remembering where they
// were going. Whether the cookie is still valid is decided by the layout, which reads the
// session from the database; this check only spares signed-out visitors that round trip.
// /api is not matched: the API answers 401 JSON to a missing session, it never redirects.

const SIGN_IN = '/sign-in';

export function proxy(request: NextRequest) {
  const { pathname, search } = request.nextUrl;
  const hasSession = SESSION_COOKIE_NAMES.some((name) => request.cookies.has(name));
  if (!hasSession && pathname !== SIGN_IN) {
    const signIn = new URL(SIGN_IN, request.url);
    if (pathname !== '/' || search) signIn.searchParams.set('next', `${pathname}${search}`);
    return NextResponse.redirect(signIn);
  }
  // The layout needs the path to send an expired session back here after signing in.
  const headers = new Headers(request.headers);
  headers.set(REQUEST_PATH_HEADER, `${pathname}${search}`);
  return NextResponse.next({ request: { headers } });
}

export const config = {
  // Pages only: not the API, Next's own assets, or public files such as /waypost.svg.
  matcher: ['/((?!api/|_next/|.*\\.[a-zA-Z0-9]+$).*)'],
};
