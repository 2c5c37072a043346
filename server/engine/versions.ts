import type { ZodError } from 'zod';
import { transaction, type Db, type DbTx, type RawDb } from '../db';
import { writeAudit, type Acting } from './audit';
import { stepConfigSchemas } from '../common/workflow-definition';
import { publishableDefinition, type VersionDefinition } from '../common/version-definition';
import { diffDefinitions, diffSummary, type DefinitionDiff } from '../common/workflow-diff';

// Published versions and the draft (docs/versions.md). A version is written once, by
// insertVersion, and never changed. publishVersion is a compare-and-swap on the workflow's
// latestVersion: of two publishes based on the same version one wins, the other is told
// who published what, and writes nothing.

export interface NewVersion {
  workflowId: string;
  number: number;
  basedOn: number | null;
  publishedBy: string;
}

/** Store version `number` with its steps and transitions (inside the caller's transaction). */
export async function insertVersion(tx: RawDb, v: NewVersion, def: VersionDefinition): Promise<string> {
  const [version] = await tx.$queryRaw<{ id: string }[]>`
    -- insertVersion
    INSERT INTO "WorkflowVersion" ("workflowId", number, "basedOn", "publishedBy")
    VALUES (${v.workflowId}::uuid, ${v.number}, ${v.basedOn}::int, ${v.publishedBy})
    RETURNING id`;
  const versionId = version!.id;
  const configs = def.steps.map((s) => JSON.stringify(stepConfigSchemas[s.type].parse(s.config)));
  const steps = await tx.$queryRaw<{ id: string; key: string }[]>`
    -- insertVersion.steps
    INSERT INTO "WorkflowStep" ("workflowId", "versionId", key, type, name, config, "createdAt")
    SELECT ${v.workflowId}::uuid, ${versionId}::uuid, u.key, u.type::"StepType", u.name, u.config::jsonb,
           now() + u.n * interval '1 millisecond' -- the definition's order, as the console lists steps
      FROM unnest(${def.steps.map((s) => s.key)}::text[], ${def.steps.map((s) => s.type)}::text[],
                  ${def.steps.map((s) => s.name)}::text[], ${configs}::text[]) WITH ORDINALITY AS u(key, type, name, config, n)
    RETURNING id, key`;
  const ids = new Map(steps.map((s) => [s.key, s.id]));
  if (def.transitions.length > 0) {
    await tx.$executeRaw`
      -- insertVersion.transitions
      INSERT INTO "WorkflowTransition" ("workflowId", "versionId", "fromStepId", "toStepId", branch)
      SELECT ${v.workflowId}::uuid, ${versionId}::uuid, u."from", u."to", u.branch
        FROM unnest(${def.transitions.map((t) => ids.get(t.from)!)}::uuid[], ${def.transitions.map((t) => ids.get(t.to)!)}::uuid[],
                    ${def.transitions.map((t) => t.branch)}::text[]) AS u("from", "to", branch)`;
  }
  return versionId;
}

/** A stored version's definition, as the editor and the diff read it; null if there is no such version. */
export async function versionDefinitionOf(db: RawDb, workflowId: string, number: number): Promise<VersionDefinition | null> {
  const [row] = await db.$queryRaw<{ definition: VersionDefinition }[]>`
    -- versionDefinitionOf
    SELECT json_build_object(
             'steps', (SELECT coalesce(json_agg(json_build_object('key', s.key, 'type', s.type, 'name', s.name, 'config', s.config)
                                                ORDER BY s."createdAt", s.key), '[]')
                         FROM "WorkflowStep" s WHERE s."versionId" = v.id),
             'transitions', (SELECT coalesce(json_agg(json_build_object('from', f.key, 'to', t2.key, 'branch', t.branch)
                                                      ORDER BY f.key, t.branch NULLS FIRST), '[]')
                               FROM "WorkflowTransition" t
                               JOIN "WorkflowStep" f ON f.id = t."fromStepId"
                               JOIN "WorkflowStep" t2 ON t2.id = t."toStepId"
                              WHERE t."versionId" = v.id)) AS definition
      FROM "WorkflowVersion" v WHERE v."workflowId" = ${workflowId}::uuid AND v.number = ${number}`;
  return row?.definition ?? null;
}

export interface PublishInput {
  workflowId: string;
  basedOnVersion: number;
  definition: VersionDefinition;
}

export interface CurrentVersion {
  number: number;
  publishedBy: string;
  publishedAt: Date;
}

export type PublishResult =
  | { ok: true; version: number; diff: DefinitionDiff }
  | { ok: false; reason: 'WORKFLOW_NOT_FOUND' }
  | { ok: false; reason: 'INVALID'; error: ZodError }
  | { ok: false; reason: 'VERSION_CONFLICT'; current: CurrentVersion; diff: DefinitionDiff };

interface WorkflowHead {
  id: string;
  trigger: 'EVENT' | 'MANUAL';
  triggerEvent: string | null;
  latestVersion: number;
}

async function workflowHead(tx: RawDb, projectId: string, workflowId: string): Promise<WorkflowHead | null> {
  const [row] = await tx.$queryRaw<WorkflowHead[]>`
    -- workflowHead
    SELECT id, trigger::text AS trigger, "triggerEvent", "latestVersion" FROM "Workflow"
     WHERE id = ${workflowId}::uuid AND "projectId" = ${projectId}::uuid`;
  return row ?? null;
}

