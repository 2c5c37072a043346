-- MESSAGE_FAILED (issue 8): emails whose send failed, by project and age. Built
-- CONCURRENTLY, alone in its migration.
CREATE INDEX CONCURRENTLY "Message_failed_idx" ON "Message"("projectId", "createdAt") WHERE "status" = 'FAILED';
