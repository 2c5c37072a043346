import { countClaimLost, type LosableClaim } from '../../metrics/counts';

// What every claim answers: it won (with what it changed), or it lost (with the row as it
// is now, for the caller to explain). Its own module, so the claim files need not import
// the folder's index, which re-exports them.

export type Lost<C> = { won: false; current: C };
export type Won<T> = { won: true } & T;

/** A claim's Lost answer, counted for /metrics (waypost_claim_conflicts_total) as it is made. */
export function lost<C>(claim: LosableClaim, current: C): Lost<C> {
  countClaimLost(claim);
  return { won: false, current };
}
