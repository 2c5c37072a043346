-- MESSAGE_UNCONFIRMED (issue 8): emails left SENDING, by project and lease expiry (the
-- sender died mid-send). Built CONCURRENTLY, alone in its migration.
CREATE INDEX CONCURRENTLY "Message_unconfirmed_idx" ON "Message"("projectId", "leaseExpiresAt") WHERE "status" = 'SENDING';
