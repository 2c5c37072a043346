/** decodeURIComponent, or null for text that is not valid percent-encoded UTF-8 (`%E0%A4%A`), which it would throw on. */
export function safeDecode(text: string): string | null {
  try {
    return decodeURIComponent(text);
  } catch {
    return null;
  }
}

/** What a client is told when its address does not decode (the web server, the proxy and the API say the same). */
export const UNDECODABLE_ADDRESS = 'The request path or query is not valid percent-encoding (UTF-8).';

/**
 * Whether a request's path and query decode as percent-encoded UTF-8 (a `+` in the query
 * is a space). Next.js and the libraries behind it decode both, and a decode that throws
 * answers 500.
 */
export function decodableAddress(pathname: string, search: string): boolean {
  return safeDecode(pathname) !== null && safeDecode(search.replace(/\+/g, ' ')) !== null;
}
