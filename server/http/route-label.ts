import { appRouter } from '../trpc/root';
import { REST_BASE_PATH } from '../trpc/rest';
import { HEALTH_PATHS } from './health-paths';
import { METRICS_PATH } from './metrics-path';

// The route a request is counted under in waypost_http_request_duration_seconds: a fixed
// set, never the raw path (ids, emails, a caller's garbage would each be a new series).
// - /api/trpc: `trpc:<procedure>` for a procedure the router has, `trpc:batch` for a
//   batch of several, `trpc:unknown` for any other name;
// - /api/v1: the REST path template of the operation (`/api/v1/contacts/{id}`),
//   `/api/v1/*` for a path no operation has;
// - /api/auth/*, /api/v1/openapi.json, /healthz, /readyz, /metrics as they are;
// - `next` for everything Next.js answers (pages, assets).

const TRPC_PREFIX = '/api/trpc/';
const OPENAPI_DOCUMENT = `${REST_BASE_PATH}/openapi.json`;
const FIXED = new Set<string>([...HEALTH_PATHS, METRICS_PATH, OPENAPI_DOCUMENT]);
/** repair.apply is the documented name of repair.applyOne (api-request.ts, withDocumentedProcedureNames). */
const ALIASES = ['repair.apply'];

interface RestRoute {
  method: string;
  template: string;
  pattern: RegExp;
}

let known: { procedures: Set<string>; rest: RestRoute[] } | undefined;

function routes(): { procedures: Set<string>; rest: RestRoute[] } {
  if (known) return known;
  const procedures = appRouter._def.procedures as Record<string, { _def?: { meta?: { openapi?: { method: string; path: string } } } }>;
  const rest = Object.values(procedures)
    .flatMap((p) => (p._def?.meta?.openapi ? [p._def.meta.openapi] : []))
    .map(({ method, path }) => {
      const template = `${REST_BASE_PATH}${path}`;
      const source = template
        .split(/(\{[^}]+\})/)
        .map((part) => (part.startsWith('{') ? '[^/]+' : part.replace(/[.*+?^$()|[\]\\]/g, '\\$&')))
        .join('');
      return { method, template, pattern: new RegExp(`^${source}$`) };
    })
    // Literal segments before parameters: /contacts/by-email/{email} is not /contacts/{id}.
    .sort((a, b) => a.template.split('{').length - b.template.split('{').length);
  known = { procedures: new Set([...Object.keys(procedures), ...ALIASES]), rest };
  return known;
}

function trpcRoute(names: string): string {
  let decoded: string;
  try {
    decoded = decodeURIComponent(names);
  } catch {
    return 'trpc:unknown';
  }
  const calls = decoded.split(',');
  if (calls.length > 1) return 'trpc:batch';
  return routes().procedures.has(decoded) ? `trpc:${decoded}` : 'trpc:unknown';
}

/** The route label of a request (its path without the query). */
export function routeLabel(method: string, pathname: string): string {
  if (FIXED.has(pathname)) return pathname;
  if (pathname.startsWith(TRPC_PREFIX)) return trpcRoute(pathname.slice(TRPC_PREFIX.length));
  if (pathname.startsWith(`${REST_BASE_PATH}/`)) {
    const candidates = routes().rest.filter((r) => r.pattern.test(pathname));
    return (candidates.find((r) => r.method === method) ?? candidates[0])?.template ?? `${REST_BASE_PATH}/*`;
  }
  if (pathname.startsWith('/api/auth/')) return '/api/auth/*';
  return 'next';
}

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** The method label: one of the methods served, or `other`. */
export function methodLabel(method: string | undefined): string {
  return method && METHODS.has(method) ? method : 'other';
}

/** The status class label: `2xx`, `4xx`, ... */
export function statusClass(status: number): string {
  return status >= 100 && status < 600 ? `${Math.floor(status / 100)}xx` : 'other';
}
