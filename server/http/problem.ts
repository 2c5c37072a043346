// Every /api/v1 error answer as one shape: RFC 9457 problem details
// (`application/problem+json`), made here, at the edge, from whatever produced the error
// (trpc-to-openapi's error body, a 413 from the body bound, a 400 for an undecodable
// address, a 429 refusal). docs/api.md ("Problem details") lists the types.

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** The documented problem types, relative URIs under /problems/ (docs/api.md). */
const PROBLEM_TYPES: Record<string, { slug: string; title: string; status: number }> = {
  BAD_REQUEST: { slug: 'invalid-request', title: 'The request is not valid', status: 400 },
  PARSE_ERROR: { slug: 'invalid-request', title: 'The request is not valid', status: 400 },
  UNAUTHORIZED: { slug: 'unauthorized', title: 'No valid API key', status: 401 },
  FORBIDDEN: { slug: 'forbidden', title: 'Not allowed for this key', status: 403 },
  NOT_FOUND: { slug: 'not-found', title: 'Not found', status: 404 },
  METHOD_NOT_SUPPORTED: { slug: 'method-not-allowed', title: 'Method not allowed', status: 405 },
  CONFLICT: { slug: 'conflict', title: 'Conflict with the current state', status: 409 },
  PRECONDITION_FAILED: { slug: 'precondition-failed', title: 'The current state does not allow this', status: 412 },
  PAYLOAD_TOO_LARGE: { slug: 'payload-too-large', title: 'Request body too large', status: 413 },
  UNSUPPORTED_MEDIA_TYPE: { slug: 'unsupported-media-type', title: 'Send JSON', status: 415 },
  UNPROCESSABLE_CONTENT: { slug: 'unprocessable', title: 'The request cannot be processed', status: 422 },
  TOO_MANY_REQUESTS: { slug: 'rate-limited', title: 'Too many requests', status: 429 },
  INTERNAL_SERVER_ERROR: { slug: 'internal-error', title: 'Internal error', status: 500 },
  BAD_GATEWAY: { slug: 'bad-gateway', title: 'An upstream service refused', status: 502 },
  SERVICE_UNAVAILABLE: { slug: 'unavailable', title: 'Try again later', status: 503 },
};

/** The idempotency problems have their own types (server/http/idempotency.ts). */
export const IDEMPOTENCY_PROBLEMS = {
  inProgress: { code: 'CONFLICT', slug: 'idempotency-in-progress', title: 'A request with this Idempotency-Key is still running', status: 409 },
  mismatch: { code: 'UNPROCESSABLE_CONTENT', slug: 'idempotency-key-reused', title: 'This Idempotency-Key was used for another request', status: 422 },
} as const;

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  /** The tRPC error code (BAD_REQUEST, CONFLICT, ...), as tRPC clients read it. */
  code: string;
  /** What won and the current state, for a 409 or 412 (docs/api.md, data.conflict). */
  conflict?: Record<string, unknown>;
  /** For a 400 from the input's schema: every issue with its full path. */
  issues?: { path: string; message: string }[];
}

function codeOfStatus(status: number): string {
  return Object.entries(PROBLEM_TYPES).find(([, t]) => t.status === status)?.[0] ?? (status >= 500 ? 'INTERNAL_SERVER_ERROR' : 'BAD_REQUEST');
}

export function problem(code: string, detail: string, extra: { status?: number; slug?: string; title?: string; conflict?: unknown; issues?: Problem['issues'] } = {}): Problem {
  const known = PROBLEM_TYPES[code] ?? PROBLEM_TYPES[codeOfStatus(extra.status ?? 500)]!;
  return {
    type: `/problems/${extra.slug ?? known.slug}`,
    title: extra.title ?? known.title,
    status: extra.status ?? known.status,
    detail,
    code,
    ...(extra.conflict && typeof extra.conflict === 'object' ? { conflict: extra.conflict as Record<string, unknown> } : {}),
    ...(extra.issues ? { issues: extra.issues } : {}),
  };
}

export function problemResponse(p: Problem, headers?: HeadersInit): Response {
  const h = new Headers(headers);
  h.set('content-type', PROBLEM_CONTENT_TYPE);
  return new Response(JSON.stringify(p), { status: p.status, headers: h });
}

interface ErrorBody {
  message?: unknown;
  code?: unknown;
  error?: { message?: unknown; code?: unknown };
  issues?: { path?: unknown[]; message?: unknown }[];
  data?: { code?: unknown; conflict?: unknown; zodError?: { issues?: { path: string; message: string }[] } | null };
}

/** The problem an error body says, whichever of the shapes the edge meets. */
function problemOf(status: number, body: ErrorBody | null): Problem {
  const code = [body?.data?.code, body?.code, body?.error?.code].find((c): c is string => typeof c === 'string') ?? codeOfStatus(status);
  const message = [body?.message, body?.error?.message].find((m): m is string => typeof m === 'string') ?? PROBLEM_TYPES[code]?.title ?? 'Error';
  const issues =
    body?.data?.zodError?.issues ??
    (Array.isArray(body?.issues) ? body.issues.map((i) => ({ path: (i.path ?? []).join('.'), message: String(i.message) })) : undefined);
  const detail = issues && issues.length > 0 ? `Input validation failed: ${issues.map((i) => `${i.path || '(body)'}: ${i.message}`).join('; ')}` : message;
  return problem(code, detail, { status, conflict: body?.data?.conflict, issues: code === 'BAD_REQUEST' || code === 'PARSE_ERROR' ? (issues ?? []) : undefined });
}

/** An /api/v1 answer with any error body turned into problem details; other answers unchanged. */
export async function asProblem(response: Response): Promise<Response> {
  if (response.status < 400 || response.headers.get('content-type')?.startsWith(PROBLEM_CONTENT_TYPE)) return response;
  const text = await response.text();
  let body: ErrorBody | null = null;
  try {
    body = JSON.parse(text) as ErrorBody;
  } catch {
    body = { message: text || undefined };
  }
  const headers = new Headers(response.headers);
  headers.delete('content-length');
  return problemResponse(problemOf(response.status, body), headers);
}
