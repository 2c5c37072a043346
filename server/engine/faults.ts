// The one seam for fault injection: every WAYPOST_FAULT_* variable is read here and only
// here, once per process, and each hook is a no-op unless its variable is set. The drills
// (`npm run drill`, drill/) and the crash tests (test/reliability/, test/race/) set them
// in the environment of the worker processes they start; nothing in production does, and
// docs/operations.md does not list them as configuration.
//
// - WAYPOST_FAULT_PAUSE_AFTER_CLAIM_MS (with WAYPOST_FAULT_PAUSE_STEP_TYPE to name one step
//   type): hold a claimed step this long before running it, so a test can kill the worker
//   mid-step with the claim held.
// - WAYPOST_FAULT_CRASH_AFTER_WAIT_CLAIM=1: die (SIGKILL) right after the timer claimed
//   waits, before advancing past them (the continuation sweeper must re-drive them).
// - WAYPOST_FAULT_MAIL_CONTROL, WAYPOST_FAULT_MAIL_LEDGER, WAYPOST_FAULT_MAIL_WORKER: the
//   drill's mail provider (fault-transport.ts), wrapped around the worker's transport.

const env = process.env;

const pauseAfterClaimMs = Number(env.WAYPOST_FAULT_PAUSE_AFTER_CLAIM_MS ?? 0);
const pauseStepType = env.WAYPOST_FAULT_PAUSE_STEP_TYPE ?? null;
const crashAfterWaitClaim = env.WAYPOST_FAULT_CRASH_AFTER_WAIT_CLAIM === '1';

export const faults = {
  /** Hold a step of this type after claiming it (a no-op unless configured). */
  async afterStepClaim(stepType: string): Promise<void> {
    if (pauseAfterClaimMs > 0 && (!pauseStepType || pauseStepType === stepType)) {
      await new Promise((resolve) => setTimeout(resolve, pauseAfterClaimMs));
    }
  },
  /** Die here, once the timer claimed some waits (a no-op unless configured). */
  afterWaitClaim(claimed: number): void {
    if (crashAfterWaitClaim && claimed > 0) process.kill(process.pid, 'SIGKILL');
  },
  /** The drill's mail provider, when the drill asked for one: its control and ledger files. */
  mail: env.WAYPOST_FAULT_MAIL_CONTROL
    ? { controlFile: env.WAYPOST_FAULT_MAIL_CONTROL, ledgerFile: env.WAYPOST_FAULT_MAIL_LEDGER || null }
    : null,
  /** This worker's number among the drill's, for a mail fault that names some workers. */
  mailWorker: env.WAYPOST_FAULT_MAIL_WORKER ?? null,
} as const;
