// The drill's load balancer: what a team puts in front of several web processes, reduced
// to what matters to the drill. Each request goes to the next web process, round robin,
// among those whose `/readyz` answered 200 at the last check (every 250 ms, as a
// balancer's health check would); a process killed mid-run stops getting new requests once
// a check has seen it gone, and gets them again once it answers ready. The requests that
// reach a process as it dies fail as they would behind a real balancer: the client is told
// an error and does not know the outcome, which the drill's checks allow for.

const CHECK_EVERY_MS = 250;

export class Balancer {
  private readonly ready: boolean[];
  private turn = 0;
  private timer: NodeJS.Timeout | null = null;
  /** Requests sent to each upstream, by index. */
  readonly sent: number[];

  constructor(readonly upstreams: string[]) {
    this.ready = upstreams.map(() => true);
    this.sent = upstreams.map(() => 0);
  }

  /** The base URL for the next request. With none ready, every upstream takes its turn (the request then fails honestly). */
  next(): string {
    const n = this.upstreams.length;
    for (let tried = 0; tried < n; tried++) {
      const i = this.turn++ % n;
      if (this.ready[i]) return this.pick(i);
    }
    return this.pick(this.turn++ % n);
  }

  private pick(i: number): string {
    this.sent[i]!++;
    return this.upstreams[i]!;
  }

  start(): void {
    if (this.upstreams.length < 2 || this.timer) return;
    const check = async () => {
      await Promise.all(
        this.upstreams.map(async (base, i) => {
          try {
            const res = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(CHECK_EVERY_MS * 4) });
            await res.arrayBuffer();
            this.ready[i] = res.status === 200;
          } catch {
            this.ready[i] = false;
          }
        }),
      );
      if (this.timer) this.timer = setTimeout(() => void check(), CHECK_EVERY_MS);
    };
    this.timer = setTimeout(() => void check(), CHECK_EVERY_MS);
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
