-- The index keeps the name schema.prisma knows it by.
ALTER INDEX "Message_unconfirmed_include_idx" RENAME TO "Message_unconfirmed_idx";
