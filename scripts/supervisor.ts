import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { processAlive } from '../server/embedded-postgres';

// The child processes of `npm start` (the web server and the workers): started with their
// output labelled, watched for unexpected exits, stopped in order on shutdown, and
// recorded in a run file so that the next start can stop any a killed run left behind.

export interface ChildExit {
  name: string;
  code: number | null;
  signal: NodeJS.Signals | null;
}

interface Supervised {
  name: string;
  process: ChildProcess;
  exited: Promise<ChildExit>;
}

/** A child as recorded in the run file: its pid and start time together tell it from a reused pid. */
interface RecordedChild {
  name: string;
  pid: number;
  startTime: string;
}

const LABEL_WIDTH = 9;

/** Field 22 of /proc/PID/stat: when the process started, in clock ticks since boot. */
function processStartTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses; fields resume after its last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

function processCwd(pid: number): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/cwd`);
  } catch {
    return undefined;
  }
}

/** Signal a process that may have exited in the meantime. */
function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

async function waitForExit(pid: number, ms: number): Promise<boolean> {
  for (const deadline = Date.now() + ms; Date.now() < deadline; ) {
    if (!processAlive(pid)) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return !processAlive(pid);
}

export class Supervisor {
  private readonly children = new Map<string, Supervised>();
  private stopping = false;

  constructor(
    /** Where this run records its children, e.g. .data/run-3000.json (one per web port). */
    private readonly runFile: string,
    private readonly cwd: string,
    private readonly log: (line: string) => void,
  ) {}

  /**
   * Stop the children a killed earlier run left behind (they outlive a SIGKILLed parent and
   * keep the web port). Only processes recorded in the run file that still have the same
   * start time and working directory are touched: never an unrelated process.
   */
  async stopOrphans(graceMs: number): Promise<void> {
    if (!existsSync(this.runFile)) return;
    let recorded: RecordedChild[] = [];
    try {
      recorded = JSON.parse(readFileSync(this.runFile, 'utf8')) as RecordedChild[];
    } catch {
      this.log(`ignoring an unreadable ${path.relative(this.cwd, this.runFile)}`);
    }
    const orphans = recorded.filter(
      (child) =>
        processAlive(child.pid) &&
        processStartTime(child.pid) === child.startTime &&
        processCwd(child.pid) === this.cwd,
    );
    for (const orphan of orphans) {
      this.log(`stopping ${orphan.name} (pid ${orphan.pid}) left running by an earlier run`);
      signal(orphan.pid, 'SIGTERM');
    }
    for (const orphan of orphans) {
      if (!(await waitForExit(orphan.pid, graceMs))) {
        signal(orphan.pid, 'SIGKILL');
        await waitForExit(orphan.pid, 5_000);
      }
    }
    rmSync(this.runFile, { force: true });
  }

  /** Start a child whose output is shown line by line under its name. */
  start(name: string, command: string, args: string[], env: NodeJS.ProcessEnv): Supervised {
    const child = spawn(command, args, { cwd: this.cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const label = `${name.padEnd(LABEL_WIDTH)}│ `;
    for (const stream of [child.stdout, child.stderr]) {
      readline.createInterface({ input: stream }).on('line', (line) => process.stdout.write(`${label}${line}\n`));
    }
    const exited = new Promise<ChildExit>((resolve) => {
      child.once('error', (error) => {
        this.log(`${name} could not be started: ${error.message}`);
        resolve({ name, code: 1, signal: null });
      });
      child.once('exit', (code, signal) => resolve({ name, code, signal }));
    });
    const supervised = { name, process: child, exited };
    this.children.set(name, supervised);
    void exited.then(() => this.children.delete(name));
    this.record();
    return supervised;
  }

  /** Resolves with the first child that exits while the run is not stopping. */
  firstUnexpectedExit(): Promise<ChildExit> {
    return Promise.race(
      [...this.children.values()].map((child) =>
        child.exited.then((exit) => (this.stopping ? new Promise<never>(() => {}) : exit)),
      ),
    );
  }

  /** SIGTERM every child, SIGKILL those still running after graceMs; forget the run file. */
  async stopAll(graceMs: number): Promise<void> {
    this.stopping = true;
    const running = [...this.children.values()];
    for (const child of running) child.process.kill('SIGTERM');
    await Promise.all(
      running.map(async (child) => {
        const timer = setTimeout(() => {
          this.log(`${child.name} did not stop within ${Math.round(graceMs / 1000)} s; killing it`);
          child.process.kill('SIGKILL');
        }, graceMs);
        await child.exited;
        clearTimeout(timer);
      }),
    );
    rmSync(this.runFile, { force: true });
  }

  /** Kill every child now (a second Ctrl-C). */
  killAll(): void {
    this.stopping = true;
    for (const child of this.children.values()) child.process.kill('SIGKILL');
  }

  private record(): void {
    const recorded: RecordedChild[] = [...this.children.values()].flatMap(({ name, process: child }) => {
      const startTime = child.pid ? processStartTime(child.pid) : undefined;
      return child.pid && startTime ? [{ name, pid: child.pid, startTime }] : [];
    });
    mkdirSync(path.dirname(this.runFile), { recursive: true });
    writeFileSync(this.runFile, `${JSON.stringify(recorded, null, 2)}\n`);
  }
}
