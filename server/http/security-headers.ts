// The security headers of every response, defined here once for everything that answers:
// proxy.ts (pages, and the API when Next.js serves it), next.config.ts (assets and public
// files, which proxy.ts does not see), the web server (web-server.ts: the refusals it answers
// itself, before Next.js) and the API it serves itself (node-endpoints.ts, and body-limit.ts's
// 413 at the socket). Pages get a strict Content-Security-Policy: scripts only
// with this response's nonce (Next.js puts it on its own scripts when the request carries
// the policy) and what they load ('strict-dynamic'); no framing anywhere. Styles allow
// inline attributes: React and the graph library position elements with style="…", which
// a nonce cannot cover. API answers are JSON and may load nothing. HSTS only where the
// console is served over https. This module imports nothing: next.config.ts loads it.

export interface HeaderOptions {
  /** PUBLIC_URL is https: add HSTS and upgrade-insecure-requests. */
  https: boolean;
  /** `next dev` evaluates its modules with eval; production never does. */
  development: boolean;
}

export function pageContentSecurityPolicy(nonce: string, o: HeaderOptions): string {
  return [
    `default-src 'self'`,
    `script-src 'self' 'nonce-${nonce}' 'strict-dynamic'${o.development ? ` 'unsafe-eval'` : ''}`,
    `style-src 'self' 'unsafe-inline'`,
    `img-src 'self' blob: data:`,
    `font-src 'self'`,
    `connect-src 'self'`,
    `object-src 'none'`,
    `base-uri 'self'`,
    `form-action 'self'`,
    `frame-ancestors 'none'`,
    ...(o.https ? ['upgrade-insecure-requests'] : []),
  ].join('; ');
}

export const API_CONTENT_SECURITY_POLICY = `default-src 'none'; frame-ancestors 'none'`;

/**
 * The headers next.config.ts gives every response Next.js serves, assets and public files
 * included. Its headers are fixed when the build is made, so nothing that depends on this
 * process's configuration (HSTS) is among them.
 */
export const EVERY_RESPONSE_HEADERS: Readonly<Record<string, string>> = {
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'strict-origin-when-cross-origin',
  'X-Frame-Options': 'DENY',
};

/** The headers besides the policy, the same on pages and API answers. */
export function commonSecurityHeaders(o: Pick<HeaderOptions, 'https'>): Record<string, string> {
  return {
    ...EVERY_RESPONSE_HEADERS,
    'Cross-Origin-Opener-Policy': 'same-origin',
    'Permissions-Policy': 'camera=(), microphone=(), geolocation=(), payment=()',
    ...(o.https ? { 'Strict-Transport-Security': 'max-age=31536000; includeSubDomains' } : {}),
  };
}

/** Every security header of an API answer, or of a refusal the web server answers itself. */
export function apiSecurityHeaders(o: Pick<HeaderOptions, 'https'> = headerOptions()): Record<string, string> {
  return { ...commonSecurityHeaders(o), 'Content-Security-Policy': API_CONTENT_SECURITY_POLICY };
}

/** Every security header of a page, whose scripts carry `nonce`. */
export function pageSecurityHeaders(nonce: string, o: HeaderOptions = headerOptions()): Record<string, string> {
  return { ...commonSecurityHeaders(o), 'Content-Security-Policy': pageContentSecurityPolicy(nonce, o) };
}

/** The options of this process: PUBLIC_URL's scheme and NODE_ENV, read without failing on a bad environment. */
export function headerOptions(): HeaderOptions {
  return { https: (process.env.PUBLIC_URL ?? '').trim().startsWith('https://'), development: process.env.NODE_ENV === 'development' };
}
