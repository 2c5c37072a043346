-- The console's executions list filtered by the step they are at now (issue 9): newest first
-- within a step, so the page is one index range. Built CONCURRENTLY, alone in its migration.
CREATE INDEX CONCURRENTLY "WorkflowExecution_currentStepId_startedAt_id_idx" ON "WorkflowExecution"("currentStepId", "startedAt" DESC, "id" DESC);
