import { Prisma, type RawDb } from '../db';
import { STUCK_REASONS, type StuckReason } from '../common/stuck-reasons';
import { itemError, itemStep, union, type StuckScope } from './predicates';

// Grouping by cause: an operator repairs an incident, not ten thousand rows one by one.
// A group is (reason, workflow, step, normalised error): the same failure with different
// numbers, ids or quoted values in its message ("timeout after 3012 ms", "timeout after
// 5000 ms") is one cause. Grouping and bulk selection (list.ts) read the same two
// expressions (predicates.ts's itemStep and itemError) over the same predicates, so a
// group's count is exactly what a bulk repair of it selects.

/**
 * An error text with what varies between occurrences of one cause replaced: uuids by
 * <uuid>, quoted values by "…" (a quote opening after a letter is an apostrophe and
 * stays; a quoted key, followed by a colon, as in a JSON error, stays), numbers by <n>;
 * blanks squeezed, at most 300 characters. NULL stays NULL.
 */
export function normalisedError(text: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`left(btrim(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(
      ${text},
      '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}', '<uuid>', 'g'),
      '(^|[^[:alnum:]])"[^"]*"(?![[:space:]]*:)', '\\1"…"', 'g'),
      '(^|[^[:alnum:]])''[^'']*''(?![[:space:]]*:)', '\\1''…''', 'g'),
      '[0-9]+([.,][0-9]+)*', '<n>', 'g'),
      '[[:space:]]+', ' ', 'g')), 300)`;
}

/**
 * One group of stuck items, or part of one: undefined means any; null means "none" (an
 * event's group has no step; a wait's no error).
 */
export interface StuckGroupFilter {
  stepId?: string | null;
  /** normalisedError() of the items' error text, as stuckGroups reports it. */
  errorPattern?: string | null;
}

export function groupConditions(f: StuckGroupFilter): Prisma.Sql[] {
  const conditions: Prisma.Sql[] = [];
  if (f.stepId !== undefined) {
    conditions.push(f.stepId === null ? Prisma.sql`${itemStep} IS NULL` : Prisma.sql`${itemStep} = ${f.stepId}`);
  }
  if (f.errorPattern !== undefined) {
    const pattern = normalisedError(itemError);
    conditions.push(f.errorPattern === null ? Prisma.sql`${pattern} IS NULL` : Prisma.sql`${pattern} = ${f.errorPattern}`);
  }
  return conditions;
}

export interface StuckGroupSample {
  itemId: string;
  executionId: string | null;
  eventId: string | null;
  contactId: string | null;
  contactEmail: string | null;
  /** The sample's error text as it is (not normalised). */
  error: string | null;
  /** An event's name. */
  name: string | null;
}

export interface StuckGroup {
  reason: StuckReason;
  workflowId: string | null;
  workflowName: string | null;
  stepId: string | null;
  stepName: string | null;
  stepType: string | null;
  /** The error text with its varying parts replaced (null: the items carry no error). */
  errorPattern: string | null;
  count: number;
  oldest: Date;
  newest: Date;
  /** The oldest item of the group. */
  sample: StuckGroupSample;
  /** Of a LEASE_EXPIRED group: the most attempts any of its steps had (a poison step is left to operators). */
  maxAttempt: number | null;
}

/** The grouping query (exported for its EXPLAIN test): one row per cause, biggest first. */
export function stuckGroupsQuery(s: StuckScope & { reasons?: readonly StuckReason[] }): Prisma.Sql {
  const reasons = s.reasons?.length ? s.reasons : STUCK_REASONS;
  return Prisma.sql`
    -- stuckGroups
    WITH g AS (
      SELECT x.reason, x."workflowId", ${itemStep} AS "stepId", ${normalisedError(itemError)} AS "errorPattern",
             count(*)::int AS count, min(x.since) AS oldest, max(x.since) AS newest,
             max((x.detail->>'attempt')::int) AS "maxAttempt",
             (array_agg(jsonb_build_object('itemId', x."itemId", 'executionId', x."executionId", 'eventId', x."eventId",
                                           'contactId', x."contactId", 'error', ${itemError}, 'name', x.detail->>'name')
                        ORDER BY x.since, x."itemId"))[1] AS sample
        FROM (${union(reasons, s)}) x
       GROUP BY 1, 2, 3, 4
    )
    SELECT g.reason, g."workflowId", w.name AS "workflowName", g."stepId", st.name AS "stepName", st.type::text AS "stepType",
           g."errorPattern", g.count, g.oldest, g.newest, g."maxAttempt",
           g.sample || jsonb_build_object('contactEmail', c.email) AS sample
      FROM g
      LEFT JOIN "Workflow" w ON w.id = g."workflowId"
      LEFT JOIN "WorkflowStep" st ON st.id = g."stepId"::uuid
      LEFT JOIN "Contact" c ON c.id = (g.sample->>'contactId')::uuid
     ORDER BY g.count DESC, g.oldest, g.reason, g."stepId", g."errorPattern"
     LIMIT 500`;
}

/** Every stuck item grouped by cause (at most 500 groups, biggest first). */
export async function stuckGroups(db: RawDb, s: StuckScope & { reasons?: readonly StuckReason[] }): Promise<StuckGroup[]> {
  return db.$queryRaw<StuckGroup[]>(stuckGroupsQuery(s));
}
