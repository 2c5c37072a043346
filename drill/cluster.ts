import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { portInUse, processAlive, startEmbeddedPostgres, type EmbeddedDatabase } from '../server/embedded-postgres';
import { stopEmbeddedPostgres } from '../scripts/database';
import { Balancer } from './balancer';

// The processes a drill runs and hurts: its own PostgreSQL (when it owns one), the real
// web server (scripts/web.ts on the production build) and the worker processes
// (scripts/worker.ts). A process the drill kills is started again by the drill; one that
// dies on its own is restarted too and counted, so a crash is never hidden.

export const ROOT = path.resolve(import.meta.dirname, '..');

/** The first port from `from` up to `to` that nothing listens on (the drill's own range). */
export async function portInRange(from: number, to: number, taken: Set<number> = new Set()): Promise<number> {
  for (let p = from; p <= to; p++) {
    if (taken.has(p)) continue;
    if (!(await portInUse(p))) return p;
  }
  throw new Error(`no free port in ${from}-${to}`);
}

export interface Proc {
  name: string;
  child: ChildProcess;
  exited: Promise<void>;
  /** Set when the drill itself killed it (so its exit is expected). */
  killedByDrill: boolean;
  log(): string;
}

function spawnProc(name: string, script: string, args: string[], env: Record<string, string>): Proc {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'scripts', script), ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const collect = (c: Buffer) => {
    out = (out + c.toString()).slice(-20_000);
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return { name, child, exited, killedByDrill: false, log: () => out };
}

export function alive(p: Proc): boolean {
  return p.child.exitCode === null && p.child.signalCode === null;
}

export interface ClusterOptions {
  /** The URL every child connects through (PostgreSQL's own, or PgBouncer's in the topology mode). */
  databaseUrl: string;
  /** One web process per port, behind the drill's balancer (balancer.ts). */
  webPorts: number[];
  workers: number;
  /** The API calls a minute one key may make (RATE_LIMIT_PER_KEY); 0: no limit. */
  perKeyLimit?: number;
  /** The env every child gets (lease, grace, fault-transport files...). */
  env: Record<string, string>;
  /** More env for one worker, by index (kept across its restarts). */
  workerEnv?: Record<number, Record<string, string>>;
  log: (line: string) => void;
}

export class Cluster {
  webs: (Proc | null)[] = [];
  workers: (Proc | null)[] = [];
  /** Exits the drill did not cause, by process name. */
  unexpectedExits: { name: string; code: number | null; signal: string | null; tail: string }[] = [];
  private stopping = false;
  private readonly authSecret = randomBytes(32).toString('base64url');

  readonly balancer: Balancer;

  constructor(private readonly opts: ClusterOptions) {
    this.balancer = new Balancer(opts.webPorts.map((port) => `http://127.0.0.1:${port}`));
  }

  /** Where the next request goes: the balancer's next ready web process. */
  get base(): string {
    return this.balancer.next();
  }

  /** The first web process (the one a single-web drill has). */
  get web(): Proc | null {
    return this.webs[0] ?? null;
  }

  private watch(p: Proc, restart: () => void): void {
    void p.exited.then(() => {
      if (this.stopping || p.killedByDrill) return;
      this.unexpectedExits.push({ name: p.name, code: p.child.exitCode, signal: p.child.signalCode, tail: p.log().slice(-800) });
      this.opts.log(`${p.name} exited by itself (${p.child.exitCode ?? p.child.signalCode}); restarting it`);
      setTimeout(restart, 500);
    });
  }

  startWorker(i: number): Proc {
    const p = spawnProc(`worker-${i}`, 'worker.ts', [], { ...this.opts.env, ...this.opts.workerEnv?.[i], WAYPOST_FAULT_MAIL_WORKER: String(i), DATABASE_URL: this.opts.databaseUrl });
    this.workers[i] = p;
    this.watch(p, () => {
      if (this.workers[i] === p) this.startWorker(i);
    });
    return p;
  }

