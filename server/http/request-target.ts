import { safeDecode } from '../url';
import { problem, PROBLEM_CONTENT_TYPE } from './problem';

// What a request's target (its path and query) must be before anything reads it. Next.js
// and the libraries behind it decode the path and the query, and a decode that throws
// answers 500; so an address that is not valid percent-encoding is a 400, decided here
// once for every server that meets it.

/** What a client is told when its address does not decode (the web server, the proxy and the API say the same). */
export const UNDECODABLE_ADDRESS = 'The request path or query is not valid percent-encoding (UTF-8).';

/** Whether a request's path and query decode as percent-encoded UTF-8 (a `+` in the query is a space). */
export function decodableAddress(pathname: string, search: string): boolean {
  return safeDecode(pathname) !== null && safeDecode(search.replace(/\+/g, ' ')) !== null;
}

/** A 400 as each server writes it: its status, Content-Type and body. */
export interface AddressRefusal {
  status: 400;
  contentType: string;
  body: string;
}

/**
 * The one address check, for the web server (web-server.ts, every request), proxy.ts (whose
 * matcher skips paths that look like files, hence the web server's own) and the API's and sign-in's handlers
 * (malformedRequest, for `next dev`): the 400 a request whose path or query does not
 * decode gets (JSON under /api/, text elsewhere), or null when they decode.
 */
export function undecodableAddress(pathname: string, search: string): AddressRefusal | null {
  if (decodableAddress(pathname, search)) return null;
  // /api/v1 answers every error as problem details (problem.ts).
  if (pathname.startsWith('/api/v1/')) return { status: 400, contentType: PROBLEM_CONTENT_TYPE, body: JSON.stringify(problem('BAD_REQUEST', UNDECODABLE_ADDRESS, { issues: [] })) };
  return pathname.startsWith('/api/')
    ? { status: 400, contentType: 'application/json', body: JSON.stringify({ error: { message: UNDECODABLE_ADDRESS, code: 'BAD_REQUEST' } }) }
    : { status: 400, contentType: 'text/plain; charset=utf-8', body: UNDECODABLE_ADDRESS };
}
