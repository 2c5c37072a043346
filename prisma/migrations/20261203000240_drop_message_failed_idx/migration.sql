-- Superseded by "Message_failed_include_idx" (the previous migration). Alone in its migration.
DROP INDEX CONCURRENTLY IF EXISTS "Message_failed_idx";
