import { openApiDocument } from '@/server/http/openapi';

export const dynamic = 'force-dynamic';

/** The OpenAPI document of the /api/v1 endpoints. */
export function GET(): Response {
  return Response.json(openApiDocument());
}
