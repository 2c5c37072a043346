// Turning claims into progress, by system: run-steps.ts (claimed steps and their
// outcomes), run-waits.ts (resolving waits, the timer), continuations.ts (advancing past
// a resolved wait, and re-driving those that never moved). Fault hooks for the drills live behind faults.ts. This
// module only gathers them for the worker loop, the API and the repairs.

export { driveExecution, processReadySteps, runClaimedStep, continueRunning, type StepRun } from './run-steps';
export { explainLostWait, processDueWaits, resolveWait, type ResumeResult } from './run-waits';
export { continueAfterWait, processPendingContinuations } from './continuations';
