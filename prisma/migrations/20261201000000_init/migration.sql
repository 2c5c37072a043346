-- Initial data model (docs/architecture.md, "Data model"). Invariant indexes I1 and I2 come in later
-- migrations, each built CONCURRENTLY after a check for existing violations.

-- CreateEnum
CREATE TYPE "Role" AS ENUM ('OWNER', 'OPERATOR', 'MARKETER', 'VIEWER');
CREATE TYPE "WorkflowTrigger" AS ENUM ('EVENT', 'MANUAL');
CREATE TYPE "StepType" AS ENUM ('TRIGGER', 'SEND_EMAIL', 'DELAY', 'WAIT_FOR_EVENT', 'CONDITION', 'UPDATE_CONTACT', 'EXIT');
CREATE TYPE "ExecutionStatus" AS ENUM ('RUNNING', 'WAITING', 'COMPLETED', 'EXITED', 'FAILED', 'CANCELLED');
CREATE TYPE "StepStatus" AS ENUM ('PENDING', 'RUNNING', 'WAITING', 'COMPLETED', 'SKIPPED', 'FAILED');
CREATE TYPE "WaitResolver" AS ENUM ('EVENT', 'TIMEOUT', 'OPERATOR');
CREATE TYPE "MessageStatus" AS ENUM ('QUEUED', 'SENDING', 'SENT', 'FAILED');
CREATE TYPE "AuditOutcome" AS ENUM ('APPLIED', 'LOST', 'REJECTED', 'FAILED');

