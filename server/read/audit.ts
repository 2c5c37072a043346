import { Prisma, type DbTx } from '../db';
import { actorLabels } from './actors';
import type { KeysetPosition } from './cursor';
import { directionOf, keysetClause, twoWayPage, type TwoWayPage } from './keyset';

// The console's read model of the audit log: newest first, keyset-paginated on (at, id).
// Each filter has its index: (projectId; at, id), (projectId, targetId; at),
// (projectId, actor; at), (projectId, action; at), (projectId, outcome; at, id).

export const AUDIT_OUTCOMES = ['APPLIED', 'LOST', 'REJECTED', 'FAILED'] as const;
export type AuditOutcomeName = (typeof AUDIT_OUTCOMES)[number];

/**
 * Entries about the project's people and keys (who was added with which role, key names
 * and prefixes) are the owners' business: only owners read them.
 */
export const OWNER_ONLY_ACTION_PREFIXES = ['members.', 'apiKeys.', 'invitations.'] as const;

export interface AuditFilter {
  projectId: string;
  /** The reader is an owner: also the entries about members and API keys. */
  owner: boolean;
  targetId?: string | undefined;
  actor?: string | undefined;
  action?: string | undefined;
  outcome?: AuditOutcomeName[] | undefined;
  since?: Date | undefined;
  until?: Date | undefined;
  cursor?: KeysetPosition | undefined;
  before?: KeysetPosition | undefined;
  limit: number;
}

export interface AuditRow {
  id: string;
  actor: string;
  action: string;
  targetType: string;
  targetId: string;
  reason: string | null;
  before: unknown;
  after: unknown;
  outcome: string;
  at: Date;
}

export function auditListQuery(f: AuditFilter): Prisma.Sql {
  const conditions: Prisma.Sql[] = [Prisma.sql`"projectId" = ${f.projectId}::uuid`];
  if (!f.owner) {
    for (const prefix of OWNER_ONLY_ACTION_PREFIXES) conditions.push(Prisma.sql`action NOT LIKE ${`${prefix}%`}`);
  }
  if (f.targetId) conditions.push(Prisma.sql`"targetId" = ${f.targetId}`);
  if (f.actor) conditions.push(Prisma.sql`actor = ${f.actor}`);
  if (f.action) conditions.push(Prisma.sql`action = ${f.action}`);
  if (f.outcome?.length) conditions.push(Prisma.sql`outcome = ANY(${f.outcome}::"AuditOutcome"[])`);
  if (f.since) conditions.push(Prisma.sql`at >= ${f.since}::timestamptz`);
  if (f.until) conditions.push(Prisma.sql`at < ${f.until}::timestamptz`);
  const keyset = keysetClause(Prisma.sql`at`, Prisma.sql`id`, directionOf(f));
  if (keyset.where) conditions.push(keyset.where);
  return Prisma.sql`
    -- listAudit
    SELECT id, actor, action, "targetType", "targetId", reason, before, after, outcome::text AS outcome, at
      FROM "AuditEntry"
     WHERE ${Prisma.join(conditions, ' AND ')}
     ORDER BY ${keyset.order}
     LIMIT ${f.limit + 1}::int`;
}

export async function listAudit(db: DbTx, f: AuditFilter): Promise<TwoWayPage<AuditRow & { actorLabel: string | null }>> {
  const rows = await db.$queryRaw<AuditRow[]>(auditListQuery(f));
  const page = twoWayPage(rows, f.limit, directionOf(f), (r) => ({ at: r.at, id: r.id }));
  const labels = await actorLabels(db, f.projectId, page.items.map((r) => r.actor));
  return { ...page, items: page.items.map((r) => ({ ...r, actorLabel: labels.get(r.actor) ?? null })) };
}
