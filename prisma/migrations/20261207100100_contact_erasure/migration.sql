-- Erasing a contact (contacts.erase, DELETE /api/v1/contacts/{id}): when it was erased;
-- null for every contact until then.
ALTER TABLE "Contact" ADD COLUMN "erasedAt" TIMESTAMPTZ(3);
