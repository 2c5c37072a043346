import { describe, expect, it } from 'vitest';
import { malformedRequest } from '../../server/http/api-request';
import { restEndpoint, trpcEndpoint } from '../../server/http/endpoints';
import { undecodableAddress, UNDECODABLE_ADDRESS } from '../../server/http/request-target';

// The one address check (scripts/web.ts, proxy.ts and the API's handlers all ask it);
// test/api/http.test.ts and test/security/http-fuzz.test.ts meet it on the wire.

describe('an address that is not valid percent-encoding', () => {
  it('is a 400: JSON under /api/, a sentence elsewhere; a decodable one passes', () => {
    expect(undecodableAddress('/api/trpc/%E0%A4%A', '')).toEqual({
      status: 400,
      contentType: 'application/json',
      body: JSON.stringify({ error: { message: UNDECODABLE_ADDRESS, code: 'BAD_REQUEST' } }),
    });
    // /api/v1 answers problem details.
    const rest = undecodableAddress('/api/v1/contacts/%E0%A4%A', '')!;
    expect(rest.contentType).toBe('application/problem+json');
    expect(JSON.parse(rest.body)).toEqual({ type: '/problems/invalid-request', title: 'The request is not valid', status: 400, detail: UNDECODABLE_ADDRESS, code: 'BAD_REQUEST', issues: [] });
    expect(undecodableAddress('/executions/%ZZ.js', '')).toEqual({ status: 400, contentType: 'text/plain; charset=utf-8', body: UNDECODABLE_ADDRESS });
    expect(undecodableAddress('/executions', '?contact=%E0%A4%A')?.status).toBe(400);
    expect(undecodableAddress('/executions/%C3%A9', '?contact=a+b%20c')).toBeNull();
  });

  it('is refused by both API endpoints before anything else (no database needed)', async () => {
    for (const [endpoint, url] of [
      [trpcEndpoint, 'http://localhost/api/trpc/%E0%A4%A'],
      [restEndpoint, 'http://localhost/api/v1/events?x=%E0%A4%A'],
    ] as const) {
      const res = await endpoint(new Request(url, { method: 'POST', headers: { authorization: 'Bearer x' } }));
      expect(res.status).toBe(400);
      const body = (await res.json()) as Record<string, unknown>;
      if (endpoint === trpcEndpoint) {
        expect(res.headers.get('content-type')).toBe('application/json');
        expect(body).toEqual({ error: { message: UNDECODABLE_ADDRESS, code: 'BAD_REQUEST' } });
      } else {
        // /api/v1's errors are problem details.
        expect(res.headers.get('content-type')).toBe('application/problem+json');
        expect(body).toMatchObject({ type: '/problems/invalid-request', status: 400, detail: UNDECODABLE_ADDRESS, code: 'BAD_REQUEST' });
      }
    }
    expect(malformedRequest(new Request('http://localhost/api/trpc/health.invariants'))).toBeNull();
  });
});
