-- The console's figures (server/read/figures.ts): counts over a project's whole history,
-- served as last computed (with their "as of") once computing them live costs more than
-- a console read may, and refreshed in the background by one process at a time.
CREATE TABLE "ConsoleFigure" (
    "projectId" UUID NOT NULL,
    "kind" TEXT NOT NULL,
    "scope" TEXT NOT NULL,
    "value" JSONB NOT NULL,
    "computedAt" TIMESTAMPTZ(3) NOT NULL,
    "costMs" DOUBLE PRECISION NOT NULL,
    "previousCostMs" DOUBLE PRECISION,
    "refreshStartedAt" TIMESTAMPTZ(3),

    CONSTRAINT "ConsoleFigure_pkey" PRIMARY KEY ("projectId","kind","scope"),
    CONSTRAINT "ConsoleFigure_projectId_fkey" FOREIGN KEY ("projectId") REFERENCES "Project"("id") ON DELETE CASCADE ON UPDATE CASCADE
);
