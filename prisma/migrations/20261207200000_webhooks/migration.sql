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

-- ---------------------------------------------------------------------------
-- The outbox triggers. Each fires only on its transition (the WHEN condition is checked
-- before the function is called), and its function first asks whether any enabled
-- endpoint of the project takes the type (one probe of WebhookEndpoint's projectId
-- index): no endpoint, no further work and no row. Otherwise one message row per such
-- endpoint, `{type, timestamp, data}` with ids and names only (never a contact's email or
-- data). Shapes: server/common/webhook-events.ts. Each statement is named, as the
-- product's statements are (test/sql-names.test.ts).

-- Whether an enabled endpoint of the project takes this event type.
CREATE FUNCTION webhook_subscribed(project UUID, event_type TEXT) RETURNS BOOLEAN
LANGUAGE sql STABLE AS $$
  -- webhook_subscribed
  SELECT EXISTS (
    SELECT 1 FROM "WebhookEndpoint"
     WHERE "projectId" = project AND enabled AND event_type = ANY("eventTypes"))
$$;

-- One message per enabled endpoint of the project subscribed to the type.
CREATE FUNCTION webhook_enqueue(project UUID, event_type TEXT, data JSONB) RETURNS VOID
LANGUAGE sql VOLATILE AS $$
  -- webhook_enqueue
  INSERT INTO "WebhookMessage" ("projectId", "endpointId", "eventType", payload)
  SELECT project, e.id, event_type,
         jsonb_build_object('type', event_type,
                            'timestamp', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                            'data', data)
    FROM "WebhookEndpoint" e
   WHERE e."projectId" = project AND e.enabled AND event_type = ANY(e."eventTypes")
$$;

-- execution.failed: a WorkflowExecution becomes FAILED.
CREATE FUNCTION webhook_execution_failed() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
  IF NOT webhook_subscribed(NEW."projectId", 'execution.failed') THEN RETURN NULL; END IF;
  PERFORM webhook_enqueue(NEW."projectId", 'execution.failed', (
    -- webhook_execution_failed.data
    SELECT jsonb_build_object(
             'executionId', NEW.id, 'workflowId', NEW."workflowId", 'workflowName', w.name,
             'workflowVersion', v.number, 'contactId', NEW."contactId",
             'stepKey', s.key, 'error', NEW."lastError")
      FROM "Workflow" w
      LEFT JOIN "WorkflowVersion" v ON v.id = NEW."workflowVersionId"
      LEFT JOIN "WorkflowStep" s ON s.id = NEW."currentStepId"
     WHERE w.id = NEW."workflowId"));
  RETURN NULL;
END
$$;
CREATE TRIGGER "WorkflowExecution_webhook_failed"
  AFTER UPDATE OF status ON "WorkflowExecution"
  FOR EACH ROW WHEN (NEW.status = 'FAILED' AND OLD.status IS DISTINCT FROM 'FAILED')
  EXECUTE FUNCTION webhook_execution_failed();

-- message.failed: an email (the Message outbox row) becomes FAILED.
CREATE FUNCTION webhook_message_failed() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
  IF NOT webhook_subscribed(NEW."projectId", 'message.failed') THEN RETURN NULL; END IF;
  PERFORM webhook_enqueue(NEW."projectId", 'message.failed', (
    -- webhook_message_failed.data
    SELECT jsonb_build_object(
             'messageId', NEW.id, 'executionId', NEW."executionId", 'workflowId', x."workflowId",
             'workflowName', w.name, 'contactId', x."contactId", 'stepKey', s.key, 'error', NEW.error)
      FROM "WorkflowExecution" x
      JOIN "Workflow" w ON w.id = x."workflowId"
      LEFT JOIN "StepExecution" se ON se.id = NEW."stepExecutionId"
      LEFT JOIN "WorkflowStep" s ON s.id = se."stepId"
     WHERE x.id = NEW."executionId"));
  RETURN NULL;
END
$$;
CREATE TRIGGER "Message_webhook_failed"
  AFTER UPDATE OF status ON "Message"
  FOR EACH ROW WHEN (NEW.status = 'FAILED' AND OLD.status IS DISTINCT FROM 'FAILED')
  EXECUTE FUNCTION webhook_message_failed();

-- event.dead: the outbox sweeper dead-letters a tracked event (deadAt set).
CREATE FUNCTION webhook_event_dead() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
  IF NOT webhook_subscribed(NEW."projectId", 'event.dead') THEN RETURN NULL; END IF;
  PERFORM webhook_enqueue(NEW."projectId", 'event.dead', jsonb_build_object(
    'eventId', NEW.id, 'eventName', NEW.name, 'contactId', NEW."contactId",
    'attempts', NEW."dispatchAttempts", 'error', NEW."lastError"));
  RETURN NULL;
END
$$;
CREATE TRIGGER "Event_webhook_dead"
  AFTER UPDATE OF "deadAt" ON "Event"
  FOR EACH ROW WHEN (NEW."deadAt" IS NOT NULL AND OLD."deadAt" IS NULL)
  EXECUTE FUNCTION webhook_event_dead();

-- repair.applied and workflow.published: an audit entry of an applied repair (one per
-- target; a bulk run's summary "repair.applyMany" is not one) or of a publish.
CREATE FUNCTION webhook_audit_applied() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.action = 'workflows.publish' THEN
    IF NOT webhook_subscribed(NEW."projectId", 'workflow.published') THEN RETURN NULL; END IF;
    PERFORM webhook_enqueue(NEW."projectId", 'workflow.published', (
      -- webhook_audit_applied.published
      SELECT jsonb_build_object(
               'auditId', NEW.id, 'workflowId', NEW."targetId", 'workflowName', w.name,
               'version', (NEW.after->>'version')::int, 'actor', NEW.actor)
        FROM "Workflow" w WHERE w.id::text = NEW."targetId"));
  ELSE
    IF NOT webhook_subscribed(NEW."projectId", 'repair.applied') THEN RETURN NULL; END IF;
    PERFORM webhook_enqueue(NEW."projectId", 'repair.applied', jsonb_build_object(
      'auditId', NEW.id, 'action', NEW.action, 'targetType', NEW."targetType",
      'targetId', NEW."targetId", 'actor', NEW.actor, 'reason', NEW.reason));
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER "AuditEntry_webhook_applied"
  AFTER INSERT ON "AuditEntry"
  FOR EACH ROW WHEN (NEW.outcome = 'APPLIED' AND (NEW.action = 'workflows.publish'
                     OR (NEW.action LIKE 'repair.%' AND NEW.action <> 'repair.applyMany')))
  EXECUTE FUNCTION webhook_audit_applied();
