-- The overview's recent failures (issue 10): a project's FAILED executions, latest failure
-- first: one index range under a LIMIT, read in the index's order. Built CONCURRENTLY, alone in
-- its migration.
CREATE INDEX CONCURRENTLY "WorkflowExecution_failed_idx" ON "WorkflowExecution"("projectId", "finishedAt" DESC NULLS LAST, "id" DESC) WHERE "status" = 'FAILED';
