-- executions.list({ stuck: ['MESSAGE_UNCONFIRMED'] }) hashes the executions whose emails
-- a dead sender left SENDING (server/read/executions.ts): with the execution's id in the
-- index, that is an index-only range, not a heap fetch per email. Replaces
-- "Message_unconfirmed_idx" (dropped, then this one renamed to it, in the next two
-- migrations), which the stuck list's pages still read in the same order. Built
-- CONCURRENTLY, alone in its migration.
CREATE INDEX CONCURRENTLY "Message_unconfirmed_include_idx" ON "Message"("projectId", "leaseExpiresAt") INCLUDE ("executionId") WHERE "status" = 'SENDING';
