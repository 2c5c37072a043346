-- The first start's decision is remembered either way. A start with SEED_DEMO=0 records
-- that the demo was declined, so a later start that omits SEED_DEMO does not seed the
-- published-password logins into a database whose owner said no. SEED_DEMO=1 (or
-- `cli seed`) still seeds on request.
ALTER TABLE "DemoSeed" ADD COLUMN "declined" BOOLEAN NOT NULL DEFAULT false;
