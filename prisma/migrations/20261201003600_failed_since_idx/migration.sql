-- The stuck list's FAILED page (server/repair/stuck.ts) is read newest first by when the
-- execution failed, COALESCE("finishedAt", "updatedAt"): with its key in an index, a page
-- is read in that order and stops after its rows, instead of sorting every failed
-- execution of the project. An expression index, which schema.prisma cannot declare (see
-- the note on WorkflowExecution there).
CREATE INDEX "WorkflowExecution_failed_since_idx"
    ON "WorkflowExecution" ("projectId", (COALESCE("finishedAt", "updatedAt")) DESC, id DESC)
 WHERE status = 'FAILED';
