import { randomUUID } from 'node:crypto';
import { preparedRaw, type RawDb } from '../db';
import { logTransport, type MailTransport } from './transport';

// What every engine operation needs: a database, the tunables, who is acting (for
// leases and logs) and where mail goes. Built once per process. A client of its own
// (createDb's) sends the claims' SQL as named prepared statements (server/db/prepared.ts,
// preparedRaw); a caller's transaction is used as it is.

export interface EngineConfig {
  leaseSeconds: number;
  /**
   * How long a sender renews the leases of emails its transport has not answered for.
   * Past it the lease lapses: the email is MESSAGE_UNCONFIRMED, for an operator.
   */
  sendTimeoutSeconds: number;
  /** Attempts of a failing step before the execution becomes FAILED. */
  maxStepAttempts: number;
  /** Attempts of a failing event dispatch before it is dead-lettered. */
  eventMaxAttempts: number;
  /** A wait resolved this long ago but not advanced is re-driven by the sweeper. */
  continuationGraceSeconds: number;
  /** How long a freshly tracked event is left to its inline dispatch before the sweeper may take it. */
  inlineDispatchSeconds: number;
  /** Steps a worker runs back to back for one execution before yielding to the queue. */
  maxChain: number;
}

export const DEFAULT_ENGINE_CONFIG: EngineConfig = {
  leaseSeconds: 30,
  sendTimeoutSeconds: 120,
  maxStepAttempts: 3,
  eventMaxAttempts: 8,
  continuationGraceSeconds: 5,
  inlineDispatchSeconds: 5,
  maxChain: 25,
};

export interface EngineContext {
  db: RawDb;
  config: EngineConfig;
  /** Lease owner name: `worker:<host>:<pid>:<n>` or `api:<pid>`. */
  owner: string;
  transport: MailTransport;
  log: (level: 'debug' | 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
}

export function createEngineContext(
  db: RawDb,
  overrides: Partial<Omit<EngineContext, 'db' | 'config'>> & { config?: Partial<EngineConfig> } = {},
): EngineContext {
  return {
    db: preparedRaw(db),
    config: { ...DEFAULT_ENGINE_CONFIG, ...overrides.config },
    owner: overrides.owner ?? `engine:${process.pid}:${randomUUID().slice(0, 8)}`,
    transport: overrides.transport ?? logTransport(() => {}),
    log: overrides.log ?? (() => {}),
  };
}
