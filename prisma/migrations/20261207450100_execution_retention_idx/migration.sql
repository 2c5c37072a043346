-- The retention sweep's walk (server/retention/batches.ts): a project's finished
-- executions whose history is still in place, oldest finish first, a batch at a time from
-- a keyset cursor, so a batch reads its few hundred rows whatever the table's size.
-- Built CONCURRENTLY, alone in its migration.
CREATE INDEX CONCURRENTLY "WorkflowExecution_retention_idx" ON "WorkflowExecution"("projectId", "finishedAt", "id") WHERE status IN ('COMPLETED', 'EXITED', 'CANCELLED') AND "historyRemovedAt" IS NULL;
