-- Superseded by "Message_unconfirmed_include_idx" (the previous migration). Alone in its migration.
DROP INDEX CONCURRENTLY IF EXISTS "Message_unconfirmed_idx";
