import { generateOpenApiDocument, type OpenAPIObject } from 'trpc-to-openapi';
import { appRouter } from '../trpc/root';
import { REST_BASE_PATH } from '../trpc/rest';
import { IDEMPOTENCY_HEADER, IDEMPOTENCY_KEY_MAX } from './idempotency';
import { PROBLEM_CONTENT_TYPE } from './problem';

// The REST face of the API for integrations: procedures with `meta.openapi` are also plain
// JSON endpoints under /api/v1, served by the same procedures, roles and audit as tRPC.
// Authentication is the same too: `Authorization: Bearer <api key>`, read by createApiContext.
// trpc-to-openapi writes the document from the procedures' zod schemas (so it cannot drift
// from what they accept); what it cannot say is added here: the one Problem schema every
// error answer uses, the Idempotency-Key header of every POST, the rate limit's 429.

export { REST_BASE_PATH };

type SchemaObject = NonNullable<NonNullable<OpenAPIObject['components']>['schemas']>[string];

const PROBLEM_SCHEMA: SchemaObject = {
  type: 'object',
  description: 'An error answer (RFC 9457 problem details), `application/problem+json`. The types are listed in docs/api.md ("Problem details").',
  properties: {
    type: { type: 'string', description: 'A relative URI naming the kind of problem, e.g. /problems/conflict.', example: '/problems/conflict' },
    title: { type: 'string', description: 'A short, stable summary of the type.', example: 'Conflict with the current state' },
    status: { type: 'integer', description: 'The HTTP status code.', example: 409 },
    detail: { type: 'string', description: 'What went wrong with this request, for a person to read.', example: 'The contact already has an active execution of this workflow.' },
    code: { type: 'string', description: 'The tRPC error code (BAD_REQUEST, UNAUTHORIZED, FORBIDDEN, NOT_FOUND, CONFLICT, PRECONDITION_FAILED, PAYLOAD_TOO_LARGE, UNPROCESSABLE_CONTENT, TOO_MANY_REQUESTS, ...).', example: 'CONFLICT' },
    conflict: {
      type: 'object',
      description: 'For 409 and 412: what won and the current state; always has a `reason` (ACTIVE_EXECUTION, REENTRY_BLOCKED, CONTACT_CHANGED, STALE_VERSION, WORKFLOW_DISABLED, NOT_ALLOWED, ...).',
      properties: { reason: { type: 'string' } },
      required: ['reason'],
      additionalProperties: true,
      example: { reason: 'ACTIVE_EXECUTION', executionId: '7c9e6679-7425-40de-944b-e07fc1f90ae7' },
    },
    issues: {
      type: 'array',
      description: 'For 400 from the input schema: every issue with its full path (`contacts.3.email`).',
      items: { type: 'object', properties: { path: { type: 'string' }, message: { type: 'string' } }, required: ['path', 'message'] },
    },
  },
  required: ['type', 'title', 'status', 'detail', 'code'],
};

const STATUS_DESCRIPTIONS: Record<string, string> = {
  '400': 'Invalid input (`issues` names every field) or a malformed request',
  '401': 'No valid API key',
  '403': 'The key’s role is too small, or x-waypost-project names another project',
  '404': 'No such row in the key’s project',
  '409': 'A lost compare-and-swap (`conflict` says what won), or a request with this Idempotency-Key still in flight',
  '412': 'The current state does not allow the action (`conflict.reason`)',
  '413': 'The body is over its bound',
  '422': 'The Idempotency-Key was used for another request (method, path or body)',
  '429': 'Over a rate limit; see Retry-After',
};

const TAGS = [
  { name: 'contacts', description: 'People, by email; their data; erasure.' },
  { name: 'events', description: 'What happened to a contact: starts workflows and resolves waits.' },
  { name: 'enrollments', description: 'Putting contacts into workflows.' },
  { name: 'executions', description: 'A contact’s trip through a workflow.' },
  { name: 'workflows', description: 'The journeys and their published versions.' },
  { name: 'webhooks', description: 'Endpoints that receive signed webhooks, and their delivery logs (an OWNER key).' },
];

type Operation = { parameters?: unknown[]; responses?: Record<string, unknown>; requestBody?: unknown };

function problemResponse(status: string) {
  return {
    description: STATUS_DESCRIPTIONS[status] ?? 'Error',
    content: { [PROBLEM_CONTENT_TYPE]: { schema: { $ref: '#/components/schemas/Problem' } } },
  };
}

/** The generated document with every error answer as the one Problem, and each POST's Idempotency-Key. */
export function withRestConventions(doc: OpenAPIObject): OpenAPIObject {
  const schemas = Object.fromEntries(Object.entries(doc.components?.schemas ?? {}).filter(([name]) => !name.startsWith('error.')));
  for (const item of Object.values(doc.paths ?? {})) {
    for (const [method, op] of Object.entries(item as Record<string, Operation>)) {
      const responses = op.responses ?? {};
      const extra = method === 'post' ? ['409', '413', '422', '429'] : ['429'];
      for (const status of [...Object.keys(responses).filter((s) => Number(s) >= 400), ...extra]) responses[status] = problemResponse(status);
      op.responses = Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b)));
      if (method === 'post') {
        op.parameters = [
          ...(op.parameters ?? []),
          {
            name: IDEMPOTENCY_HEADER,
            in: 'header',
            required: false,
            description:
              'Makes a retry safe: within 24 hours, the same key with the same method, path and body answers the first answer and writes nothing; with another body, 422. While the first is still running, 409 (`/problems/idempotency-in-progress`).',
            schema: { type: 'string', minLength: 1, maxLength: IDEMPOTENCY_KEY_MAX },
            example: 'order-1042-enroll',
          },
        ];
      }
    }
  }
  return {
    ...doc,
    tags: TAGS,
    info: {
      ...doc.info,
      contact: { name: 'Waypost' },
      // package.json is private and the repository grants no license: say so, not an open one.
      license: { name: 'Proprietary (no license granted)', identifier: 'LicenseRef-Proprietary' },
    },
    components: { ...doc.components, schemas: { ...schemas, Problem: PROBLEM_SCHEMA } },
  };
}

let cached: OpenAPIObject | undefined;

/**
 * The OpenAPI 3 document of the /api/v1 endpoints (built once per process). Its server
 * URL is relative, so it is right behind any host name or proxy the document is read through.
 */
export function openApiDocument(): OpenAPIObject {
  cached ??= withRestConventions(
    generateOpenApiDocument(appRouter, {
      title: 'Waypost API',
      version: '1.0.0',
      description:
        'Contacts, events, enrollments, executions, workflows and webhook endpoints for your backend. Authenticate with `Authorization: Bearer <api key>`: reads need a VIEWER key, contacts, events and enrollments a MARKETER key, cancelling an execution an OPERATOR key, webhook endpoints an OWNER key. Every error is `application/problem+json` (the Problem schema). Lists page with `next`, the full relative URL of the next page (null on the last). Every POST takes an `Idempotency-Key` header.',
      baseUrl: REST_BASE_PATH,
      tags: TAGS.map((t) => t.name),
    }),
  );
  return cached;
}
