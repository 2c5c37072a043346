import type { IncomingMessage } from 'node:http';
import { metrics } from '../metrics/registry';
import { methodLabel, routeLabel, statusClass } from './route-label';

/** Count one answered request in waypost_http_request_duration_seconds; returns its route label. */
export function observeRequest(req: Pick<IncomingMessage, 'method' | 'url'>, status: number, seconds: number): string {
  const url = req.url ?? '';
  const at = url.indexOf('?');
  const method = methodLabel(req.method);
  const route = routeLabel(method, at === -1 ? url : url.slice(0, at));
  metrics().httpDuration.observe({ route, method, status_class: statusClass(status) }, seconds);
  return route;
}