-- CreateTable
CREATE TABLE "Project" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "name" TEXT NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "Project_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "User" (
    "id" TEXT NOT NULL DEFAULT (gen_random_uuid())::text,
    "name" TEXT NOT NULL,
    "email" TEXT NOT NULL,
    "emailVerified" BOOLEAN NOT NULL DEFAULT false,
    "image" TEXT,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "User_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "Session" (
    "id" TEXT NOT NULL DEFAULT (gen_random_uuid())::text,
    "token" TEXT NOT NULL,
    "userId" TEXT NOT NULL,
    "expiresAt" TIMESTAMPTZ(3) NOT NULL,
    "ipAddress" TEXT,
    "userAgent" TEXT,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "Session_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "Account" (
    "id" TEXT NOT NULL DEFAULT (gen_random_uuid())::text,
    "accountId" TEXT NOT NULL,
    "providerId" TEXT NOT NULL,
    "userId" TEXT NOT NULL,
    "accessToken" TEXT,
    "refreshToken" TEXT,
    "idToken" TEXT,
    "accessTokenExpiresAt" TIMESTAMPTZ(3),
    "refreshTokenExpiresAt" TIMESTAMPTZ(3),
    "scope" TEXT,
    "password" TEXT,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "Account_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "Verification" (
    "id" TEXT NOT NULL DEFAULT (gen_random_uuid())::text,
    "identifier" TEXT NOT NULL,
    "value" TEXT NOT NULL,
    "expiresAt" TIMESTAMPTZ(3) NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "Verification_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "Membership" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "userId" TEXT NOT NULL,
    "projectId" UUID NOT NULL,
    "role" "Role" NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "Membership_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "ApiKey" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "projectId" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "role" "Role" NOT NULL,
    "prefix" TEXT NOT NULL,
    "hashedSecret" TEXT NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "lastUsedAt" TIMESTAMPTZ(3),
    "revokedAt" TIMESTAMPTZ(3),
    CONSTRAINT "ApiKey_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "Contact" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "projectId" UUID NOT NULL,
    "email" TEXT NOT NULL,
    "data" JSONB NOT NULL DEFAULT '{}',
    "subscribed" BOOLEAN NOT NULL DEFAULT true,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "Contact_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "Workflow" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "projectId" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT,
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "trigger" "WorkflowTrigger" NOT NULL,
    "triggerEvent" TEXT,
    "allowReentry" BOOLEAN NOT NULL DEFAULT false,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "Workflow_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "WorkflowStep" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "workflowId" UUID NOT NULL,
    "key" TEXT NOT NULL,
    "type" "StepType" NOT NULL,
    "name" TEXT NOT NULL,
    "config" JSONB NOT NULL DEFAULT '{}',
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "WorkflowStep_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "WorkflowTransition" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "workflowId" UUID NOT NULL,
    "fromStepId" UUID NOT NULL,
    "toStepId" UUID NOT NULL,
    "branch" TEXT,
    CONSTRAINT "WorkflowTransition_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "WorkflowExecution" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "projectId" UUID NOT NULL,
    "workflowId" UUID NOT NULL,
    "contactId" UUID NOT NULL,
    "status" "ExecutionStatus" NOT NULL,
    "currentStepId" UUID,
    "version" INTEGER NOT NULL DEFAULT 1,
    "context" JSONB NOT NULL DEFAULT '{}',
    "sourceEventId" UUID,
    "enrollOnce" BOOLEAN NOT NULL DEFAULT false,
    "exitReason" TEXT,
    "lastError" TEXT,
    "readyAt" TIMESTAMPTZ(3),
    "startedAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finishedAt" TIMESTAMPTZ(3),
    CONSTRAINT "WorkflowExecution_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "StepExecution" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "executionId" UUID NOT NULL,
    "stepId" UUID NOT NULL,
    "status" "StepStatus" NOT NULL,
    "attempt" INTEGER NOT NULL DEFAULT 1,
    "claimToken" UUID,
    "leaseExpiresAt" TIMESTAMPTZ(3),
    "dueAt" TIMESTAMPTZ(3),
    "resolvedBy" "WaitResolver",
    "resolvedAt" TIMESTAMPTZ(3),
    "resolvedBranch" TEXT,
    "resumeEventId" UUID,
    "output" JSONB,
    "error" TEXT,
    "startedAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finishedAt" TIMESTAMPTZ(3),
    CONSTRAINT "StepExecution_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "Event" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "projectId" UUID NOT NULL,
    "contactId" UUID,
    "name" TEXT NOT NULL,
    "data" JSONB NOT NULL DEFAULT '{}',
    "idempotencyKey" TEXT,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "processedAt" TIMESTAMPTZ(3),
    "dispatchAttempts" INTEGER NOT NULL DEFAULT 0,
    "nextDispatchAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "deadAt" TIMESTAMPTZ(3),
    "lastError" TEXT,
    "leaseOwner" TEXT,
    "leaseExpiresAt" TIMESTAMPTZ(3),
    CONSTRAINT "Event_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "Message" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "projectId" UUID NOT NULL,
    "executionId" UUID NOT NULL,
    "stepExecutionId" UUID NOT NULL,
    "to" TEXT NOT NULL,
    "subject" TEXT NOT NULL,
    "body" TEXT NOT NULL,
    "status" "MessageStatus" NOT NULL DEFAULT 'QUEUED',
    "providerId" TEXT,
    "error" TEXT,
    "leaseOwner" TEXT,
    "leaseExpiresAt" TIMESTAMPTZ(3),
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "sentAt" TIMESTAMPTZ(3),
    CONSTRAINT "Message_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "AuditEntry" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "projectId" UUID NOT NULL,
    "actor" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "targetType" TEXT NOT NULL,
    "targetId" TEXT NOT NULL,
    "reason" TEXT,
    "before" JSONB,
    "after" JSONB,
    "outcome" "AuditOutcome" NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "AuditEntry_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "Project_name_key" ON "Project"("name");
