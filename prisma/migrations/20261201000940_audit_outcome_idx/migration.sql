-- The audit log filtered by outcome (issue 9): a rare outcome (LOST, FAILED) is one index
-- range, not a walk through every APPLIED entry. Built CONCURRENTLY, alone in its migration.
CREATE INDEX CONCURRENTLY "AuditEntry_projectId_outcome_at_id_idx" ON "AuditEntry"("projectId", "outcome", "at" DESC, "id" DESC);
