-- Invitations (issue 11, finding 3): an owner no longer attaches an account to a project;
-- they invite an email, and the person behind it accepts (or declines) after signing in
-- as that email. Only a SHA-256 hash of the link's token is stored.
CREATE TABLE "Invitation" (
  "id" UUID NOT NULL DEFAULT gen_random_uuid(),
  "projectId" UUID NOT NULL,
  "email" TEXT NOT NULL,
  "role" "Role" NOT NULL,
  "tokenHash" TEXT NOT NULL,
  "invitedBy" TEXT NOT NULL,
  "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT now(),
  "expiresAt" TIMESTAMPTZ(3) NOT NULL,
  "acceptedAt" TIMESTAMPTZ(3),
  "acceptedBy" TEXT,
  "declinedAt" TIMESTAMPTZ(3),
  "revokedAt" TIMESTAMPTZ(3),
  CONSTRAINT "Invitation_pkey" PRIMARY KEY ("id"),
  CONSTRAINT "Invitation_projectId_fkey" FOREIGN KEY ("projectId") REFERENCES "Project"("id") ON DELETE CASCADE ON UPDATE CASCADE,
  -- An invitation ends one way at most: the accept/decline/revoke compare-and-swaps rely on it.
  CONSTRAINT "Invitation_one_ending" CHECK (num_nonnulls("acceptedAt", "declinedAt", "revokedAt") <= 1)
);
CREATE UNIQUE INDEX "Invitation_tokenHash_key" ON "Invitation"("tokenHash");
CREATE INDEX "Invitation_projectId_createdAt_idx" ON "Invitation"("projectId", "createdAt");
CREATE INDEX "Invitation_email_idx" ON "Invitation"("email");
