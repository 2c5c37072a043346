import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebServer, type WebServer } from '../../server/http/web-server';
import { apiSecurityHeaders } from '../../server/http/security-headers';

// The web server's own answers (server/http/web-server.ts), before anything reaches
// Next.js, with a stand-in for Next.js's handler: no build needed. test/security/http-fuzz.test.ts,
// test/api/http.test.ts and test/reliability/shutdown.test.ts meet the real one.

let web: WebServer;
let port = 0;
const handled: { url: string | undefined; forwardedFor: string | string[] | undefined }[] = [];

beforeAll(async () => {
  web = createWebServer({
    handle: async (req, res) => {
      handled.push({ url: req.url, forwardedFor: req.headers['x-forwarded-for'] });
      res.writeHead(200, { 'content-type': 'text/plain' }).end('next');
    },
    trustedProxies: '',
    apiThroughNext: true,
    drainMs: 25_000,
    migrations: [],
  });
  await new Promise<void>((listening) => web.server.listen(0, '127.0.0.1', listening));
  port = (web.server.address() as net.AddressInfo).port;
});

afterAll(async () => {
  await new Promise<void>((closed) => web.drain(closed));
});

/** Raw bytes on a fresh connection; the answer's status and head. */
function raw(request: string): Promise<{ status: number; head: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (c: Buffer) => {
      text += c.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end !== -1) {
        socket.destroy();
        resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]), head: text.slice(0, end).toLowerCase() });
      }
    });
    socket.on('error', reject);
    socket.write(request);
  });
}

function get(path: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path, headers }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      })
      .on('error', reject);
  });
}

describe('the web server, before Next.js', () => {
  it('refuses TRACE and CONNECT with 405, answers OPTIONS * with 204 and an absolute target with 400, all with the security headers', async () => {
    for (const request of ['TRACE / HTTP/1.1\r\nHost: x\r\n\r\n', 'CONNECT /x HTTP/1.1\r\nHost: x\r\n\r\n', 'CONNECT elsewhere.example:443 HTTP/1.1\r\nHost: x\r\n\r\n']) {
      const answer = await raw(request);
      expect(answer.status, request).toBe(405);
      expect(answer.head).toContain('allow: get, head, post, put, patch, delete, options');
      for (const [name, value] of Object.entries(apiSecurityHeaders())) expect(answer.head).toContain(`${name.toLowerCase()}: ${value.toLowerCase()}`);
    }
    expect((await raw('OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n')).status).toBe(204);
    expect((await raw('GET * HTTP/1.1\r\nHost: x\r\n\r\n')).status).toBe(400);
    expect((await raw('GET http://elsewhere.example/ HTTP/1.1\r\nHost: x\r\n\r\n')).status).toBe(400);
    expect(handled).toEqual([]);
  });

  it('answers an undecodable address with 400 itself, even one proxy.ts would not see', async () => {
    const page = await get('/executions/%ZZ.js');
    expect(page.status).toBe(400);
    expect(page.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(page.headers['content-security-policy']).toBe(`default-src 'none'; frame-ancestors 'none'`);
    const api = await get('/api/trpc/%E0%A4%A');
    expect(api.status).toBe(400);
    expect(JSON.parse(api.body)).toMatchObject({ error: { code: 'BAD_REQUEST' } });
    expect(handled).toEqual([]);
  });

  it('hands the rest to Next.js with X-Forwarded-For set to the socket address, whatever the client sent', async () => {
    const answer = await get('/executions?x=1', { 'x-forwarded-for': '203.0.113.9' });
    expect(answer.body).toBe('next');
    expect(handled).toEqual([{ url: '/executions?x=1', forwardedFor: '127.0.0.1' }]);
  });
});
