// The drill's seeded randomness and its fault schedule: the same --seed and duration give
// the same schedule, printed before the run starts (the clients' timing still varies).

export class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0 || 1;
  }
  /** mulberry32: a small, well-mixed 32-bit generator. */
  next(): number {
    this.s = (this.s + 0x6d2b79f5) >>> 0;
    let t = this.s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }
}

export const FAULT_KINDS = ['worker-kill', 'worker-pause', 'postgres-restart', 'pool-exhaust', 'web-kill', 'mail-fail', 'mail-hang'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface Fault {
  /** Seconds after the clients start. */
  at: number;
  kind: FaultKind;
  /** How long the fault lasts, in seconds (0: an instant, such as a kill). */
  seconds: number;
  /** Which worker, for worker faults. */
  worker?: number;
}

export function faultSchedule(opts: { seed: number; duration: number; workers: number; leaseSeconds: number; ownsPostgres: boolean; only?: FaultKind }): Fault[] {
  if (opts.only) return singleFaultSchedule({ ...opts, only: opts.only });
  const rng = new Rng(opts.seed ^ 0x5eed);
  const d = opts.duration;
  // The one-off faults get slots of their own (none overlaps another's effect: a pause
  // whose worker wakes into a PostgreSQL restart proves nothing); the kills go on throughout.
  const faults: Fault[] = [];
  // A worker SIGKILLed every 4-8 s, restarted at once (not the one the pauses stop, so
  // that one is running, not starting up, when it is stopped).
  const killable = opts.workers - 1;
  for (let t = 3 + rng.int(0, 3); t < d - 2; t += rng.int(4, 8)) faults.push({ at: t, kind: 'worker-kill', seconds: 0, worker: rng.int(0, killable - 1) });
  // The last worker stopped past its lease, then continued (twice in a long run). It is
  // the one that holds its claimed DELAY steps a while (run.ts), so the stop lands
  // between a claim and its completion: it wakes holding claims others have re-taken.
  const pauses = d >= 90 ? [0.33, 0.72] : [0.33];
  for (const f of pauses) faults.push({ at: Math.round(d * f), kind: 'worker-pause', seconds: opts.leaseSeconds + 6, worker: opts.workers - 1 });
  if (opts.ownsPostgres) faults.push({ at: Math.round(d * 0.5), kind: 'postgres-restart', seconds: 2 });
  faults.push({ at: Math.round(d * 0.2), kind: 'pool-exhaust', seconds: 5 });
  faults.push({ at: Math.round(d * 0.62), kind: 'web-kill', seconds: 0 });
  faults.push({ at: Math.round(d * 0.08), kind: 'mail-fail', seconds: 6 });
  const hang: Fault = { at: Math.round(d * 0.84), kind: 'mail-hang', seconds: opts.leaseSeconds + 4 };
  faults.push(hang);
  // A hung worker killed while the provider has its emails and it does not know yet (the
  // hang's second half): MESSAGE_UNCONFIRMED that the provider has, for MARK_SENT.
  faults.push({ at: hang.at + Math.ceil(hang.seconds * 0.75), kind: 'worker-kill', seconds: 0, worker: 0 });
  return faults.sort((a, b) => a.at - b.at || a.kind.localeCompare(b.kind));
}

/**
 * One kind of fault alone (`--only KIND`), for showing that a guard matters against that
 * fault and no other: the kind three times over the run (worker kills at their usual
 * pace), nothing else. A mail hang keeps its kill of a hung worker, which is part of it.
 */
function singleFaultSchedule(opts: { seed: number; duration: number; workers: number; leaseSeconds: number; ownsPostgres: boolean; only: FaultKind }): Fault[] {
  const rng = new Rng(opts.seed ^ 0x5eed);
  const d = opts.duration;
  const kind = opts.only;
  if (kind === 'postgres-restart' && !opts.ownsPostgres) throw new Error('--only postgres-restart needs the drill to own its PostgreSQL (unset DRILL_DATABASE_URL)');
  const faults: Fault[] = [];
  if (kind === 'worker-kill') {
    for (let t = 3 + rng.int(0, 3); t < d - 2; t += rng.int(4, 8)) faults.push({ at: t, kind, seconds: 0, worker: rng.int(0, opts.workers - 2) });
    return faults;
  }
  const seconds: Record<Exclude<FaultKind, 'worker-kill'>, number> = {
    'worker-pause': opts.leaseSeconds + 6,
    'postgres-restart': 2,
    'pool-exhaust': 5,
    'web-kill': 0,
    'mail-fail': 6,
    'mail-hang': opts.leaseSeconds + 4,
  };
  for (const f of [0.2, 0.45, 0.7]) {
    const fault: Fault = { at: Math.round(d * f), kind, seconds: seconds[kind] };
    if (kind === 'worker-pause') fault.worker = opts.workers - 1;
    faults.push(fault);
    if (kind === 'mail-hang') faults.push({ at: fault.at + Math.ceil(fault.seconds * 0.75), kind: 'worker-kill', seconds: 0, worker: 0 });
  }
  return faults.sort((a, b) => a.at - b.at || a.kind.localeCompare(b.kind));
}

export function describeFault(f: Fault): string {
  const who = f.worker !== undefined ? ` worker-${f.worker}` : '';
  const span = f.seconds > 0 ? ` for ${f.seconds} s` : '';
  return `t+${String(f.at).padStart(3)} s  ${f.kind}${who}${span}`;
}
