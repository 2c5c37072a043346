import { generateOpenApiDocument } from 'trpc-to-openapi';
import { appRouter } from '../trpc/root';

// The REST face of the API for integrations: procedures with `meta.openapi` (today
// enrollments.enroll, events.track and webhooks.*) are also plain JSON endpoints under /api/v1, served
// by the same procedures, roles and audit as tRPC. Authentication is the same too:
// `Authorization: Bearer <api key>`, read by createApiContext.

export const REST_BASE_PATH = '/api/v1';

let cached: ReturnType<typeof generateOpenApiDocument> | undefined;

/**
 * The OpenAPI 3 document of the /api/v1 endpoints (built once per process). Its server
 * URL is relative, so it is right behind any host name or proxy the document is read through.
 */
export function openApiDocument() {
  cached ??= generateOpenApiDocument(appRouter, {
    title: 'Waypost API',
    version: '1.0.0',
    description:
      'Enroll contacts and track events from your backend (a MARKETER key or above), and manage webhook endpoints (an OWNER key). Authenticate with `Authorization: Bearer <api key>`. Errors carry `code` and, for CONFLICT, `data.conflict` saying what won.',
    baseUrl: REST_BASE_PATH,
    tags: ['enrollments', 'events', 'webhooks'],
  });
  return cached;
}
