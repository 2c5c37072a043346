import type { ZodError } from 'zod';
import type { DbTx } from '../db';
import { publishableDefinition, type VersionDefinition } from '../common/version-definition';
import { diffDefinitions, type DefinitionDiff } from '../common/workflow-diff';
import { versionDefinitionOf } from '../engine/versions';
import { actorLabel, actorLabels } from './actors';

// A workflow's published versions, and what publishing a definition would change: the
// steps added, removed and changed, and how many executions stand at each removed or
// changed step right now (those are the ones an operator may want to move, MIGRATE).

export interface VersionSummary {
  number: number;
  basedOn: number | null;
  publishedBy: string;
  publishedAt: Date;
  stepCount: number;
  /** Executions RUNNING or WAITING on this version. */
  active: number;
}

/** Newest first; null when the project has no such workflow. */
export async function listVersions(db: DbTx, projectId: string, workflowId: string): Promise<{ latestVersion: number; items: VersionSummary[] } | null> {
  const [workflow] = await db.$queryRaw<{ latestVersion: number }[]>`
    -- listVersions.workflow
    SELECT "latestVersion" FROM "Workflow" WHERE id = ${workflowId}::uuid AND "projectId" = ${projectId}::uuid`;
  if (!workflow) return null;
  const rows = await db.$queryRaw<(Omit<VersionSummary, 'publishedBy'> & { publishedBy: string })[]>`
    -- listVersions
    SELECT v.number, v."basedOn", v."publishedBy", v."publishedAt",
           (SELECT count(*)::int FROM "WorkflowStep" s WHERE s."versionId" = v.id) AS "stepCount",
           (SELECT count(*)::int FROM "WorkflowExecution" e
             WHERE e."workflowVersionId" = v.id AND e.status IN ('RUNNING', 'WAITING')) AS active
      FROM "WorkflowVersion" v
     WHERE v."workflowId" = ${workflowId}::uuid
     ORDER BY v.number DESC`;
  const labels = await actorLabels(db, projectId, rows.map((r) => r.publishedBy));
  return { latestVersion: workflow.latestVersion, items: rows.map((r) => ({ ...r, publishedBy: actorLabel(labels, r.publishedBy) })) };
}

/** Active executions per step key of a workflow (any version), for the keys asked. */
export async function activeAtKeys(db: DbTx, workflowId: string, keys: string[]): Promise<Map<string, { total: number; byVersion: Record<number, number> }>> {
  const out = new Map<string, { total: number; byVersion: Record<number, number> }>();
  if (keys.length === 0) return out;
  const rows = await db.$queryRaw<{ key: string; number: number; n: number }[]>`
    -- activeAtKeys
    SELECT s.key, v.number, count(*)::int AS n
      FROM "WorkflowExecution" e
      JOIN "WorkflowStep" s ON s.id = e."currentStepId"
      JOIN "WorkflowVersion" v ON v.id = e."workflowVersionId"
     WHERE e."workflowId" = ${workflowId}::uuid AND e.status IN ('RUNNING', 'WAITING') AND s.key = ANY(${keys}::text[])
     GROUP BY s.key, v.number`;
  for (const row of rows) {
    const entry = out.get(row.key) ?? { total: 0, byVersion: {} };
    entry.total += row.n;
    entry.byVersion[row.number] = row.n;
    out.set(row.key, entry);
  }
  return out;
}

export type CountedDiff = Omit<DefinitionDiff, 'removed' | 'changed'> & {
  removed: (DefinitionDiff['removed'][number] & { active: number; activeByVersion: Record<number, number> })[];
  changed: (DefinitionDiff['changed'][number] & { active: number; activeByVersion: Record<number, number> })[];
};

/** A diff with the executions standing at each removed and changed step right now. */
export async function countDiff(db: DbTx, workflowId: string, diff: DefinitionDiff): Promise<CountedDiff> {
  const active = await activeAtKeys(db, workflowId, [...diff.removed, ...diff.changed].map((s) => s.key));
  const count = <T extends { key: string }>(s: T) => ({ ...s, active: active.get(s.key)?.total ?? 0, activeByVersion: active.get(s.key)?.byVersion ?? {} });
  return { ...diff, removed: diff.removed.map(count), changed: diff.changed.map(count) };
}

export type PublishPreview =
  | { ok: true; latestVersion: number; basedOnVersion: number; diff: CountedDiff; activeAtRemoved: number; activeAtChanged: number }
  | { ok: false; reason: 'WORKFLOW_NOT_FOUND' | 'VERSION_NOT_FOUND' }
  | { ok: false; reason: 'INVALID'; error: ZodError };

/** workflows.publishPreview: what publishing `definition` over `basedOnVersion` would change; writes nothing. */
export async function publishPreview(
  db: DbTx,
  projectId: string,
  input: { workflowId: string; basedOnVersion: number; definition: VersionDefinition },
): Promise<PublishPreview> {
  const [workflow] = await db.$queryRaw<{ trigger: 'EVENT' | 'MANUAL'; triggerEvent: string | null; latestVersion: number }[]>`
    -- publishPreview.workflow
    SELECT trigger::text AS trigger, "triggerEvent", "latestVersion" FROM "Workflow"
     WHERE id = ${input.workflowId}::uuid AND "projectId" = ${projectId}::uuid`;
  if (!workflow) return { ok: false, reason: 'WORKFLOW_NOT_FOUND' };
  const parsed = publishableDefinition(workflow).safeParse(input.definition);
  if (!parsed.success) return { ok: false, reason: 'INVALID', error: parsed.error };
  const base = await versionDefinitionOf(db, input.workflowId, input.basedOnVersion);
  if (!base) return { ok: false, reason: 'VERSION_NOT_FOUND' };
  const diff = await countDiff(db, input.workflowId, diffDefinitions(base, parsed.data));
  return {
    ok: true,
    latestVersion: workflow.latestVersion,
    basedOnVersion: input.basedOnVersion,
    diff,
    activeAtRemoved: diff.removed.reduce((n, s) => n + s.active, 0),
    activeAtChanged: diff.changed.reduce((n, s) => n + s.active, 0),
  };
}
