import { describe, expect, it } from 'vitest';
import nextConfig from '../../next.config';
import { apiSecurityHeaders, commonSecurityHeaders, EVERY_RESPONSE_HEADERS, pageContentSecurityPolicy, pageSecurityHeaders } from '../../server/http/security-headers';

// The header set itself; test/api/http.test.ts checks it on the wire.

describe('security headers', () => {
  it('add HSTS and upgrade-insecure-requests only over https', () => {
    expect(commonSecurityHeaders({ https: true })['Strict-Transport-Security']).toMatch(/^max-age=31536000/);
    expect(commonSecurityHeaders({ https: false })['Strict-Transport-Security']).toBeUndefined();
    expect(pageContentSecurityPolicy('n', { https: true, development: false })).toContain('upgrade-insecure-requests');
    expect(pageContentSecurityPolicy('n', { https: false, development: false })).not.toContain('upgrade-insecure-requests');
  });

  it('allow eval only for next dev', () => {
    expect(pageContentSecurityPolicy('n', { https: false, development: true })).toContain(`'unsafe-eval'`);
    expect(pageContentSecurityPolicy('n', { https: false, development: false })).not.toContain('unsafe-eval');
  });

  it('are one set: next.config.ts gives every response the part of it that fits any response', async () => {
    const [rule] = (await nextConfig.headers!()) as { source: string; headers: { key: string; value: string }[] }[];
    expect(rule!.source).toBe('/:path*');
    expect(Object.fromEntries(rule!.headers.map((h) => [h.key, h.value]))).toEqual(EVERY_RESPONSE_HEADERS);
    for (const https of [false, true]) {
      expect(commonSecurityHeaders({ https })).toMatchObject(EVERY_RESPONSE_HEADERS);
      expect(apiSecurityHeaders({ https })).toEqual({ ...commonSecurityHeaders({ https }), 'Content-Security-Policy': `default-src 'none'; frame-ancestors 'none'` });
      const options = { https, development: false };
      expect(pageSecurityHeaders('n', options)).toEqual({ ...commonSecurityHeaders({ https }), 'Content-Security-Policy': pageContentSecurityPolicy('n', options) });
    }
  });
});
