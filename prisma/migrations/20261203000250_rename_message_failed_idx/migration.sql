-- The index keeps the name schema.prisma knows it by.
ALTER INDEX "Message_failed_include_idx" RENAME TO "Message_failed_idx";
