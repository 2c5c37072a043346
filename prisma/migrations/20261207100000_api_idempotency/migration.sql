-- Idempotency-Key on /api/v1's POSTs (docs/api.md, "Idempotency"): one row per (project,
-- API key, key), claimed by the first request with one INSERT ... ON CONFLICT, holding the
-- request's method, path and body hash and, once it finished, its answer. In PostgreSQL so
-- every web process agrees; a row past expiresAt (24 h) is ignored and overwritten.
CREATE TABLE "ApiIdempotencyKey" (
  "projectId" UUID NOT NULL,
  "apiKeyId" UUID NOT NULL,
  "key" TEXT NOT NULL,
  "method" TEXT NOT NULL,
  "path" TEXT NOT NULL,
  "bodyHash" TEXT NOT NULL,
  "claimToken" UUID NOT NULL,
  "status" INTEGER,
  "contentType" TEXT,
  "responseBody" TEXT,
  "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT now(),
  "expiresAt" TIMESTAMPTZ(3) NOT NULL,
  CONSTRAINT "ApiIdempotencyKey_pkey" PRIMARY KEY ("projectId", "apiKeyId", "key")
);
-- Sweeping expired keys.
CREATE INDEX "ApiIdempotencyKey_expiresAt_idx" ON "ApiIdempotencyKey"("expiresAt");
ALTER TABLE "ApiIdempotencyKey" ADD CONSTRAINT "ApiIdempotencyKey_projectId_fkey" FOREIGN KEY ("projectId") REFERENCES "Project"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "ApiIdempotencyKey" ADD CONSTRAINT "ApiIdempotencyKey_apiKeyId_fkey" FOREIGN KEY ("apiKeyId") REFERENCES "ApiKey"("id") ON DELETE CASCADE ON UPDATE CASCADE;
