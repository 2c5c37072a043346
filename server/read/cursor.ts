// A keyset position and its opaque encoding: a page ends at a (timestamp, id) position
// and the next page starts strictly after it. Defined here, below the routers, so the
// read model and the routers' input schemas (server/trpc/keyset.ts) share one encoding.

export interface KeysetPosition {
  at: Date;
  id: string;
}

const GUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export function encodeCursor(position: KeysetPosition): string {
  return Buffer.from(`${position.at.toISOString()}|${position.id}`, 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string): KeysetPosition | null {
  const [iso, id, extra] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  if (!iso || !id || extra !== undefined || !GUID.test(id)) return null;
  const at = new Date(iso);
  if (Number.isNaN(at.getTime()) || at.toISOString() !== iso) return null;
  return { at, id };
}