  startWeb(i = 0): Proc {
    const name = this.opts.webPorts.length > 1 ? `web-${i}` : 'web';
    const p = spawnProc(name, 'web.ts', [], {
      ...this.opts.env,
      NODE_ENV: 'production',
      DATABASE_URL: this.opts.databaseUrl,
      PORT: String(this.opts.webPorts[i]),
      HOSTNAME: '127.0.0.1',
      TRUSTED_PROXIES: '',
      AUTH_SECRET: this.authSecret,
      RATE_LIMIT_PER_KEY: String(this.opts.perKeyLimit ?? 0),
      RATE_LIMIT_PER_SESSION: '0',
      RATE_LIMIT_PER_ADDRESS: '0',
    });
    this.webs[i] = p;
    this.watch(p, () => {
      if (this.webs[i] === p) this.startWeb(i);
    });
    return p;
  }

  /** Until web process `i` (every one, unset) answers the API. */
  async untilServing(i?: number, ms = 120_000): Promise<void> {
    const indexes = i === undefined ? this.opts.webPorts.map((_, n) => n) : [i];
    const deadline = Date.now() + ms;
    for (const n of indexes) {
      const base = `http://127.0.0.1:${this.opts.webPorts[n]}`;
      for (;;) {
        try {
          if ((await fetch(`${base}/api/v1/openapi.json`, { signal: AbortSignal.timeout(5_000) })).status === 200) break;
        } catch {
          // not listening yet
        }
        if (Date.now() > deadline) throw new Error(`web process ${n} did not answer in ${ms} ms:\n${this.webs[n]?.log() ?? ''}`);
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  }

  async start(): Promise<void> {
    this.opts.webPorts.forEach((_, i) => this.startWeb(i));
    for (let i = 0; i < this.opts.workers; i++) this.startWorker(i);
    await this.untilServing();
    this.balancer.start();
  }

  /** SIGKILL a process the drill then restarts (the watcher ignores this exit). */
  async kill(p: Proc, restart: () => Proc): Promise<Proc> {
    p.killedByDrill = true;
    if (alive(p)) p.child.kill('SIGKILL');
    await p.exited;
    return restart();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.balancer.stop();
    const all = [...this.webs, ...this.workers].filter((p): p is Proc => p !== null);
    for (const p of all) {
      if (!alive(p)) continue;
      if (p.child.signalCode === null) p.child.kill('SIGCONT');
      p.child.kill('SIGTERM');
    }
    await Promise.race([Promise.all(all.map((p) => p.exited)), new Promise((r) => setTimeout(r, 15_000))]);
    for (const p of all) if (alive(p)) p.child.kill('SIGKILL');
    await Promise.all(all.map((p) => p.exited));
  }
}

/** The drill's own PostgreSQL: a persistent data directory, so it can be crashed and started again. */
export class OwnedPostgres {
  constructor(
    public server: EmbeddedDatabase,
    private readonly log: (line: string) => void,
  ) {}

  /** Connection refusals the server logged (too many clients, starting up, shutting down), counted rather than printed. */
  refusals = 0;

  static async start(dataDir: string, port: number, log: (line: string) => void): Promise<OwnedPostgres> {
    let self: OwnedPostgres | null = null;
    const filtered = (line: string) => {
      if (/too many clients|not yet accepting connections|Consistent recovery state|is starting up|is shutting down|in recovery mode/.test(line)) {
        if (self) self.refusals++;
        return;
      }
      log(line);
    };
    self = new OwnedPostgres(await startEmbeddedPostgres({ dataDir, port, log: filtered }), filtered);
    return self;
  }

  /**
   * A crash, not a polite stop: SIGQUIT is PostgreSQL's immediate shutdown (no
   * checkpoint, every backend dropped), so the next start runs crash recovery from the
   * WAL. Returns how long it was down.
   */
  async crashAndRestart(downMs: number): Promise<number> {
    const t0 = Date.now();
    const pidFile = path.join(this.server.dataDir, 'postmaster.pid');
    const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').split('\n')[0]) : NaN;
    if (!Number.isInteger(pid) || !processAlive(pid)) throw new Error('the drill PostgreSQL is not running');
    process.kill(pid, 'SIGQUIT');
    while (processAlive(pid)) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, downMs));
    this.server = await startEmbeddedPostgres({ dataDir: this.server.dataDir, port: this.server.port, log: this.log });
    return Date.now() - t0;
  }

  async stop(): Promise<void> {
    await stopEmbeddedPostgres(this.server);
  }
}
