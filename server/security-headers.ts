// The security headers of every response. Pages get a strict
// Content-Security-Policy: scripts only with this response's nonce (Next.js puts it on
// its own scripts when the request carries the policy) and what they load
// ('strict-dynamic'); no framing anywhere. Styles allow inline attributes: React and the
// graph library position elements with style="…", which a nonce cannot cover. API
// answers are JSON and may load nothing. HSTS only where the console is served over https.

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

/** The headers besides the policy, the same on pages, API answers and assets. */
export function commonSecurityHeaders(o: Pick<HeaderOptions, 'https'>): Record<string, string> {
  return {
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'strict-origin-when-cross-origin',
    'X-Frame-Options': 'DENY',
    'Cross-Origin-Opener-Policy': 'same-origin',
    'Permissions-Policy': 'camera=(), microphone=(), geolocation=(), payment=()',
    ...(o.https ? { 'Strict-Transport-Security': 'max-age=31536000; includeSubDomains' } : {}),
  };
}

/** The options of this process: PUBLIC_URL's scheme and NODE_ENV, read without failing on a bad environment. */
export function headerOptions(): HeaderOptions {
  return { https: (process.env.PUBLIC_URL ?? '').trim().startsWith('https://'), development: process.env.NODE_ENV === 'development' };
}
