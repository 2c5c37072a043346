import { Prisma } from '../db';
import { encodeCursor, type KeysetPosition } from './cursor';

// Keyset pages in both directions, for the console's lists. A list is ordered newest
// first on (at, id). "After" a position is the next (older) page; "before" it is the
// previous (newer) page, read in ascending order from the same index and reversed, so
// going back costs what going forward does and never needs OFFSET.

export type PageDirection = { after: KeysetPosition } | { before: KeysetPosition } | null;

/** The keyset condition and the order for one direction, on columns `at` and `id`. */
export function keysetClause(at: Prisma.Sql, id: Prisma.Sql, direction: PageDirection): { where: Prisma.Sql | null; order: Prisma.Sql } {
  if (direction && 'before' in direction) {
    return {
      where: Prisma.sql`(${at}, ${id}) > (${direction.before.at}::timestamptz, ${direction.before.id}::uuid)`,
      order: Prisma.sql`${at} ASC, ${id} ASC`,
    };
  }
  return {
    where: direction ? Prisma.sql`(${at}, ${id}) < (${direction.after.at}::timestamptz, ${direction.after.id}::uuid)` : null,
    order: Prisma.sql`${at} DESC, ${id} DESC`,
  };
}

export interface TwoWayPage<T> {
  items: T[];
  /** The cursor of the next (older) page, or null on the last page. */
  nextCursor: string | null;
  /** The cursor of the previous (newer) page, or null on the first page. */
  prevCursor: string | null;
}

/**
 * A page from rows fetched with LIMIT n + 1 in the direction's order: newest first on
 * return whichever way it was read.
 */
export function twoWayPage<T>(rows: T[], limit: number, direction: PageDirection, positionOf: (row: T) => KeysetPosition): TwoWayPage<T> {
  const more = rows.length > limit;
  if (direction && 'before' in direction) {
    const items = rows.slice(0, limit).reverse();
    const first = items[0];
    const last = items[items.length - 1];
    // We came from the page after this one, so it exists.
    return {
      items,
      prevCursor: more && first ? encodeCursor(positionOf(first)) : null,
      nextCursor: last ? encodeCursor(positionOf(last)) : encodeCursor(direction.before),
    };
  }
  const items = rows.slice(0, limit);
  const first = items[0];
  const last = items[items.length - 1];
  return {
    items,
    nextCursor: more && last ? encodeCursor(positionOf(last)) : null,
    prevCursor: direction && first ? encodeCursor(positionOf(first)) : direction ? encodeCursor(direction.after) : null,
  };
}

/** The direction of an input holding `cursor` (after) or `before`. */
export function directionOf(input: { cursor?: KeysetPosition | undefined; before?: KeysetPosition | undefined }): PageDirection {
  if (input.before) return { before: input.before };
  if (input.cursor) return { after: input.cursor };
  return null;
}
