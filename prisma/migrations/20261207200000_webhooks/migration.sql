-- Outgoing webhooks (docs/webhooks.md): endpoints, the outbox of messages to them with
-- their delivery state, the attempts log, and the stuck notifier's memory. The messages
-- of execution.failed, message.failed, event.dead, repair.applied and workflow.published
-- are written by the triggers at the end of this file, in the transaction of the change
-- they report: a rollback takes them along, and no code path can commit without them.

CREATE TYPE "WebhookStatus" AS ENUM ('PENDING', 'DELIVERED', 'DEAD');

CREATE TABLE "WebhookEndpoint" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "projectId" UUID NOT NULL,
    "url" TEXT NOT NULL,
    "description" TEXT,
    "eventTypes" TEXT[] NOT NULL DEFAULT ARRAY[]::TEXT[],
    "secret" TEXT NOT NULL,
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "stuckThreshold" INTEGER NOT NULL DEFAULT 1,
    "stuckIntervalSeconds" INTEGER NOT NULL DEFAULT 3600,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "createdById" TEXT,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "version" INTEGER NOT NULL DEFAULT 1,
    CONSTRAINT "WebhookEndpoint_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "WebhookEndpoint_stuckThreshold_check" CHECK ("stuckThreshold" >= 1),
    CONSTRAINT "WebhookEndpoint_stuckIntervalSeconds_check" CHECK ("stuckIntervalSeconds" >= 0)
);
CREATE INDEX "WebhookEndpoint_projectId_createdAt_idx" ON "WebhookEndpoint"("projectId", "createdAt");
ALTER TABLE "WebhookEndpoint" ADD CONSTRAINT "WebhookEndpoint_projectId_fkey"
    FOREIGN KEY ("projectId") REFERENCES "Project"("id") ON DELETE CASCADE ON UPDATE CASCADE;

CREATE TABLE "WebhookMessage" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "projectId" UUID NOT NULL,
    "endpointId" UUID NOT NULL,
    "eventType" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "status" "WebhookStatus" NOT NULL DEFAULT 'PENDING',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "nextAttemptAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "leaseOwner" TEXT,
    "leaseExpiresAt" TIMESTAMPTZ(3),
    "lastResponseStatus" INTEGER,
    "lastError" TEXT,
    "lastLatencyMs" INTEGER,
    "deliveredAt" TIMESTAMPTZ(3),
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "WebhookMessage_pkey" PRIMARY KEY ("id")
);
-- The dispatcher's queue.
CREATE INDEX "WebhookMessage_dispatch_queue_idx" ON "WebhookMessage"("nextAttemptAt") WHERE "status" = 'PENDING';
-- An endpoint's delivery log, newest first.
CREATE INDEX "WebhookMessage_endpointId_createdAt_id_idx" ON "WebhookMessage"("endpointId", "createdAt" DESC, "id" DESC);
CREATE INDEX "WebhookMessage_projectId_idx" ON "WebhookMessage"("projectId");
ALTER TABLE "WebhookMessage" ADD CONSTRAINT "WebhookMessage_projectId_fkey"
    FOREIGN KEY ("projectId") REFERENCES "Project"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "WebhookMessage" ADD CONSTRAINT "WebhookMessage_endpointId_fkey"
    FOREIGN KEY ("endpointId") REFERENCES "WebhookEndpoint"("id") ON DELETE CASCADE ON UPDATE CASCADE;

CREATE TABLE "WebhookAttempt" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "messageId" UUID NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "responseStatus" INTEGER,
    "latencyMs" INTEGER NOT NULL,
    "responseExcerpt" TEXT,
    "error" TEXT,
    "dispatcher" TEXT NOT NULL,
    CONSTRAINT "WebhookAttempt_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "WebhookAttempt_messageId_at_idx" ON "WebhookAttempt"("messageId", "at");
ALTER TABLE "WebhookAttempt" ADD CONSTRAINT "WebhookAttempt_messageId_fkey"
    FOREIGN KEY ("messageId") REFERENCES "WebhookMessage"("id") ON DELETE CASCADE ON UPDATE CASCADE;

CREATE TABLE "WebhookStuckNotice" (
    "endpointId" UUID NOT NULL,
    "groupKey" TEXT NOT NULL,
    "lastCount" INTEGER NOT NULL,
    "lastNotifiedAt" TIMESTAMPTZ(3) NOT NULL,
    CONSTRAINT "WebhookStuckNotice_pkey" PRIMARY KEY ("endpointId", "groupKey")
);
ALTER TABLE "WebhookStuckNotice" ADD CONSTRAINT "WebhookStuckNotice_endpointId_fkey"
    FOREIGN KEY ("endpointId") REFERENCES "WebhookEndpoint"("id") ON DELETE CASCADE ON UPDATE CASCADE;
