-- Message repairs (issue 8): an operator may mark an email whose fate is unknown or that
-- failed as sent, resend it, or give up on it (ABANDONED: neither sent nor to be sent).
-- Every change of a message bumps its version, the CAS token an operator's repair
-- carries from its preview (a status alone repeats: FAILED, resent, FAILED again).
-- Adding a column with a constant default rewrites nothing (PostgreSQL 11+).
ALTER TYPE "MessageStatus" ADD VALUE IF NOT EXISTS 'ABANDONED';
ALTER TABLE "Message" ADD COLUMN "version" INTEGER NOT NULL DEFAULT 1;
