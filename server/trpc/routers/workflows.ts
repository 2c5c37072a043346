import { TRPCError } from '@trpc/server';
import { ZodRealError, type ZodError } from 'zod';
import { createWorkflowAudited, setWorkflowEnabled } from '../../engine/workflows';
import { discardDraft, publishVersion, saveDraft } from '../../engine/versions';
import { listWorkflows, workflowDetail } from '../../read/workflows';
import { countDiff, listVersions, publishPreview } from '../../read/workflow-versions';
import { actorLabel, actorLabels } from '../../read/actors';
import { stuckScope } from '../scope';
import { acting } from '../audit';
import { conflictError, marketerProcedure, router, viewerProcedure } from '../trpc';
import {
  createWorkflowInput,
  discardDraftInput,
  getWorkflowInput,
  publishInput,
  saveDraftInput,
  setWorkflowEnabledInput,
  workflowDetailInput,
  workflowDetailOutput,
  workflowPageInput,
  workflowPageOutput,
  workflowVersionsInput,
} from './workflows.schema';
import { asOutput } from '../rest';

const NOT_FOUND = () => new TRPCError({ code: 'NOT_FOUND', message: 'No such workflow in this project.' });

/** A definition that breaks the graph rules: BAD_REQUEST with zod issues at paths under `definition`. */
function invalidDefinition(error: ZodError): TRPCError {
  const issues = error.issues.map((issue) => ({ ...issue, path: ['definition', ...issue.path] }));
  return new TRPCError({ code: 'BAD_REQUEST', message: 'The definition cannot be published: fix the issues listed.', cause: new ZodRealError(issues) });
}

