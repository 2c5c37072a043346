-- Retention (docs/deploy.md, "Retention"; server/retention/): RETENTION_DAYS removes
-- finished executions with their step rows and emails, processed events and settled
-- webhook messages older than that; AUDIT_RETENTION_DAYS removes old audit entries. The
-- workers sweep in small batches, one short statement each.

-- An execution enrolled once only (its workflow does not allow re-entry) is the memory
-- that keeps its contact from entering again (the partial unique index
-- "WorkflowExecution_once_workflowId_contactId_key"): retention keeps that row and removes
-- its history (step rows, emails, context) instead, and says when here. Nullable without
-- a default: adding it rewrites nothing.
ALTER TABLE "WorkflowExecution" ADD COLUMN "historyRemovedAt" TIMESTAMPTZ(3);

-- One row per kind of sweep ('history', 'audit'): which worker is sweeping now (claimed by
-- a compare-and-swap, kept by a heartbeat, so several worker processes never run one kind
-- at once and a dead sweeper's claim lapses), and the last sweep's outcome across the
-- deployment.
CREATE TABLE "RetentionSweep" (
    "kind" TEXT NOT NULL,
    "owner" TEXT,
    "runningSince" TIMESTAMPTZ(3),
    "heartbeatAt" TIMESTAMPTZ(3),
    "lastStartedAt" TIMESTAMPTZ(3),
    "lastFinishedAt" TIMESTAMPTZ(3),
    "lastDurationMs" INTEGER,
    "lastDays" INTEGER,
    "lastCutoff" TIMESTAMPTZ(3),
    "lastOutcome" TEXT,
    "lastError" TEXT,
    "lastRemoved" JSONB NOT NULL DEFAULT '{}',
    CONSTRAINT "RetentionSweep_pkey" PRIMARY KEY ("kind"),
    CONSTRAINT "RetentionSweep_kind_check" CHECK ("kind" IN ('history', 'audit')),
    CONSTRAINT "RetentionSweep_outcome_check" CHECK ("lastOutcome" IN ('COMPLETED', 'STOPPED', 'FAILED'))
);
INSERT INTO "RetentionSweep" ("kind") VALUES ('history'), ('audit');

-- What the last sweep of each kind removed in each project (the Settings page shows its
-- own project's): rows removed per kind of row, when, and with which cut-off.
CREATE TABLE "RetentionProjectSweep" (
    "projectId" UUID NOT NULL,
    "kind" TEXT NOT NULL,
    "sweptAt" TIMESTAMPTZ(3) NOT NULL,
    "cutoff" TIMESTAMPTZ(3) NOT NULL,
    "removed" JSONB NOT NULL,
    CONSTRAINT "RetentionProjectSweep_pkey" PRIMARY KEY ("projectId", "kind"),
    CONSTRAINT "RetentionProjectSweep_kind_check" CHECK ("kind" IN ('history', 'audit')),
    CONSTRAINT "RetentionProjectSweep_projectId_fkey" FOREIGN KEY ("projectId") REFERENCES "Project"("id") ON DELETE CASCADE ON UPDATE CASCADE
);
