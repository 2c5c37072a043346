-- The overview's throughput (issue 10): step executions finished per minute over the last
-- hour, one index range on finishedAt (each row's project is then read from its execution
-- by primary key). Built CONCURRENTLY, alone in its migration.
CREATE INDEX CONCURRENTLY "StepExecution_finished_idx" ON "StepExecution"("finishedAt") INCLUDE ("executionId") WHERE "finishedAt" IS NOT NULL;