async function currentVersion(tx: RawDb, workflowId: string): Promise<CurrentVersion> {
  const [row] = await tx.$queryRaw<CurrentVersion[]>`
    -- currentVersion
    SELECT v.number, v."publishedBy", v."publishedAt" FROM "WorkflowVersion" v JOIN "Workflow" w ON w.id = v."workflowId"
     WHERE w.id = ${workflowId}::uuid AND v.number = w."latestVersion"`;
  return row!;
}

/**
 * workflows.publish: validate the definition with the workflow's trigger, then take the
 * next number by compare-and-swap on latestVersion and store it. A stale basedOnVersion
 * writes nothing but the REJECTED audit entry, and answers with the version that is
 * current and the diff from the one the caller started from.
 */
export function publishVersion(db: Db, by: Acting, input: PublishInput): Promise<PublishResult> {
  return transaction(db, 'ENGINE', async (tx: DbTx): Promise<PublishResult> => {
    const head = await workflowHead(tx, by.projectId, input.workflowId);
    if (!head) return { ok: false, reason: 'WORKFLOW_NOT_FOUND' };
    const parsed = publishableDefinition(head).safeParse(input.definition);
    if (!parsed.success) return { ok: false, reason: 'INVALID', error: parsed.error };
    const definition = parsed.data;

    // The guard: only the publish based on the latest version moves it. A concurrent one
    // waits for this row, then finds latestVersion moved and updates nothing.
    const [won] = await tx.$queryRaw<{ latestVersion: number }[]>`
      -- publishVersion.claim
      UPDATE "Workflow" SET "latestVersion" = "latestVersion" + 1, "updatedAt" = now()
       WHERE id = ${head.id}::uuid AND "latestVersion" = ${input.basedOnVersion}
      RETURNING "latestVersion"`;
    const base = (await versionDefinitionOf(tx, head.id, input.basedOnVersion)) ?? { steps: [], transitions: [] };
    if (!won) {
      const current = await currentVersion(tx, head.id);
      const latest = (await versionDefinitionOf(tx, head.id, current.number))!;
      const diff = diffDefinitions(base, latest);
      await writeAudit(tx, {
        ...by,
        action: 'workflows.publish',
        targetType: 'workflow',
        targetId: head.id,
        outcome: 'REJECTED',
        after: { reason: 'VERSION_CONFLICT', basedOnVersion: input.basedOnVersion, currentVersion: current.number, currentPublishedBy: current.publishedBy },
      });
      return { ok: false, reason: 'VERSION_CONFLICT', current, diff };
    }
    await insertVersion(tx, { workflowId: head.id, number: won.latestVersion, basedOn: input.basedOnVersion, publishedBy: by.actor }, definition);
    await tx.$executeRaw`
      -- publishVersion.clearDraft
      DELETE FROM "WorkflowDraft" WHERE "workflowId" = ${head.id}::uuid`;
    const diff = diffDefinitions(base, definition);
    await writeAudit(tx, {
      ...by,
      action: 'workflows.publish',
      targetType: 'workflow',
      targetId: head.id,
      outcome: 'APPLIED',
      before: { version: input.basedOnVersion },
      after: { version: won.latestVersion, summary: diffSummary(diff), diff },
    });
    return { ok: true, version: won.latestVersion, diff };
  });
}

export type DraftResult = { ok: true; savedAt: Date } | { ok: false; reason: 'WORKFLOW_NOT_FOUND' };

/** workflows.saveDraft: keep the editor's work; it never touches a version or an execution (not audited: it changes nothing live). */
export function saveDraft(db: Db, by: Acting, input: PublishInput): Promise<DraftResult> {
  return transaction(db, 'ENGINE', async (tx): Promise<DraftResult> => {
    const head = await workflowHead(tx, by.projectId, input.workflowId);
    if (!head) return { ok: false, reason: 'WORKFLOW_NOT_FOUND' };
    const [row] = await tx.$queryRaw<{ updatedAt: Date }[]>`
      -- saveDraft
      INSERT INTO "WorkflowDraft" ("workflowId", definition, "basedOnVersion", "updatedBy", "updatedAt")
      VALUES (${head.id}::uuid, ${JSON.stringify(input.definition)}::jsonb, ${input.basedOnVersion}, ${by.actor}, now())
      ON CONFLICT ("workflowId") DO UPDATE
        SET definition = EXCLUDED.definition, "basedOnVersion" = EXCLUDED."basedOnVersion",
            "updatedBy" = EXCLUDED."updatedBy", "updatedAt" = EXCLUDED."updatedAt"
      RETURNING "updatedAt"`;
    return { ok: true, savedAt: row!.updatedAt };
  });
}

export type DiscardResult = { ok: true; discarded: boolean } | { ok: false; reason: 'WORKFLOW_NOT_FOUND' };

/** workflows.discardDraft: drop the draft, if there is one, of a workflow of this project. */
export function discardDraft(db: Db, by: Acting, workflowId: string): Promise<DiscardResult> {
  return transaction(db, 'ENGINE', async (tx): Promise<DiscardResult> => {
    const head = await workflowHead(tx, by.projectId, workflowId);
    if (!head) return { ok: false, reason: 'WORKFLOW_NOT_FOUND' };
    const n = await tx.$executeRaw`
      -- discardDraft
      DELETE FROM "WorkflowDraft" WHERE "workflowId" = ${head.id}::uuid`;
    return { ok: true, discarded: n > 0 };
  });
}

