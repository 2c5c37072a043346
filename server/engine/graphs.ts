import type { RawDb } from '../db';
import { processSingleton } from '../process-registry';
import type { StepNode, WorkflowGraph } from './workflow-graph';

// A version's graph, as workers and repairs read it. A published version never changes
// (docs/versions.md), so a process may keep its graph: the worker reads a step's config
// and transitions from memory. Only the workflow's own flags (enabled, allowReentry) and
// its latest version number move, so an entry lives 5 s.

/** Graphs read in the last 5 s, by version id, once per process (server/process-registry.ts). */
const cache = processSingleton('engine.workflowGraphs', () => new Map<string, WorkflowGraph>());

type GraphRow = Pick<
  WorkflowGraph,
  'id' | 'projectId' | 'name' | 'enabled' | 'trigger' | 'triggerEvent' | 'allowReentry' | 'versionId' | 'versionNumber' | 'latestVersion'
> & {
  steps: (Omit<StepNode, 'config'> & { config: unknown })[];
  transitions: { fromStepId: string; toStepId: string; branch: string | null }[];
};

/** The graph of one published version; throws if the version does not exist. */
export async function loadVersionGraph(db: RawDb, versionId: string): Promise<WorkflowGraph> {
  const hit = cache.get(versionId);
  if (hit) return hit;
  // One raw statement (not a Prisma model query): a worker's engine client sends it as a
  // prepared statement like its claims, so no Prisma query runs on a worker's hot path.
  const [wf] = await db.$queryRaw<GraphRow[]>`
    -- loadVersionGraph
    SELECT w.id, w."projectId", w.name, w.enabled, w.trigger::text AS trigger, w."triggerEvent", w."allowReentry",
           v.id AS "versionId", v.number AS "versionNumber", w."latestVersion",
           (SELECT coalesce(json_agg(json_build_object('id', s.id, 'key', s.key, 'type', s.type, 'name', s.name, 'config', s.config)), '[]')
              FROM "WorkflowStep" s WHERE s."versionId" = v.id) AS steps,
           (SELECT coalesce(json_agg(json_build_object('fromStepId', t."fromStepId", 'toStepId', t."toStepId", 'branch', t.branch)), '[]')
              FROM "WorkflowTransition" t WHERE t."versionId" = v.id) AS transitions
      FROM "WorkflowVersion" v JOIN "Workflow" w ON w.id = v."workflowId"
     WHERE v.id = ${versionId}::uuid`;
  if (!wf) throw new Error(`workflow version ${versionId} not found`);
  const trigger = wf.steps.find((s) => s.type === 'TRIGGER');
  if (!trigger) throw new Error(`workflow version ${versionId} has no TRIGGER step`);
  const graph: WorkflowGraph = {
    id: wf.id,
    projectId: wf.projectId,
    name: wf.name,
    enabled: wf.enabled,
    trigger: wf.trigger,
    triggerEvent: wf.triggerEvent,
    allowReentry: wf.allowReentry,
    versionId: wf.versionId,
    versionNumber: wf.versionNumber,
    latestVersion: wf.latestVersion,
    triggerStepId: trigger.id,
    steps: new Map(
      wf.steps.map((s) => [
        s.id,
        { id: s.id, key: s.key, type: s.type, name: s.name, config: (s.config ?? {}) as Record<string, unknown> },
      ]),
    ),
    transitions: new Map(wf.transitions.map((t) => [`${t.fromStepId}:${t.branch ?? ''}`, t.toStepId])),
  };
  cache.set(versionId, graph);
  setTimeout(() => cache.delete(versionId), 5_000).unref?.();
  return graph;
}

/** The id of a workflow's version `number` (default: the latest), or null when there is none. */
export async function versionIdOf(db: RawDb, workflowId: string, number?: number): Promise<string | null> {
  const [row] = await db.$queryRaw<{ id: string }[]>`
    -- versionIdOf
    SELECT v.id FROM "WorkflowVersion" v JOIN "Workflow" w ON w.id = v."workflowId"
     WHERE v."workflowId" = ${workflowId}::uuid AND v.number = coalesce(${number ?? null}::int, w."latestVersion")`;
  return row?.id ?? null;
}
