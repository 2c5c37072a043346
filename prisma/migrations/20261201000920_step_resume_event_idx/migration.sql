-- The events page (issue 9): which waits each event resolved. Built CONCURRENTLY, alone in
-- its migration.
CREATE INDEX CONCURRENTLY "StepExecution_resumeEventId_idx" ON "StepExecution"("resumeEventId") WHERE "resumeEventId" IS NOT NULL;
