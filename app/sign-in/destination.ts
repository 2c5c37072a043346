/** A stand-in origin to resolve `next` against: only what stays on it is a path of this site. */
const HERE = 'https://console.invalid';

/**
 * Where to go after signing in: the ?next= the console sent the visitor with, if it is a
 * path of this site. `next` is resolved the way a browser would resolve it (which drops
 * tabs and newlines, so `/\t/evil.example` is `//evil.example`, another host) and kept
 * only if it stays on this origin; anything else (another host, a scheme, a backslash
 * trick, control characters) falls back to the overview, so the sign-in page cannot be
 * used as an open redirect. What is returned is the resolved path, never the raw text.
 */
export function destinationAfterSignIn(next: string | string[] | undefined): string {
  const value = Array.isArray(next) ? next[0] : next;
  if (!value || !value.startsWith('/') || /[\u0000-\u001f\u007f\\]/.test(value)) return '/';
  let url: URL;
  try {
    url = new URL(value, HERE);
  } catch {
    return '/';
  }
  if (url.origin !== HERE) return '/';
  const path = `${url.pathname}${url.search}${url.hash}`;
  if (!path.startsWith('/') || path.startsWith('//')) return '/';
  if (url.pathname === '/sign-in') return '/';
  return path;
}
