import { z } from 'zod';

// Keyset pagination: a page ends at a (timestamp, id) position and the next page starts
// strictly after it, so a list stays an index range scan however deep the reader goes
// and rows inserted meanwhile never shift a page (unlike OFFSET). The position travels
// as an opaque string: clients pass back what they were given.

import { decodeCursor, encodeCursor, type KeysetPosition } from '../read/cursor';

export { decodeCursor, encodeCursor, type KeysetPosition };

/** An input field holding a cursor from a previous page; decoded, or BAD_REQUEST. */
export const cursor = z
  .string()
  .max(200)
  .transform((value, ctx) => {
    const position = decodeCursor(value);
    if (!position) {
      ctx.addIssue({ code: 'custom', message: 'not a cursor this API returned' });
      return z.NEVER;
    }
    return position;
  });

/** The page and the cursor of the next one, from rows fetched with LIMIT n + 1. */
export function page<T>(rows: T[], limit: number, positionOf: (row: T) => KeysetPosition): { items: T[]; nextCursor: string | null } {
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  return { items, nextCursor: rows.length > limit && last ? encodeCursor(positionOf(last)) : null };
}