export const workflowsRouter = router({
  /** The project's workflows with their step count and how many executions are in each status (as of countsAsOf, null: now). */
  list: viewerProcedure.query(({ ctx }) => listWorkflows(ctx.db, stuckScope(ctx.actor.projectId))),

  /** A workflow's graph at one version (default: the latest), with how many active executions stand at each step right now. */
  get: viewerProcedure.input(getWorkflowInput).query(async ({ ctx, input }) => {
    const workflow = await workflowDetail(ctx.db, { ...stuckScope(ctx.actor.projectId, input.id), workflowId: input.id, version: input.version });
    if (!workflow) {
      throw new TRPCError({ code: 'NOT_FOUND', message: input.version ? `No version ${input.version} of such a workflow in this project.` : 'No such workflow in this project.' });
    }
    return workflow;
  }),

  /** /api/v1: the project's workflows in the shape of every list (one page). */
  page: viewerProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/workflows',
        operationId: 'listWorkflows',
        tags: ['workflows'],
        summary: 'List workflows',
        description: 'Every workflow of the project by name, with its latest version, step count and executions by status. One page: `next` is always null.',
        protect: true,
        errorResponses: [401, 403],
      },
    })
    .input(workflowPageInput)
    .output(workflowPageOutput)
    .query(async ({ ctx }) => asOutput(workflowPageOutput, { items: await listWorkflows(ctx.db, stuckScope(ctx.actor.projectId)), next: null })),

  /** /api/v1: a workflow at one version (`get`) with its published versions (`versions`). */
  find: viewerProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/workflows/{id}',
        operationId: 'getWorkflow',
        tags: ['workflows'],
        summary: 'Get a workflow with its versions',
        description:
          'The workflow at `version` (default the latest): its steps (with how many active executions stand at each) and transitions, the version shown, and every published version, newest first. An unknown version is 404.',
        protect: true,
        errorResponses: [400, 401, 403, 404],
      },
    })
    .input(workflowDetailInput)
    .output(workflowDetailOutput)
    .query(async ({ ctx, input }) => {
      const projectId = ctx.actor.projectId;
      const [workflow, versions] = await Promise.all([
        workflowDetail(ctx.db, { ...stuckScope(projectId, input.id), workflowId: input.id, version: input.version }),
        listVersions(ctx.db, projectId, input.id),
      ]);
      if (!workflow || !versions) {
        throw new TRPCError({ code: 'NOT_FOUND', message: input.version ? `No version ${input.version} of such a workflow in this project.` : 'No such workflow in this project.' });
      }
      return asOutput(workflowDetailOutput, { ...workflow, versions: versions.items });
    }),

  /** The workflow's published versions, newest first: who published each and when, its steps, its active executions. */
  versions: viewerProcedure.input(workflowVersionsInput).query(async ({ ctx, input }) => {
    const versions = await listVersions(ctx.db, ctx.actor.projectId, input.workflowId);
    if (!versions) throw NOT_FOUND();
    return versions;
  }),

  /**
   * What publishing `definition` over `basedOnVersion` would change, with the executions
   * at each removed or changed step; writes nothing. A mutation only so the definition
   * travels in the body (a query's input is in the URL, too short for a workflow).
   */
  publishPreview: marketerProcedure.input(publishInput).mutation(async ({ ctx, input }) => {
    const preview = await publishPreview(ctx.db, ctx.actor.projectId, input);
    if (preview.ok) return preview;
    if (preview.reason === 'INVALID') throw invalidDefinition(preview.error);
    if (preview.reason === 'VERSION_NOT_FOUND') throw new TRPCError({ code: 'NOT_FOUND', message: `This workflow has no version ${input.basedOnVersion}.` });
    throw NOT_FOUND();
  }),

  /**
   * Publish the next version. basedOnVersion must be the latest: otherwise CONFLICT
   * { reason: 'VERSION_CONFLICT', current: { number, publishedBy, publishedAt }, diff }
   * and nothing is written. Executions keep the version they run on (docs/versions.md).
   */
  publish: marketerProcedure.input(publishInput).mutation(async ({ ctx, input }) => {
    const result = await publishVersion(ctx.db, acting(ctx.actor), input);
    if (result.ok) return { version: result.version, diff: await countDiff(ctx.db, input.workflowId, result.diff) };
    if (result.reason === 'INVALID') throw invalidDefinition(result.error);
    if (result.reason === 'WORKFLOW_NOT_FOUND') throw NOT_FOUND();
    const labels = await actorLabels(ctx.db, ctx.actor.projectId, [result.current.publishedBy]);
    const current = { ...result.current, publishedBy: actorLabel(labels, result.current.publishedBy) };
    throw conflictError(
      { reason: 'VERSION_CONFLICT', current, diff: result.diff },
      `Version ${current.number} was published by ${current.publishedBy} at ${current.publishedAt.toISOString()} since you started from version ${input.basedOnVersion}: nothing was published. Review its changes and edit from version ${current.number}.`,
    );
  }),

  /** Keep the editor's draft (one per workflow); it never affects a version or an execution. */
  saveDraft: marketerProcedure.input(saveDraftInput).mutation(async ({ ctx, input }) => {
    const result = await saveDraft(ctx.db, acting(ctx.actor), input);
    if (!result.ok) throw NOT_FOUND();
    return { savedAt: result.savedAt };
  }),

  /** Drop the workflow's draft, if it has one. */
  discardDraft: marketerProcedure.input(discardDraftInput).mutation(async ({ ctx, input }) => {
    const result = await discardDraft(ctx.db, acting(ctx.actor), input.workflowId);
    if (!result.ok) throw NOT_FOUND();
    return { discarded: result.discarded };
  }),

  /**
   * Validate and store a workflow. Names are unique per project: a taken name is a
   * CONFLICT { reason: 'NAME_TAKEN', workflowId } naming the workflow that holds it.
   */
  create: marketerProcedure.input(createWorkflowInput).mutation(async ({ ctx, input }) => {
    const result = await createWorkflowAudited(ctx.db, acting(ctx.actor), input);
    if (!result.ok) {
      throw conflictError({ reason: result.reason, workflowId: result.workflowId }, `A workflow named "${input.name}" already exists.`);
    }
    return { id: result.id };
  }),

  /** Enable or disable enrollment into a workflow; executions already running go on. */
  setEnabled: marketerProcedure.input(setWorkflowEnabledInput).mutation(async ({ ctx, input }) => {
    const result = await setWorkflowEnabled(ctx.db, acting(ctx.actor), input.id, input.enabled);
    if (!result.ok) throw NOT_FOUND();
    return { id: result.id, enabled: result.enabled };
  }),
});
