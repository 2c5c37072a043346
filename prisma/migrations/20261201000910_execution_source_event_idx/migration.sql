-- The events page (issue 9): which executions each event enrolled. The I3 unique key leads
-- with workflowId, so it cannot find them by event. Built CONCURRENTLY, alone in its migration.
CREATE INDEX CONCURRENTLY "WorkflowExecution_sourceEventId_idx" ON "WorkflowExecution"("sourceEventId") WHERE "sourceEventId" IS NOT NULL;
