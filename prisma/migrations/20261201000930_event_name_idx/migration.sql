-- The events page filtered by name (issue 9): newest first within a name, one index range.
-- Built CONCURRENTLY, alone in its migration.
CREATE INDEX CONCURRENTLY "Event_projectId_name_createdAt_id_idx" ON "Event"("projectId", "name", "createdAt" DESC, "id" DESC);
