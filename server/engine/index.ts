// The engine's public surface, usable with no web server: tests, the CLI, the worker
// and the tRPC layer all come through here.
export { createEngineContext, DEFAULT_ENGINE_CONFIG, type EngineConfig, type EngineContext } from './context';
export { createWorkflow, loadWorkflowGraph, WorkflowDefinitionError } from './workflows';
export { workflowInput, stepConfigSchemas, graphIssues, type WorkflowInput } from './definition';
export { enroll, type EnrollInput, type EnrollResult, type EnrollRejection } from './enrollment';
export { upsertContact, findContactByEmail } from './contacts';
export { trackEvent, storeEvent, dispatchEvent, processDueEvents, type TrackEventInput, type TrackEventResult } from './events';
export { resolveWait, continueAfterWait, type ResumeResult } from './runner';
export { runWorkerOnce, runPass, Worker, type PassCounts, type WorkerOptions } from './worker';
export { deliverQueuedMessages } from './sender';
export { logTransport, smtpTransport, type MailTransport } from './transport';
export { notifyWorkers, WAKEUP_CHANNEL } from './wakeup';
export { checkInvariants, totalViolations, INVARIANTS, type InvariantResult } from './invariants';
export { writeAudit, type AuditInput, type AuditOutcome } from './audit';
export { enrollBatch, type EnrollRow } from './enrollment';
