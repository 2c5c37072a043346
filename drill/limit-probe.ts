// The topology drill's measure of a shared limit: one API key of its own sends half again
// as many calls as RATE_LIMIT_PER_KEY allows a minute, alternating strictly between the web
// processes, as fast as 16 callers can, inside one window. If each process counted in its
// own memory, the key would be allowed about the limit on each (twice it with two
// processes); counted in PostgreSQL, all of them together allow the limit once. The
// report holds what was allowed, by process, beside the configured figure.

const CALLERS = 16;
/** The limit's window is a minute from the key's first call: the probe must end well inside it. */
const WINDOW_BUDGET_MS = 50_000;
/** How far from the configured figure the allowed count may be (the bound). */
export const LIMIT_TOLERANCE = 0.1;

export interface LimitProbe {
  configured: number;
  sent: number;
  allowed: number;
  limited: number;
  /** Answers other than 2xx and 429 (network errors included). */
  other: Record<string, number>;
  byProcess: { base: string; allowed: number; limited: number }[];
  seconds: number;
  /** allowed / configured. */
  ratio: number;
  withinTolerance: boolean;
  /** False when the probe did not end inside one window, which would make its count meaningless. */
  insideOneWindow: boolean;
}

export async function probePerKeyLimit(o: { upstreams: string[]; key: string; limit: number }): Promise<LimitProbe> {
  const total = Math.ceil(o.limit * 1.5);
  const byProcess = o.upstreams.map((base) => ({ base, allowed: 0, limited: 0 }));
  const other: Record<string, number> = {};
  let next = 0;
  const t0 = Date.now();
  const caller = async () => {
    for (;;) {
      const n = next++;
      if (n >= total || Date.now() - t0 > WINDOW_BUDGET_MS) return;
      const target = byProcess[n % byProcess.length]!;
      try {
        const res = await fetch(`${target.base}/api/v1/workflows?limit=1`, {
          headers: { authorization: `Bearer ${o.key}` },
          signal: AbortSignal.timeout(10_000),
        });
        await res.arrayBuffer();
        if (res.status >= 200 && res.status < 300) target.allowed++;
        else if (res.status === 429) target.limited++;
        else other[`HTTP ${res.status}`] = (other[`HTTP ${res.status}`] ?? 0) + 1;
      } catch (error) {
        const e = error as Error & { cause?: { code?: string } };
        const k = e.cause?.code ?? e.name;
        other[k] = (other[k] ?? 0) + 1;
      }
    }
  };
  await Promise.all(Array.from({ length: CALLERS }, caller));
  const ms = Date.now() - t0;
  const allowed = byProcess.reduce((s, p) => s + p.allowed, 0);
  const ratio = allowed / o.limit;
  return {
    configured: o.limit,
    sent: Math.min(next, total),
    allowed,
    limited: byProcess.reduce((s, p) => s + p.limited, 0),
    other,
    byProcess,
    seconds: Math.round(ms / 100) / 10,
    ratio: Math.round(ratio * 1000) / 1000,
    withinTolerance: Math.abs(ratio - 1) <= LIMIT_TOLERANCE,
    insideOneWindow: ms <= WINDOW_BUDGET_MS && next >= total,
  };
}