CREATE UNIQUE INDEX "User_email_key" ON "User"("email");
CREATE UNIQUE INDEX "Session_token_key" ON "Session"("token");
CREATE INDEX "Session_userId_idx" ON "Session"("userId");
CREATE INDEX "Account_userId_idx" ON "Account"("userId");
CREATE INDEX "Verification_identifier_idx" ON "Verification"("identifier");
CREATE UNIQUE INDEX "Membership_userId_projectId_key" ON "Membership"("userId", "projectId");
CREATE INDEX "Membership_projectId_idx" ON "Membership"("projectId");
CREATE UNIQUE INDEX "ApiKey_hashedSecret_key" ON "ApiKey"("hashedSecret");
CREATE INDEX "ApiKey_projectId_idx" ON "ApiKey"("projectId");
-- Contacts are unique per project regardless of the email's case.
CREATE UNIQUE INDEX "Contact_projectId_lower_email_key" ON "Contact"("projectId", lower("email"));
-- Email-prefix search (contacts.list, executions.list): LIKE 'abc%' needs pattern ops.
CREATE INDEX "Contact_projectId_email_prefix_idx" ON "Contact"("projectId", lower("email") text_pattern_ops);
-- audit.list filters by actor or action.
CREATE INDEX "AuditEntry_projectId_actor_at_idx" ON "AuditEntry"("projectId", "actor", "at" DESC);
CREATE INDEX "AuditEntry_projectId_action_at_idx" ON "AuditEntry"("projectId", "action", "at" DESC);
CREATE INDEX "Contact_projectId_createdAt_id_idx" ON "Contact"("projectId", "createdAt" DESC, "id" DESC);
CREATE UNIQUE INDEX "Workflow_projectId_name_key" ON "Workflow"("projectId", "name");
CREATE INDEX "Workflow_projectId_triggerEvent_idx" ON "Workflow"("projectId", "triggerEvent");
CREATE UNIQUE INDEX "WorkflowStep_workflowId_key_key" ON "WorkflowStep"("workflowId", "key");
-- One plain "next" (branch NULL) per step too: NULLs must not be distinct here.
CREATE UNIQUE INDEX "WorkflowTransition_fromStepId_branch_key" ON "WorkflowTransition"("fromStepId", "branch") NULLS NOT DISTINCT;
CREATE INDEX "WorkflowTransition_workflowId_idx" ON "WorkflowTransition"("workflowId");
-- I3: enrollment is idempotent per (workflow, source event).
CREATE UNIQUE INDEX "WorkflowExecution_workflowId_sourceEventId_key" ON "WorkflowExecution"("workflowId", "sourceEventId");
-- allowReentry = false: one execution ever per (workflow, contact), decided by the database.
CREATE UNIQUE INDEX "WorkflowExecution_once_workflowId_contactId_key" ON "WorkflowExecution"("workflowId", "contactId") WHERE "enrollOnce";
CREATE INDEX "WorkflowExecution_projectId_startedAt_id_idx" ON "WorkflowExecution"("projectId", "startedAt" DESC, "id" DESC);
CREATE INDEX "WorkflowExecution_projectId_status_startedAt_id_idx" ON "WorkflowExecution"("projectId", "status", "startedAt" DESC, "id" DESC);
CREATE INDEX "WorkflowExecution_workflowId_startedAt_id_idx" ON "WorkflowExecution"("workflowId", "startedAt" DESC, "id" DESC);
CREATE INDEX "WorkflowExecution_contactId_workflowId_idx" ON "WorkflowExecution"("contactId", "workflowId");
-- The workers' run queue: RUNNING executions whose next step is due.
CREATE INDEX "WorkflowExecution_ready_queue_idx" ON "WorkflowExecution"("readyAt") WHERE "status" = 'RUNNING';
-- Live count per step (workflow graph) reads only active executions.
CREATE INDEX "WorkflowExecution_active_step_idx" ON "WorkflowExecution"("workflowId", "currentStepId") WHERE "status" IN ('RUNNING', 'WAITING');
CREATE INDEX "StepExecution_stepId_idx" ON "StepExecution"("stepId");
-- The timer queue (the row is the timer) and WAIT_OVERDUE: unresolved waits by due time.
CREATE INDEX "StepExecution_timer_idx" ON "StepExecution"("dueAt") WHERE "status" = 'WAITING' AND "resolvedBy" IS NULL;
-- CONTINUATION_PENDING: waits claimed (resolved) but not yet advanced past.
CREATE INDEX "StepExecution_continuation_idx" ON "StepExecution"("resolvedAt") WHERE "status" = 'WAITING' AND "resolvedBy" IS NOT NULL;
-- FAILED: the failed step rows (few: a retried step's row is reused, I2).
CREATE INDEX "StepExecution_failed_idx" ON "StepExecution"("executionId") WHERE "status" = 'FAILED';
-- LEASE_EXPIRED: steps held by a worker, by lease expiry.
CREATE INDEX "StepExecution_lease_idx" ON "StepExecution"("leaseExpiresAt") WHERE "status" = 'RUNNING';
CREATE UNIQUE INDEX "Event_projectId_idempotencyKey_key" ON "Event"("projectId", "idempotencyKey");
CREATE INDEX "Event_projectId_createdAt_id_idx" ON "Event"("projectId", "createdAt" DESC, "id" DESC);
CREATE INDEX "Event_contactId_createdAt_idx" ON "Event"("contactId", "createdAt");
-- The event outbox queue (pending dispatch) and EVENT_PENDING.
CREATE INDEX "Event_dispatch_queue_idx" ON "Event"("nextDispatchAt") WHERE "processedAt" IS NULL AND "deadAt" IS NULL;
-- EVENT_PENDING: accepted events not yet processed, by age.
CREATE INDEX "Event_pending_idx" ON "Event"("projectId", "createdAt") WHERE "processedAt" IS NULL AND "deadAt" IS NULL;
-- EVENT_DEAD: dead-lettered events.
CREATE INDEX "Event_dead_idx" ON "Event"("projectId", "deadAt") WHERE "deadAt" IS NOT NULL;
-- I5: one message per step execution.
CREATE UNIQUE INDEX "Message_stepExecutionId_key" ON "Message"("stepExecutionId");
CREATE INDEX "Message_executionId_idx" ON "Message"("executionId");
-- The sender's queue.
CREATE INDEX "Message_send_queue_idx" ON "Message"("createdAt") WHERE "status" = 'QUEUED';
CREATE INDEX "AuditEntry_projectId_at_id_idx" ON "AuditEntry"("projectId", "at" DESC, "id" DESC);
CREATE INDEX "AuditEntry_projectId_targetId_at_idx" ON "AuditEntry"("projectId", "targetId", "at" DESC);

-- AddForeignKey
ALTER TABLE "Session" ADD CONSTRAINT "Session_userId_fkey" FOREIGN KEY ("userId") REFERENCES "User"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "Account" ADD CONSTRAINT "Account_userId_fkey" FOREIGN KEY ("userId") REFERENCES "User"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "Membership" ADD CONSTRAINT "Membership_userId_fkey" FOREIGN KEY ("userId") REFERENCES "User"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "Membership" ADD CONSTRAINT "Membership_projectId_fkey" FOREIGN KEY ("projectId") REFERENCES "Project"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "ApiKey" ADD CONSTRAINT "ApiKey_projectId_fkey" FOREIGN KEY ("projectId") REFERENCES "Project"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "Contact" ADD CONSTRAINT "Contact_projectId_fkey" FOREIGN KEY ("projectId") REFERENCES "Project"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "Workflow" ADD CONSTRAINT "Workflow_projectId_fkey" FOREIGN KEY ("projectId") REFERENCES "Project"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "WorkflowStep" ADD CONSTRAINT "WorkflowStep_workflowId_fkey" FOREIGN KEY ("workflowId") REFERENCES "Workflow"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "WorkflowTransition" ADD CONSTRAINT "WorkflowTransition_workflowId_fkey" FOREIGN KEY ("workflowId") REFERENCES "Workflow"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "WorkflowTransition" ADD CONSTRAINT "WorkflowTransition_fromStepId_fkey" FOREIGN KEY ("fromStepId") REFERENCES "WorkflowStep"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "WorkflowTransition" ADD CONSTRAINT "WorkflowTransition_toStepId_fkey" FOREIGN KEY ("toStepId") REFERENCES "WorkflowStep"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "WorkflowExecution" ADD CONSTRAINT "WorkflowExecution_projectId_fkey" FOREIGN KEY ("projectId") REFERENCES "Project"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "WorkflowExecution" ADD CONSTRAINT "WorkflowExecution_workflowId_fkey" FOREIGN KEY ("workflowId") REFERENCES "Workflow"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "WorkflowExecution" ADD CONSTRAINT "WorkflowExecution_contactId_fkey" FOREIGN KEY ("contactId") REFERENCES "Contact"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "StepExecution" ADD CONSTRAINT "StepExecution_executionId_fkey" FOREIGN KEY ("executionId") REFERENCES "WorkflowExecution"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "StepExecution" ADD CONSTRAINT "StepExecution_stepId_fkey" FOREIGN KEY ("stepId") REFERENCES "WorkflowStep"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "Event" ADD CONSTRAINT "Event_projectId_fkey" FOREIGN KEY ("projectId") REFERENCES "Project"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "Event" ADD CONSTRAINT "Event_contactId_fkey" FOREIGN KEY ("contactId") REFERENCES "Contact"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "Message" ADD CONSTRAINT "Message_projectId_fkey" FOREIGN KEY ("projectId") REFERENCES "Project"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "Message" ADD CONSTRAINT "Message_executionId_fkey" FOREIGN KEY ("executionId") REFERENCES "WorkflowExecution"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "Message" ADD CONSTRAINT "Message_stepExecutionId_fkey" FOREIGN KEY ("stepExecutionId") REFERENCES "StepExecution"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "AuditEntry" ADD CONSTRAINT "AuditEntry_projectId_fkey" FOREIGN KEY ("projectId") REFERENCES "Project"("id") ON DELETE CASCADE ON UPDATE CASCADE;
