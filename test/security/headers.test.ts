import { describe, expect, it } from 'vitest';
import { commonSecurityHeaders, pageContentSecurityPolicy } from '../../server/security-headers';

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
});
