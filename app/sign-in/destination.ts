/**
 * Where to go after signing in: the ?next= the console sent the visitor with, if it is a
 * path of this site. Anything else (another host, `//evil.example`, a backslash trick)
 * falls back to the overview, so the sign-in page cannot be used as an open redirect.
 */
export function destinationAfterSignIn(next: string | string[] | undefined): string {
  const value = Array.isArray(next) ? next[0] : next;
  if (!value || !value.startsWith('/') || value.startsWith('//') || value.includes('\\')) return '/';
  if (value === '/sign-in' || value.startsWith('/sign-in?')) return '/';
  return value;
}
