-- Workflow versions (docs/versions.md). A workflow has published versions 1, 2, ...; a
-- version's steps and transitions never change once published. Each execution records
-- the version it runs on, and composite foreign keys keep every transition's ends and
-- every execution's current step inside one version: "an execution at a step its version
-- lacks" cannot be stored. Every workflow that exists today becomes version 1.

CREATE TABLE "WorkflowVersion" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "workflowId" UUID NOT NULL,
    "number" INTEGER NOT NULL,
    -- The version the editor started from (null for version 1).
    "basedOn" INTEGER,
    -- The actor that published it ('system' for version 1 of a migrated workflow).
    "publishedBy" TEXT NOT NULL,
    "publishedAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "WorkflowVersion_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "WorkflowVersion_workflowId_number_key" ON "WorkflowVersion"("workflowId", "number");
ALTER TABLE "WorkflowVersion" ADD CONSTRAINT "WorkflowVersion_workflowId_fkey"
    FOREIGN KEY ("workflowId") REFERENCES "Workflow"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- The publish compare-and-swap: UPDATE ... SET "latestVersion" = "latestVersion" + 1
-- WHERE "latestVersion" = basedOn.
ALTER TABLE "Workflow" ADD COLUMN "latestVersion" INTEGER NOT NULL DEFAULT 1;

INSERT INTO "WorkflowVersion" ("workflowId", "number", "basedOn", "publishedBy", "publishedAt")
SELECT id, 1, NULL, 'system', "createdAt" FROM "Workflow";

ALTER TABLE "WorkflowStep" ADD COLUMN "versionId" UUID;
UPDATE "WorkflowStep" s SET "versionId" = v.id FROM "WorkflowVersion" v WHERE v."workflowId" = s."workflowId";
ALTER TABLE "WorkflowStep" ALTER COLUMN "versionId" SET NOT NULL;
ALTER TABLE "WorkflowStep" ADD CONSTRAINT "WorkflowStep_versionId_fkey"
    FOREIGN KEY ("versionId") REFERENCES "WorkflowVersion"("id") ON DELETE CASCADE ON UPDATE CASCADE;
-- A key is unique within a version; across versions it is the step's identity.
DROP INDEX "WorkflowStep_workflowId_key_key";
CREATE UNIQUE INDEX "WorkflowStep_versionId_key_key" ON "WorkflowStep"("versionId", "key");
CREATE INDEX "WorkflowStep_workflowId_key_idx" ON "WorkflowStep"("workflowId", "key");
-- The target of the composite foreign keys below.
CREATE UNIQUE INDEX "WorkflowStep_id_versionId_key" ON "WorkflowStep"("id", "versionId");

ALTER TABLE "WorkflowTransition" ADD COLUMN "versionId" UUID;
UPDATE "WorkflowTransition" t SET "versionId" = s."versionId" FROM "WorkflowStep" s WHERE s.id = t."fromStepId";
ALTER TABLE "WorkflowTransition" ALTER COLUMN "versionId" SET NOT NULL;
ALTER TABLE "WorkflowTransition" ADD CONSTRAINT "WorkflowTransition_from_in_version_fkey"
    FOREIGN KEY ("fromStepId", "versionId") REFERENCES "WorkflowStep"("id", "versionId") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "WorkflowTransition" ADD CONSTRAINT "WorkflowTransition_to_in_version_fkey"
    FOREIGN KEY ("toStepId", "versionId") REFERENCES "WorkflowStep"("id", "versionId") ON DELETE CASCADE ON UPDATE CASCADE;
CREATE INDEX "WorkflowTransition_versionId_idx" ON "WorkflowTransition"("versionId");

ALTER TABLE "WorkflowExecution" ADD COLUMN "workflowVersionId" UUID;
UPDATE "WorkflowExecution" e SET "workflowVersionId" = v.id FROM "WorkflowVersion" v WHERE v."workflowId" = e."workflowId";
ALTER TABLE "WorkflowExecution" ALTER COLUMN "workflowVersionId" SET NOT NULL;
ALTER TABLE "WorkflowExecution" ADD CONSTRAINT "WorkflowExecution_workflowVersionId_fkey"
    FOREIGN KEY ("workflowVersionId") REFERENCES "WorkflowVersion"("id") ON DELETE CASCADE ON UPDATE CASCADE;
-- The current step is a step of the execution's own version (a null step passes).
ALTER TABLE "WorkflowExecution" ADD CONSTRAINT "WorkflowExecution_step_in_version_fkey"
    FOREIGN KEY ("currentStepId", "workflowVersionId") REFERENCES "WorkflowStep"("id", "versionId") ON DELETE NO ACTION ON UPDATE NO ACTION;
-- Publish's preview and the console: active executions of a version, by step.
CREATE INDEX "WorkflowExecution_version_step_idx" ON "WorkflowExecution"("workflowVersionId", "currentStepId") WHERE "status" IN ('RUNNING', 'WAITING');

-- At most one draft per workflow; saving it never touches a version or an execution.
CREATE TABLE "WorkflowDraft" (
    "workflowId" UUID NOT NULL,
    "definition" JSONB NOT NULL,
    "basedOnVersion" INTEGER NOT NULL,
    "updatedBy" TEXT NOT NULL,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "WorkflowDraft_pkey" PRIMARY KEY ("workflowId")
);
ALTER TABLE "WorkflowDraft" ADD CONSTRAINT "WorkflowDraft_workflowId_fkey"
    FOREIGN KEY ("workflowId") REFERENCES "Workflow"("id") ON DELETE CASCADE ON UPDATE CASCADE;
