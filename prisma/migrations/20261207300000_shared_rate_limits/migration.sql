-- The request limits shared by every web process (server/db/rate-counter.ts): the API's
-- per-key, per-session and per-address calls a minute, and better-auth's per-address
-- sign-in attempts, each a fixed window counted by one upsert, so N web processes enforce
-- the limit one would. UNLOGGED: every API call writes a row here, and counters lost in a
-- crash (or on a failover, as a standby does not receive them) only give each caller a
-- fresh minute. No index on "expiresAt": the upsert rewrites it on every call, and an
-- index would take those updates off the heap-only path; the sweep of expired rows every
-- few minutes reads the table, which holds only the callers of the last few minutes.
CREATE UNLOGGED TABLE "RateLimitBucket" (
    -- The scope and its subject: "key:<sha256 of the credential>", "address:<ip>", "auth:<ip and path>".
    "key" TEXT NOT NULL,
    -- Calls counted in the current window (past the limit too: refused calls count).
    "points" INTEGER NOT NULL,
    -- When the current window ends; the next call after it starts a new one.
    "expiresAt" TIMESTAMPTZ(3) NOT NULL,
    CONSTRAINT "RateLimitBucket_pkey" PRIMARY KEY ("key")
);
