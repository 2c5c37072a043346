-- Whether the demo project (published password) was seeded on this database (issue 11,
-- finding 2). Remembered here rather than inferred from the "demo" project, so that an
-- owner who deletes the demo project does not get it back on the next `npm start`, and a
-- second start process does not seed again. One row at most.
CREATE TABLE "DemoSeed" (
  "id" BOOLEAN NOT NULL DEFAULT true,
  "seededAt" TIMESTAMPTZ(3) NOT NULL DEFAULT now(),
  -- What seeded it: "npm start", "cli seed", or "before DemoSeed" (rows below).
  "seededBy" TEXT NOT NULL,
  CONSTRAINT "DemoSeed_pkey" PRIMARY KEY ("id"),
  CONSTRAINT "DemoSeed_one_row" CHECK ("id")
);

-- A database that already holds projects or people was set up before this table
-- existed, whether by the old seed (which ran on every start) or by its owners: it is
-- past its first start, so nothing is seeded into it unless someone asks.
INSERT INTO "DemoSeed" ("seededBy", "seededAt")
SELECT 'before DemoSeed', COALESCE((SELECT min("createdAt") FROM "Project"), now())
 WHERE EXISTS (SELECT 1 FROM "Project") OR EXISTS (SELECT 1 FROM "User");
