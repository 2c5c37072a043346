import { z } from 'zod';

// What the procedures served under /api/v1 (meta.openapi) share: the base path, the
// `next` link of a list, and the output building blocks their document is written from.

export const REST_BASE_PATH = '/api/v1';

/** A time in an answer: a Date here, an ISO 8601 string once it is JSON. */
export const timestamp = z.date().meta({ type: 'string', format: 'date-time', example: '2026-12-07T09:30:00.000Z' });

/** Any JSON object (a contact's data, an execution's context). */
export const anyObject = z.record(z.string(), z.unknown()).meta({ example: { plan: 'pro', firstName: 'Ada' } });

export const idOutput = z.string().meta({ format: 'uuid', example: '7c9e6679-7425-40de-944b-e07fc1f90ae7' });

/**
 * A list's page: `items`, and `next`, the full relative URL of the next page (the same
 * filters plus `cursor=`), or null on the last.
 */
export function pageOutput<T extends z.ZodType>(item: T) {
  return z.object({
    items: z.array(item),
    next: z.string().nullable().meta({ description: 'The next page: a relative URL to GET as it is, or null on the last page.', example: '/api/v1/contacts?limit=50&cursor=MjAyNi0xMi0wN1QwOTozMDowMC4wMDBafDdjOWU2Njc5' }),
  });
}

/** The `next` link of a page: `path` with the filters the caller gave and the cursor after the page's last row. */
export function nextLink(path: string, filters: Record<string, string | number | boolean | readonly string[] | undefined | null>, nextCursor: string | null): string | null {
  if (nextCursor === null) return null;
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(filters)) {
    if (value === undefined || value === null) continue;
    if (Array.isArray(value)) for (const v of value) query.append(key, v);
    else query.set(key, String(value));
  }
  query.set('cursor', nextCursor);
  return `${REST_BASE_PATH}${path}?${query.toString()}`;
}

/**
 * A read model's answer as its REST output schema types it. The read model's own types are
 * narrower in places (string where the document says which values) or lack an index
 * signature the loose schemas have; the procedure's output parser checks the value at run
 * time, so this only tells the compiler what that parser will check.
 */
export function asOutput<T extends z.ZodType>(_schema: T, value: unknown): z.input<T> {
  return value as z.input<T>;
}
