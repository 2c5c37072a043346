-- I1: at most one active (RUNNING or WAITING) execution per (workflow, contact).
-- Built CONCURRENTLY, alone in its migration.
CREATE UNIQUE INDEX CONCURRENTLY "WorkflowExecution_active_workflowId_contactId_key" ON "WorkflowExecution"("workflowId", "contactId") WHERE "status" IN ('RUNNING', 'WAITING');
