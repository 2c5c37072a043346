-- executions.list({ stuck: ['MESSAGE_FAILED'] }) hashes the executions whose emails
-- failed (server/read/executions.ts): with the execution's id in the index, that is an
-- index-only range, not a heap fetch per email. Replaces "Message_failed_idx" (dropped,
-- then this one renamed to it, in the next two migrations), which the stuck list and the
-- overview still read in the same order. Built CONCURRENTLY, alone in its migration.
CREATE INDEX CONCURRENTLY "Message_failed_include_idx" ON "Message"("projectId", "createdAt") INCLUDE ("executionId") WHERE "status" = 'FAILED';
