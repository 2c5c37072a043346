import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

// Every request the web server answers has an id (X-Request-Id): the caller's own, when it
// sent one that is safe to repeat in a log line and a header (a proxy's or a load
// balancer's id, so both logs name the request alike), else a new UUID. The web server
// echoes it in the answer and every line logged while the request is handled carries it
// (server/log.ts, withRequest).

export const REQUEST_ID_HEADER = 'X-Request-Id';

/** Letters, digits and `._:+=~@/-`, 1 to 128 of them: no spaces, quotes, commas or control characters. */
const SANE = /^[A-Za-z0-9._:+=~@/-]{1,128}$/;

export function requestIdOf(req: Pick<IncomingMessage, 'headers'>): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && SANE.test(given) ? given : randomUUID();
}
