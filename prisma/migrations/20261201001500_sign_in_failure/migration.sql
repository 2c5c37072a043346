-- Failed sign-ins per account (issue 11, finding 1): counted in the database, so the
-- per-account limit holds across web processes and whatever address a client claims.
CREATE TABLE "SignInFailure" (
  "id" UUID NOT NULL DEFAULT gen_random_uuid(),
  "email" TEXT NOT NULL,
  "at" TIMESTAMPTZ(3) NOT NULL DEFAULT now(),
  CONSTRAINT "SignInFailure_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "SignInFailure_email_at_idx" ON "SignInFailure"("email", "at");
