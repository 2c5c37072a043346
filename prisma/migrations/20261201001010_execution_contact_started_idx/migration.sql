-- A contact's journey (issue 10): its executions across workflows, newest first, as one
-- index range however many times an event-triggered workflow re-entered it.
-- Built CONCURRENTLY, alone in its migration.
CREATE INDEX CONCURRENTLY "WorkflowExecution_contactId_startedAt_id_idx" ON "WorkflowExecution"("contactId", "startedAt" DESC, "id" DESC);
