import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

// Whether the production build in .next is older than what it is built from: `npm start`
// rebuilds then (after a pull it would otherwise serve yesterday's console), and so do the
// tests and the bench that run the real web server.

/** What a build depends on: if any is newer than .next/BUILD_ID, the build is stale. */
const BUILD_INPUTS = ['app', 'server', 'public', 'proxy.ts', 'next.config.ts', 'package-lock.json', 'tsconfig.json', 'postcss.config.mjs'];

function newestMtime(entry: string): number {
  if (!existsSync(entry)) return 0;
  const stat = statSync(entry);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const child of readdirSync(entry)) newest = Math.max(newest, newestMtime(path.join(entry, child)));
  return newest;
}

/** Why the build under `root` must be made again (a phrase for a log line), or null when it is current. */
export function staleBuild(root: string): string | null {
  const buildId = path.join(root, '.next', 'BUILD_ID');
  if (!existsSync(buildId)) return 'no build in .next yet';
  const sources = Math.max(...BUILD_INPUTS.map((p) => newestMtime(path.join(root, p))));
  return statSync(buildId).mtimeMs > sources ? null : 'the build in .next is older than the sources';
}

/** Blocks this thread (a build is synchronous anyway) without spinning. */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** A lock older than this is a killed builder's: taken over. A build here takes minutes, never this long. */
const ABANDONED_LOCK_MS = 30 * 60_000;

/**
 * Build under `root` unless the build there is current (for tests and the bench, which run
 * the real server). Test files run in parallel: the first to find the build stale takes a
 * lock directory (mkdir is atomic) and builds; the others wait for it and then find the
 * build current. Two `next build`s into one .next at once break each other.
 */
export function ensureBuild(log: (line: string) => void = console.log, root = path.resolve(import.meta.dirname, '..')): void {
  const lock = path.join(root, '.next-build.lock');
  let waited = false;
  for (;;) {
    if (!staleBuild(root)) return;
    try {
      mkdirSync(lock);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const held = statSync(lock, { throwIfNoEntry: false });
      if (held && Date.now() - held.mtimeMs > ABANDONED_LOCK_MS) rmSync(lock, { recursive: true, force: true });
      if (!waited) log('another process is building .next; waiting for it');
      waited = true;
      sleepSync(1_000);
    }
  }
  try {
    const stale = staleBuild(root);
    if (!stale) return;
    log(`${stale}: running next build`);
    const nextCli = createRequire(import.meta.url).resolve('next/dist/bin/next');
    const build = spawnSync(process.execPath, [nextCli, 'build'], { cwd: root, stdio: 'inherit', env: { ...process.env, NODE_ENV: 'production' } });
    if (build.status !== 0) throw new Error(`next build failed (exit ${build.status ?? build.signal})`);
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}
